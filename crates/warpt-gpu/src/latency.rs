//! `gpu_latency`: the round trip of the smallest dispatch.
//!
//! Each sample records one dispatch of one invocation (which increments a
//! counter) in a command buffer, submits it and waits for its completion:
//! what every kernel launch costs before it does any work, in µs, lower is
//! better. Validation: the counter equals the number of dispatches made.

use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef,
};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Validation};

use crate::device::Gpu;
use crate::gpu_params;
use crate::kernels;

/// Benchmark name within the micro suite.
pub const NAME: &str = "gpu_latency";

/// The spec of `gpu_latency`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::Gpu)
        .description(
            "GPU dispatch round trip on wgpu: one dispatch of one invocation recorded, submitted \
             and waited for, per sample, in microseconds. Validation: the counter the kernel \
             increments equals the number of dispatches.",
        )
        .duration(2.0)
        .params(crate::common_params())
        .metric("dispatch_us")
        .build()
}

/// The running benchmark.
#[derive(Default)]
pub struct GpuLatency {
    gpu: Option<Gpu>,
    inject_error: bool,
    validation: Option<Validation>,
}

impl Benchmark for GpuLatency {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let (index, allow_software) = gpu_params(ctx)?;
        self.gpu = Some(Gpu::open(index, allow_software)?);
        self.inject_error = ctx.bool_param("inject_error")?;
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let gpu = warpt_harness::prepared(&self.gpu)?;
        let pipeline = gpu.pipeline("touch", kernels::TOUCH);
        let counter = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("counter"),
            size: 16,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let bind = gpu.bind(&pipeline, &[&counter]);
        let def = SeriesDef::new("dispatch_us", "us", false, &[], Convert::Time(1e6));
        let mut dispatches = 0u64;
        let mut error = None;
        let m = measure.run(
            &MeasurePolicy::share_of(ctx, 1),
            "gpu dispatch",
            &[def],
            |out| {
                match gpu.run(&pipeline, &bind, 1, 1) {
                    Ok(s) => out[0] = s,
                    Err(e) => {
                        error.get_or_insert(e);
                        out[0] = 1.0;
                    }
                }
                dispatches += 1;
            },
        );
        if let Some(e) = error {
            return Err(e);
        }
        let words: Vec<u32> = bytemuck::cast_slice(&gpu.read(&counter, 16)?).to_vec();
        let count = u64::from(words[0]) + u64::from(self.inject_error);
        self.validation = Some(if count == dispatches % (1u64 << 32) {
            Validation::pass(format!("the counter shows all {dispatches} dispatches ran"))
        } else {
            Validation::fail(format!(
                "the counter shows {count} dispatches, {dispatches} were made"
            ))
        });
        Ok(Measured::new(m.metrics, gpu.details()))
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        self.validation
            .take()
            .unwrap_or_else(|| Validation::fail("nothing was measured, so nothing was checked"))
    }
}
