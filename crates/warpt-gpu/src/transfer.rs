//! `gpu_transfer`: host↔device copies.
//!
//! `h2d`: `Queue::write_buffer` of a `size_mb` host array into a device
//! buffer, timed until the copy has completed on the device (wgpu copies
//! the data into a mapped staging buffer, then the GPU copies that into
//! device-local memory: the path every wgpu upload takes). `d2h`: a GPU copy
//! of a device buffer into a persistent `MAP_READ` staging buffer, mapped,
//! and copied into a host array, timed to the last byte in host memory.
//! GB/s = 1e9 bytes/s of the array. Both directions are checked byte for
//! byte after measuring.

use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef,
};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, ParamValue, Validation};

use crate::device::{Gpu, map_read};
use crate::{gpu_params, sized};

/// Benchmark name within the micro suite.
pub const NAME: &str = "gpu_transfer";

/// The spec of `gpu_transfer`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::Gpu)
        .description(
            "Host<->GPU transfer on wgpu: h2d is Queue::write_buffer (host copy into a mapped \
             staging buffer, GPU copy into device memory) timed to completion; d2h is a GPU copy \
             into a MAP_READ staging buffer, mapped and copied into host memory. GB/s = 1e9 \
             bytes/s, 64 MiB per transfer by default. Validation: both directions byte for byte.",
        )
        .duration(4.0)
        .params(crate::common_params())
        .param(
            Param::int("size_mb", 0, 0..)
                .unit("MiB")
                .help("MiB per transfer; 0 = 64, or the adapter's largest buffer if smaller"),
        )
        .metric("transfer")
        .build()
}

/// The running benchmark.
#[derive(Default)]
pub struct GpuTransfer {
    gpu: Option<Gpu>,
    #[cfg(feature = "cuda")]
    cuda: Option<(crate::cuda::Cuda, crate::cuda::transfer::Transfer)>,
    bytes: u64,
    inject_error: bool,
    checked: Vec<String>,
    failure: Option<String>,
}

/// A pattern no copy gets right by accident.
fn pattern(bytes: u64, seed: u32) -> Vec<u32> {
    (0..(bytes / 4) as u32)
        .map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(seed))
        .collect()
}

impl Benchmark for GpuTransfer {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let (index, allow_software) = gpu_params(ctx)?;
        self.inject_error = ctx.bool_param("inject_error")?;
        let mut reasons = Vec::new();
        match Gpu::open(index, allow_software) {
            Ok(gpu) => {
                self.bytes = sized(ctx, &gpu, 64)?;
                self.gpu = Some(gpu);
            }
            Err(BenchmarkError::Skipped(why)) => reasons.push(why),
            Err(e) => return Err(e),
        }
        #[cfg(feature = "cuda")]
        match crate::cuda::Cuda::open(index.max(0) as usize, crate::cuda::Needs::Blas) {
            Ok(cuda) => {
                if self.bytes == 0 {
                    let asked = ctx.int_param("size_mb", 0)? as u64;
                    self.bytes = if asked == 0 { 64 << 20 } else { asked << 20 };
                }
                let t = crate::cuda::transfer::Transfer::new(&cuda, self.bytes)?;
                self.cuda = Some((cuda, t));
            }
            Err(BenchmarkError::Skipped(why)) => reasons.push(format!("cuda: {why}")),
            Err(e) => return Err(e),
        }
        #[cfg(feature = "cuda")]
        let cuda = self.cuda.is_some();
        #[cfg(not(feature = "cuda"))]
        let cuda = false;
        if self.gpu.is_none() && !cuda {
            return Err(BenchmarkError::Skipped(reasons.join("; ")));
        }
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        #[cfg(feature = "cuda")]
        let parts = usize::from(self.gpu.is_some()) + usize::from(self.cuda.is_some());
        #[cfg(not(feature = "cuda"))]
        let parts = 1;
        let policy = MeasurePolicy::share_of(ctx, parts);
        let mut out = Measured::default();
        if self.gpu.is_some() {
            self.measure_wgpu(&policy, measure, &mut out)?;
        }
        #[cfg(feature = "cuda")]
        if let Some((cuda, t)) = self.cuda.as_mut() {
            let defs = ["h2d", "d2h"].map(|d| {
                SeriesDef::new(
                    "transfer",
                    "GB/s",
                    true,
                    &[("direction", d.to_string()), ("api", "cuda".to_string())],
                    Convert::Rate(self.bytes as f64 / 1e9),
                )
            });
            let mut error = None;
            let m = measure.run(&policy, "cudaMemcpy", &defs, |o| match t.once(cuda) {
                Ok((a, b)) => {
                    o[0] = a;
                    o[1] = b;
                }
                Err(e) => {
                    error.get_or_insert(e);
                    o[0] = 1.0;
                    o[1] = 1.0;
                }
            });
            if let Some(e) = error {
                return Err(e);
            }
            out.metrics.extend(m.metrics);
            match t.check(cuda, self.inject_error)? {
                None => self
                    .checked
                    .push("cudaMemcpy moved every word both ways (pinned host memory)".into()),
                Some(wrong) => {
                    self.failure.get_or_insert(wrong);
                }
            }
            out.details.extend(cuda.details());
        }
        Ok(out)
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        match (self.failure.take(), self.checked.is_empty()) {
            (Some(wrong), _) => Validation::fail(wrong),
            (None, true) => Validation::fail("nothing was measured, so nothing was checked"),
            (None, false) => Validation::pass(self.checked.join("; ")),
        }
    }
}

