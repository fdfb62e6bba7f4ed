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

use wgpu::util::DeviceExt;

use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, Measured, RunContext, SeriesDef,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkId, BenchmarkKind, BenchmarkSpec, ParamValue, Validation,
};

use crate::device::{Gpu, map_read};
use crate::{common_help, common_params, gpu_params, sized};

/// Benchmark name within the micro suite.
pub const NAME: &str = "gpu_transfer";

/// The spec of `gpu_transfer`.
pub fn spec() -> BenchmarkSpec {
    let mut params = common_params();
    params.insert("size_mb".into(), ParamValue::Int(0));
    let mut help = common_help();
    help.insert(
        "size_mb".into(),
        "MiB per transfer; 0 = 64, or the adapter's largest buffer if smaller".into(),
    );
    BenchmarkSpec {
        id: BenchmarkId::new(crate::SUITE, NAME),
        components: vec![BenchmarkComponent::Gpu],
        kind: BenchmarkKind::Synthetic,
        description: Some(
            "Host<->GPU transfer on wgpu: h2d is Queue::write_buffer (host copy into a mapped \
             staging buffer, GPU copy into device memory) timed to completion; d2h is a GPU copy \
             into a MAP_READ staging buffer, mapped and copied into host memory. GB/s = 1e9 \
             bytes/s, 64 MiB per transfer by default. Validation: both directions byte for byte."
                .into(),
        ),
        default_duration_seconds: Some(4.0),
        external_tool: None,
        params,
        param_help: help,
        param_choices: Default::default(),
        timeouts: Default::default(),
        metrics: vec!["transfer".into()],
    }
}

/// The running benchmark.
#[derive(Default)]
pub struct GpuTransfer {
    gpu: Option<Gpu>,
    bytes: u64,
    inject_error: bool,
    validation: Option<Validation>,
}

impl GpuTransfer {
    /// A fresh instance.
    pub fn new() -> Self {
        GpuTransfer::default()
    }
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
        let gpu = Gpu::open(index, allow_software)?;
        self.bytes = sized(ctx, &gpu, 64)?;
        self.inject_error = ctx.bool_param("inject_error")?;
        self.gpu = Some(gpu);
        Ok(())
    }

    fn measure(
        &mut self,
        ctx: &RunContext,
        measure: &mut Measure<'_>,
    ) -> Result<Measured, BenchmarkError> {
        let gpu = self.gpu.as_ref().ok_or_else(BenchmarkError::not_prepared)?;
        let bytes = self.bytes;
        let upload = pattern(bytes, 1);
        let device_side = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("h2d"),
            size: bytes,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let download = pattern(bytes, 2);
        let source = gpu
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("d2h-source"),
                contents: bytemuck::cast_slice(&download),
                usage: wgpu::BufferUsages::COPY_SRC,
            });
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
                &[("direction", d.to_string())],
                Convert::Rate(bytes as f64 / 1e9),
            )
        });
        let policy = MeasurePolicy::share_of(ctx, 1);
        let mut error = None;
        let m = measure.run(&policy, "gpu transfer", &defs, |out| {
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
        self.validation = Some(
            if let Some(i) = (0..upload.len()).find(|&i| uploaded[i] != upload[i]) {
                Validation::fail(format!(
                    "h2d: word {i} on the device is {:#x}, the host sent {:#x}",
                    uploaded[i], upload[i]
                ))
            } else if let Some(i) =
                (0..download.len()).find(|&i| downloaded.get(i) != Some(&download[i]))
            {
                Validation::fail(format!("d2h: word {i} arrived wrong"))
            } else {
                Validation::pass(format!(
                    "both directions moved all {} MiB byte for byte",
                    bytes >> 20
                ))
            },
        );
        let mut details = gpu.details();
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
        Ok(Measured {
            metrics: m.metrics,
            details,
            warnings: Vec::new(),
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        self.validation
            .take()
            .unwrap_or_else(|| Validation::fail("nothing was measured, so nothing was checked"))
    }
}
