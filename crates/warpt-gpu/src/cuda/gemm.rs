//! cuBLAS GEMM throughput, `C = A B` with square N×N matrices, in fp64,
//! fp32, tf32 (fp32 data, tensor-core math), fp16 and bf16.
//!
//! A and B hold 0s and 1s in a fixed pattern, so every entry of C is a
//! count: exact in fp64, fp32 and tf32 (integers, fp32 accumulation), exact
//! in fp16 at N = 2048 (counts up to 2048 are fp16 integers), and rounded
//! only by bf16's 8-bit mantissa. Each sample runs a calibrated number of
//! GEMMs (about 50 ms) and waits for the stream; GFLOP/s counts 2N³ per
//! GEMM. 256 entries of the last C are checked against the host's count.

use std::time::{Duration, Instant};

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, sys as blas};
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use warpt_harness::{BenchmarkError, Convert, Measure, MeasurePolicy, SeriesDef};
use warpt_model::BenchmarkMetric;

use super::{Cuda, failed};

/// The precisions, as their `precision` tags.
pub const PRECISIONS: [&str; 5] = ["fp64", "fp32", "tf32", "fp16", "bf16"];

/// What one sample should take.
const SAMPLE_TARGET: Duration = Duration::from_millis(50);

/// A matrix element type cuBLAS multiplies.
trait Elem: DeviceRepr + ValidAsZeroBits + Copy + Unpin {
    fn of(x: f64) -> Self;
    fn get(self) -> f64;
}

impl Elem for f64 {
    fn of(x: f64) -> Self {
        x
    }
    fn get(self) -> f64 {
        self
    }
}

impl Elem for f32 {
    fn of(x: f64) -> Self {
        x as f32
    }
    fn get(self) -> f64 {
        f64::from(self)
    }
}

impl Elem for half::f16 {
    fn of(x: f64) -> Self {
        half::f16::from_f64(x)
    }
    fn get(self) -> f64 {
        self.to_f64()
    }
}

impl Elem for half::bf16 {
    fn of(x: f64) -> Self {
        half::bf16::from_f64(x)
    }
    fn get(self) -> f64 {
        self.to_f64()
    }
}

fn a_at(i: usize, k: usize) -> f64 {
    f64::from(u8::from((i * 7 + k * 13).is_multiple_of(3)))
}

fn b_at(k: usize, j: usize) -> f64 {
    f64::from(u8::from((k * 5 + j * 11).is_multiple_of(4)))
}

/// One precision's result: its metric and what validation found.
pub struct GemmRun {
    /// `gflops`, tagged with the precision.
    pub metric: BenchmarkMetric,
    /// What was checked, or what was wrong.
    pub check: Result<String, String>,
}

/// Measures GEMM in `precision` (one of [`PRECISIONS`]).
pub fn run(
    cuda: &Cuda,
    precision: &str,
    policy: &MeasurePolicy,
    measure: &mut Measure<'_>,
    inject: bool,
) -> Result<GemmRun, BenchmarkError> {
    let blas =
        CudaBlas::new(cuda.stream.clone()).map_err(|e| failed("creating a cuBLAS handle", e))?;
    match precision {
        "fp64" => typed::<f64>(cuda, &blas, precision, 4096, 0.0, policy, measure, inject),
        "fp32" => typed::<f32>(cuda, &blas, precision, 4096, 0.0, policy, measure, inject),
        "tf32" => {
            // SAFETY: the handle is live; the mode is one of cuBLAS's.
            let set = |mode| unsafe { blas::cublasSetMathMode(*blas.handle(), mode) };
            set(blas::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH)
                .result()
                .map_err(|e| failed("enabling tf32", e))?;
            let out = typed::<f32>(cuda, &blas, precision, 4096, 0.0, policy, measure, inject);
            set(blas::cublasMath_t::CUBLAS_DEFAULT_MATH)
                .result()
                .map_err(|e| failed("restoring the math mode", e))?;
            out
        }
        "fp16" => typed::<half::f16>(cuda, &blas, precision, 2048, 0.0, policy, measure, inject),
        "bf16" => typed::<half::bf16>(
            cuda,
            &blas,
            precision,
            2048,
            1.0 / 256.0,
            policy,
            measure,
            inject,
        ),
        other => Err(BenchmarkError::InvalidParam {
            key: "precision".into(),
            reason: format!(
                "'{other}' is no cuBLAS precision ({})",
                PRECISIONS.join(", ")
            ),
        }),
    }
}