impl GpuTransfer {
    /// The wgpu series: write_buffer up, a MAP_READ staging buffer down.
    fn measure_wgpu(
        &mut self,
        policy: &MeasurePolicy,
        measure: &mut Measure<'_>,
        out: &mut Measured,
    ) -> Result<(), BenchmarkError> {
        let gpu = warpt_harness::prepared(&self.gpu)?;
        let bytes = self.bytes;
        let upload = pattern(bytes, 1);
        let device_side = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("h2d"),
            size: bytes,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let download = pattern(bytes, 2);
        let source = gpu.filled("d2h-source", &download, wgpu::BufferUsages::COPY_SRC);
        let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("d2h-staging"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut host = Vec::new();
        let defs = ["h2d", "d2h"].map(|d| {
            SeriesDef::new(
                "transfer",
                "GB/s",
                true,
                &[("direction", d.to_string()), ("api", "wgpu".to_string())],
                Convert::Rate(bytes as f64 / 1e9),
            )
        });
        let mut error = None;
        let m = measure.run(policy, "gpu transfer", &defs, |out| {
            let mut step = || -> Result<(f64, f64), BenchmarkError> {
                let start = std::time::Instant::now();
                gpu.queue
                    .write_buffer(&device_side, 0, bytemuck::cast_slice(&upload));
                gpu.queue.submit([]);
                gpu.wait()?;
                let h2d = start.elapsed().as_secs_f64();
                let start = std::time::Instant::now();
                let mut enc = gpu.device.create_command_encoder(&Default::default());
                enc.copy_buffer_to_buffer(&source, 0, &staging, 0, bytes);
                gpu.queue.submit([enc.finish()]);
                host = map_read(gpu, &staging)?;
                Ok((h2d, start.elapsed().as_secs_f64()))
            };
            match step() {
                Ok((a, b)) => {
                    out[0] = a;
                    out[1] = b;
                }
                Err(e) => {
                    error.get_or_insert(e);
                    out[0] = 1.0;
                    out[1] = 1.0;
                }
            }
        });
        if let Some(e) = error {
            return Err(e);
        }
        let mut uploaded: Vec<u32> = bytemuck::cast_slice(&gpu.read(&device_side, bytes)?).to_vec();
        if self.inject_error && !uploaded.is_empty() {
            uploaded[0] ^= 1;
        }
        let downloaded: &[u32] = bytemuck::cast_slice(&host);
        if let Some(i) = (0..upload.len()).find(|&i| uploaded[i] != upload[i]) {
            self.failure.get_or_insert(format!(
                "h2d: word {i} on the device is {:#x}, the host sent {:#x}",
                uploaded[i], upload[i]
            ));
        } else if let Some(i) =
            (0..download.len()).find(|&i| downloaded.get(i) != Some(&download[i]))
        {
            self.failure
                .get_or_insert(format!("d2h: word {i} arrived wrong"));
        } else {
            self.checked.push(format!(
                "both directions moved all {} MiB byte for byte",
                bytes >> 20
            ));
        }
        let details = &mut out.details;
        details.extend(gpu.details());
        details.push((
            "transfer_mib".into(),
            ParamValue::Float(bytes as f64 / 1048576.0),
        ));
        details.push((
            "h2d_path".into(),
            ParamValue::from(
                "Queue::write_buffer: host copy into wgpu's mapped staging buffer, then a GPU copy",
            ),
        ));
        details.push((
            "d2h_path".into(),
            ParamValue::from("GPU copy into a MAP_READ staging buffer, map, copy into host memory"),
        ));
        out.metrics.extend(m.metrics);
        Ok(())
    }
}
