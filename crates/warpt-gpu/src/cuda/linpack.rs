//! HPL's fp64 solve on the GPU: cuSOLVER's LU with partial pivoting
//! (`getrf`) and triangular solves (`getrs`) of HPL's random system.
//!
//! Each sample uploads the matrix (untimed: the factorisation overwrites
//! it), then times `getrf` + `getrs` to their completion. GFLOP/s counts as
//! HPL counts, 2/3 N³ + 3/2 N²; the answer passes HPL's scaled residual
//! test, `‖Ax − b‖∞ / (ε (‖A‖∞ ‖x‖∞ + ‖b‖∞) N) < 16`, computed on the host.

use std::time::Instant;

use cudarc::cusolver::{DnHandle, sys as solver};
use cudarc::driver::{DevicePtr, DevicePtrMut};
use faer::Col;
use warpt_harness::BenchmarkError;
use warpt_linpack::hpl;

use super::{Cuda, failed};

/// A prepared system and the device buffers that solve it.
pub struct System {
    n: usize,
    a_host: faer::Mat<f64>,
    b_host: Col<f64>,
    a_cols: Vec<f64>,
    b_vec: Vec<f64>,
    handle: DnHandle,
    a: cudarc::driver::CudaSlice<f64>,
    b: cudarc::driver::CudaSlice<f64>,
    work: cudarc::driver::CudaSlice<f64>,
    ipiv: cudarc::driver::CudaSlice<i32>,
    info: cudarc::driver::CudaSlice<i32>,
}

impl System {
    /// HPL's system of order `n` from `seed`, with its device buffers.
    pub fn new(cuda: &Cuda, n: usize, seed: u64) -> Result<System, BenchmarkError> {
        let (a_host, b_host) = hpl::system(n, seed);
        let a_cols: Vec<f64> = (0..n * n).map(|x| a_host[(x % n, x / n)]).collect();
        let b_vec: Vec<f64> = (0..n).map(|i| b_host[i]).collect();
        let s = &cuda.stream;
        let handle =
            DnHandle::new(s.clone()).map_err(|e| failed("creating a cuSOLVER handle", e))?;
        let mut a = s.clone_htod(&a_cols).map_err(|e| failed("copying A", e))?;
        let b = s.clone_htod(&b_vec).map_err(|e| failed("copying b", e))?;
        let mut lwork = 0i32;
        {
            let (pa, _sync) = a.device_ptr_mut(s);
            // SAFETY: A is an n×n device matrix with leading dimension n.
            unsafe {
                solver::cusolverDnDgetrf_bufferSize(
                    handle.cu(),
                    n as i32,
                    n as i32,
                    pa as *mut f64,
                    n as i32,
                    &mut lwork,
                )
            }
            .result()
            .map_err(|e| failed("sizing getrf's workspace", e))?;
        }
        let work = s
            .alloc_zeros::<f64>(lwork.max(1) as usize)
            .map_err(|e| failed("allocating the workspace", e))?;
        let ipiv = s
            .alloc_zeros::<i32>(n)
            .map_err(|e| failed("allocating pivots", e))?;
        let info = s
            .alloc_zeros::<i32>(1)
            .map_err(|e| failed("allocating info", e))?;
        cuda.sample_memory();
        Ok(System {
            n,
            a_host,
            b_host,
            a_cols,
            b_vec,
            handle,
            a,
            b,
            work,
            ipiv,
            info,
        })
    }

    /// Uploads the system, then factors and solves it: the seconds of the
    /// factorisation and solve.
    pub fn solve(&mut self, cuda: &Cuda) -> Result<f64, BenchmarkError> {
        let s = &cuda.stream;
        let n = self.n as i32;
        s.memcpy_htod(&self.a_cols, &mut self.a)
            .map_err(|e| failed("copying A", e))?;
        s.memcpy_htod(&self.b_vec, &mut self.b)
            .map_err(|e| failed("copying b", e))?;
        cuda.sync()?;
        let start = Instant::now();
        {
            let (pa, _a) = self.a.device_ptr_mut(s);
            let (pw, _w) = self.work.device_ptr_mut(s);
            let (pi, _i) = self.ipiv.device_ptr_mut(s);
            let (pinfo, _f) = self.info.device_ptr_mut(s);
            // SAFETY: every pointer is a live device buffer of the size
            // cuSOLVER asked for (A n×n, workspace lwork, pivots n, info 1).
            unsafe {
                solver::cusolverDnDgetrf(
                    self.handle.cu(),
                    n,
                    n,
                    pa as *mut f64,
                    n,
                    pw as *mut f64,
                    pi as *mut i32,
                    pinfo as *mut i32,
                )
            }
            .result()
            .map_err(|e| failed("getrf", e))?;
        }
        {
            let (pa, _a) = self.a.device_ptr(s);
            let (pi, _i) = self.ipiv.device_ptr(s);
            let (pb, _b) = self.b.device_ptr_mut(s);
            let (pinfo, _f) = self.info.device_ptr_mut(s);
            // SAFETY: A holds getrf's factors, the pivots its n pivots, b n values.
            unsafe {
                solver::cusolverDnDgetrs(
                    self.handle.cu(),
                    solver::cublasOperation_t::CUBLAS_OP_N,
                    n,
                    1,
                    pa as *const f64,
                    n,
                    pi as *const i32,
                    pb as *mut f64,
                    n,
                    pinfo as *mut i32,
                )
            }
            .result()
            .map_err(|e| failed("getrs", e))?;
        }
        cuda.sync()?;
        let seconds = start.elapsed().as_secs_f64();
        let info: Vec<i32> = s
            .clone_dtoh(&self.info)
            .map_err(|e| failed("reading info", e))?;
        if info.first().copied().unwrap_or(0) != 0 {
            return Err(BenchmarkError::Failed(format!(
                "cuSOLVER reports info = {} (a zero pivot: the matrix is singular)",
                info[0]
            )));
        }
        Ok(seconds)
    }

    /// HPL's scaled residual of the last solution (`inject` perturbs it).
    pub fn residual(&self, cuda: &Cuda, inject: bool) -> Result<f64, BenchmarkError> {
        let mut x: Vec<f64> = cuda
            .stream
            .clone_dtoh(&self.b)
            .map_err(|e| failed("copying x back", e))?;
        if inject && let Some(v) = x.first_mut() {
            *v += 1.0;
        }
        let x = Col::from_fn(self.n, |i| x[i]);
        let norm_a = hpl::norm_inf(&self.a_host);
        Ok(hpl::scaled_residual(
            &self.a_host,
            norm_a,
            &x,
            &self.b_host,
            f64::EPSILON,
        ))
    }
}
