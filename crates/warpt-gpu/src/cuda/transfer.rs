//! cudaMemcpy bandwidth between pinned (page-locked) host memory and the
//! device, each direction timed to the stream's completion; the same words
//! checked after as on the wgpu path.

use std::time::Instant;

use cudarc::driver::{CudaSlice, PinnedHostSlice};
use warpt_harness::BenchmarkError;

use super::{Cuda, failed};

/// The buffers of one run.
pub struct Transfer {
    up: PinnedHostSlice<u32>,
    down: PinnedHostSlice<u32>,
    device_dst: CudaSlice<u32>,
    device_src: CudaSlice<u32>,
    up_pattern: Vec<u32>,
    down_pattern: Vec<u32>,
}

fn pattern(words: usize, seed: u32) -> Vec<u32> {
    (0..words as u32)
        .map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(seed))
        .collect()
}

impl Transfer {
    /// Pinned host buffers and device buffers of `bytes` each.
    pub fn new(cuda: &Cuda, bytes: u64) -> Result<Transfer, BenchmarkError> {
        let words = (bytes / 4) as usize;
        let up_pattern = pattern(words, 3);
        let down_pattern = pattern(words, 4);
        // SAFETY: both are written before they are read (filled below, or
        // overwritten by the first copy).
        let mut up = unsafe { cuda.ctx.alloc_pinned_with_flags::<u32>(words, 0) }
            .map_err(|e| failed("allocating pinned host memory", e))?;
        let down = unsafe { cuda.ctx.alloc_pinned_with_flags::<u32>(words, 0) }
            .map_err(|e| failed("allocating pinned host memory", e))?;
        up.as_mut_slice()
            .map_err(|e| failed("pinned memory", e))?
            .copy_from_slice(&up_pattern);
        let s = &cuda.stream;
        let device_dst = s
            .alloc_zeros::<u32>(words)
            .map_err(|e| failed("allocating", e))?;
        let device_src = s
            .clone_htod(&down_pattern)
            .map_err(|e| failed("copying", e))?;
        cuda.sample_memory();
        Ok(Transfer {
            up,
            down,
            device_dst,
            device_src,
            up_pattern,
            down_pattern,
        })
    }

    /// One host→device and one device→host copy: their seconds.
    pub fn once(&mut self, cuda: &Cuda) -> Result<(f64, f64), BenchmarkError> {
        let s = &cuda.stream;
        let start = Instant::now();
        s.memcpy_htod(&self.up, &mut self.device_dst)
            .map_err(|e| failed("cudaMemcpy h2d", e))?;
        cuda.sync()?;
        let h2d = start.elapsed().as_secs_f64();
        let start = Instant::now();
        s.memcpy_dtoh(&self.device_src, &mut self.down)
            .map_err(|e| failed("cudaMemcpy d2h", e))?;
        cuda.sync()?;
        Ok((h2d, start.elapsed().as_secs_f64()))
    }

    /// Whether both directions moved every word (`inject` spoils one).
    pub fn check(&self, cuda: &Cuda, inject: bool) -> Result<Option<String>, BenchmarkError> {
        let mut on_device: Vec<u32> = cuda
            .stream
            .clone_dtoh(&self.device_dst)
            .map_err(|e| failed("reading back", e))?;
        if inject && let Some(w) = on_device.first_mut() {
            *w ^= 1;
        }
        if let Some(i) = (0..on_device.len()).find(|&i| on_device[i] != self.up_pattern[i]) {
            return Ok(Some(format!("cuda h2d: word {i} arrived wrong")));
        }
        let host = self
            .down
            .as_slice()
            .map_err(|e| failed("pinned memory", e))?;
        if let Some(i) = (0..host.len()).find(|&i| host[i] != self.down_pattern[i]) {
            return Ok(Some(format!("cuda d2h: word {i} arrived wrong")));
        }
        Ok(None)
    }
}