#[allow(clippy::too_many_arguments)]
fn typed<T: Elem>(
    cuda: &Cuda,
    blas: &CudaBlas,
    precision: &str,
    n: usize,
    rel_tolerance: f64,
    policy: &MeasurePolicy,
    measure: &mut Measure<'_>,
    inject: bool,
) -> Result<GemmRun, BenchmarkError>
where
    CudaBlas: Gemm<T>,
{
    // Column-major, as cuBLAS reads them.
    let a: Vec<T> = (0..n * n).map(|x| T::of(a_at(x % n, x / n))).collect();
    let b: Vec<T> = (0..n * n).map(|x| T::of(b_at(x % n, x / n))).collect();
    let s = &cuda.stream;
    let da = s.clone_htod(&a).map_err(|e| failed("copying A", e))?;
    let db = s.clone_htod(&b).map_err(|e| failed("copying B", e))?;
    let mut dc = s
        .alloc_zeros::<T>(n * n)
        .map_err(|e| failed("allocating C", e))?;
    let cfg = GemmConfig {
        transa: blas::cublasOperation_t::CUBLAS_OP_N,
        transb: blas::cublasOperation_t::CUBLAS_OP_N,
        m: n as i32,
        n: n as i32,
        k: n as i32,
        alpha: T::of(1.0),
        lda: n as i32,
        ldb: n as i32,
        beta: T::of(0.0),
        ldc: n as i32,
    };
    let mut gemms = |count: u32| -> Result<f64, BenchmarkError> {
        let start = Instant::now();
        for _ in 0..count {
            // SAFETY: A, B and C are N×N device matrices with leading dimension N.
            unsafe { blas.gemm(cfg, &da, &db, &mut dc) }.map_err(|e| failed("cuBLAS gemm", e))?;
        }
        cuda.sync()?;
        Ok(start.elapsed().as_secs_f64())
    };
    let once = gemms(1)?;
    cuda.sample_memory();
    let per_sample = ((SAMPLE_TARGET.as_secs_f64() / once.max(1e-6)) as u32).clamp(1, 1000);
    let gflop = 2.0 * (n as f64).powi(3) * f64::from(per_sample) / 1e9;
    let def = SeriesDef::new(
        "gflops",
        "GFLOP/s",
        true,
        &[
            ("precision", precision.to_string()),
            ("api", "cublas".to_string()),
        ],
        Convert::Rate(gflop),
    );
    let mut error = None;
    let m = measure.run(
        policy,
        &format!("cublas gemm {precision}"),
        &[def],
        |out| match gemms(per_sample) {
            Ok(t) => out[0] = t,
            Err(e) => {
                error.get_or_insert(e);
                out[0] = 1.0;
            }
        },
    );
    if let Some(e) = error {
        return Err(e);
    }
    let c: Vec<T> = s.clone_dtoh(&dc).map_err(|e| failed("copying C back", e))?;
    let mut check = Ok(format!(
        "{precision}: 256 entries of C ({n}x{n}) equal the host's count"
    ));
    for probe in 0..256usize {
        let (i, j) = ((probe * 7919) % n, (probe * 104_729) % n);
        let want: f64 = (0..n).map(|k| a_at(i, k) * b_at(k, j)).sum();
        let mut got = c[j * n + i].get();
        if inject && probe == 0 {
            got += 1.0;
        }
        if (got - want).abs() > rel_tolerance * want.abs() {
            check = Err(format!(
                "{precision}: C[{i},{j}] is {got}, the count is {want}"
            ));
            break;
        }
    }
    let metric = m
        .metrics
        .into_iter()
        .next()
        .ok_or_else(|| BenchmarkError::Failed("no gemm metric".into()))?;
    Ok(GemmRun { metric, check })
}
