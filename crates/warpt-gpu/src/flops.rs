//! `gpu_flops`: FMA throughput of the GPU in f32, and f16 where the adapter
//! has `shader-f16`.
//!
//! Each sample submits one command buffer of several dispatches of the FMA
//! kernel over 1024 workgroups of 256 invocations (enough to fill any
//! GPU), each invocation 1024 iterations of 8 `vec4` FMA chains, and times
//! it from submission to completion on the host. The number of dispatches
//! is calibrated so a sample takes about 50 ms: submission costs microseconds
//! against that. GFLOP/s counts 2 flops per FMA lane. Every element of the
//! last output is checked against its closed form (see [`crate::kernels`]).

use std::time::Duration;

use wgpu::util::DeviceExt;

use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, Measured, RunContext, SeriesDef,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkId, BenchmarkKind, BenchmarkSpec, ParamValue, Validation,
};

use crate::device::Gpu;
use crate::kernels::{self, WORKGROUP};
use crate::{common_params, gpu_params};

/// Benchmark name within the micro suite.
pub const NAME: &str = "gpu_flops";

/// Iterations of each chain per invocation.
const ITERS: u32 = 1024;

/// Workgroups per dispatch at most (262 144 invocations).
const GROUPS: u32 = 1024;

/// What one sample should take.
const SAMPLE_TARGET: Duration = Duration::from_millis(50);

/// The spec of `gpu_flops`.
pub fn spec() -> BenchmarkSpec {
    let mut params = common_params();
    params.insert("precision".into(), ParamValue::from("all"));
    let mut help = crate::common_help();
    help.insert(
        "precision".into(),
        "`f32`, `f16` (adapters with shader-f16) or `all` (f32, and f16 where the adapter has it)"
            .into(),
    );
    BenchmarkSpec {
        id: BenchmarkId::new(crate::SUITE, NAME),
        components: vec![BenchmarkComponent::Gpu],
        kind: BenchmarkKind::Synthetic,
        description: Some(
            "GPU FMA throughput on wgpu compute (Vulkan, Metal, DX12): 1024 workgroups x 256 \
             invocations, each 8 independent vec4 FMA chains, f32 and (with shader-f16) f16, \
             timed from submission to completion; GFLOP/s counts 2 flops per FMA lane. \
             Validation: every output element equals its closed form exactly."
                .into(),
        ),
        default_duration_seconds: Some(4.0),
        external_tool: None,
        params,
        param_help: help,
        param_choices: [(
            "precision".to_string(),
            vec!["all".to_string(), "f32".to_string(), "f16".to_string()],
        )]
        .into(),
        timeouts: Default::default(),
        metrics: vec!["gflops".into()],
    }
}

/// The running benchmark.
#[derive(Default)]
pub struct GpuFlops {
    gpu: Option<Gpu>,
    precisions: Vec<bool>,
    inject_error: bool,
    validation: Vec<String>,
    failure: Option<String>,
}

impl GpuFlops {
    /// A fresh instance.
    pub fn new() -> Self {
        GpuFlops::default()
    }
}

/// A kernel ready to run: pipeline, bindings, output and its size.
struct Prepared {
    pipeline: wgpu::ComputePipeline,
    bind: wgpu::BindGroup,
    out: wgpu::Buffer,
    groups: u32,
    salt: u32,
}

fn prepare_kernel(gpu: &Gpu, f16: bool, groups: u32, salt: u32) -> Prepared {
    let source = if f16 {
        kernels::FMA_F16
    } else {
        kernels::FMA_F32
    };
    let pipeline = gpu.pipeline(if f16 { "fma-f16" } else { "fma-f32" }, source);
    let uniform = gpu
        .device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("fma-params"),
            contents: bytemuck::cast_slice(&kernels::fma_params(f16, ITERS, salt)),
            usage: wgpu::BufferUsages::UNIFORM,
        });
    let out = gpu.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("fma-out"),
        size: u64::from(groups * WORKGROUP) * 16,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let bind = gpu.bind(&pipeline, &[&uniform, &out]);
    Prepared {
        pipeline,
        bind,
        out,
        groups,
        salt,
    }
}

/// Checks every element of `k`'s output; `None` when right.
fn check(
    gpu: &Gpu,
    k: &Prepared,
    f16: bool,
    inject: bool,
) -> Result<Option<String>, BenchmarkError> {
    let n = k.groups * WORKGROUP;
    let bytes = gpu.read(&k.out, u64::from(n) * 16)?;
    let mut got: Vec<f32> = bytemuck::cast_slice(&bytes).to_vec();
    let len = got.len();
    if inject && let Some(x) = got.get_mut(12_345 % len.max(1)) {
        *x += 1.0;
    }
    for i in 0..n {
        for lane in 0..4 {
            let want = kernels::fma_expected(f16, ITERS, k.salt, i, lane);
            let have = got[(i * 4 + lane) as usize];
            if have != want {
                return Ok(Some(format!(
                    "{}: element {i} lane {lane} is {have}, its closed form {want}",
                    if f16 { "f16" } else { "f32" }
                )));
            }
        }
    }
    Ok(None)
}

impl Benchmark for GpuFlops {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let (index, allow_software) = gpu_params(ctx)?;
        let gpu = Gpu::open(index, allow_software)?;
        self.precisions = match ctx.str_param("precision")? {
            "f32" => vec![false],
            "f16" if !gpu.f16 => {
                return Err(BenchmarkError::Skipped(format!(
                    "{} has no shader-f16; --param precision=f32 or all",
                    gpu.adapter.name
                )));
            }
            "f16" => vec![true],
            "all" => {
                if gpu.f16 {
                    vec![false, true]
                } else {
                    vec![false]
                }
            }
            other => {
                return Err(BenchmarkError::InvalidParam {
                    key: "precision".into(),
                    reason: format!("'{other}': f32, f16 or all"),
                });
            }
        };
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
        let policy = MeasurePolicy::share_of(ctx, self.precisions.len());
        let mut metrics = Vec::new();
        let mut details = gpu.details();
        for (salt, &f16) in self.precisions.iter().enumerate() {
            let tag = if f16 { "f16" } else { "f32" };
            // Calibrate: a slow (software) device gets fewer workgroups, a
            // fast one more dispatches per sample.
            let mut k = prepare_kernel(gpu, f16, GROUPS, salt as u32 + 1);
            let once = gpu.run(&k.pipeline, &k.bind, k.groups, 1)?;
            if once > SAMPLE_TARGET.as_secs_f64() {
                let groups = ((f64::from(GROUPS) * SAMPLE_TARGET.as_secs_f64() / once) as u32)
                    .clamp(1, GROUPS);
                k = prepare_kernel(gpu, f16, groups, salt as u32 + 1);
            }
            let dispatches =
                ((SAMPLE_TARGET.as_secs_f64() / once.max(1e-6)) as u32).clamp(1, 10_000);
            let dispatches = if k.groups < GROUPS { 1 } else { dispatches };
            let gflop = f64::from(k.groups * WORKGROUP)
                * kernels::fma_flops_per_invocation(ITERS)
                * f64::from(dispatches)
                / 1e9;
            let def = SeriesDef::new(
                "gflops",
                "GFLOP/s",
                true,
                &[("precision", tag.to_string())],
                Convert::Rate(gflop),
            );
            let mut error = None;
            let m = measure.run(
                &policy,
                &format!("gpu fma {tag}"),
                &[def],
                |out| match gpu.run(&k.pipeline, &k.bind, k.groups, dispatches) {
                    Ok(s) => out[0] = s,
                    Err(e) => {
                        error.get_or_insert(e);
                        out[0] = 1.0;
                    }
                },
            );
            if let Some(e) = error {
                return Err(e);
            }
            metrics.extend(m.metrics);
            details.push((
                format!("invocations_{tag}"),
                ParamValue::Int(i64::from(k.groups * WORKGROUP)),
            ));
            details.push((
                format!("dispatches_per_sample_{tag}"),
                ParamValue::Int(i64::from(dispatches)),
            ));
            match check(gpu, &k, f16, self.inject_error)? {
                None => self.validation.push(format!(
                    "{tag}: all {} elements equal their closed form",
                    k.groups * WORKGROUP * 4
                )),
                Some(wrong) => {
                    self.failure.get_or_insert(wrong);
                }
            }
        }
        details.push(("iterations".into(), ParamValue::Int(i64::from(ITERS))));
        let mut warnings = Vec::new();
        if gpu.adapter.software {
            warnings.push(format!(
                "{} is a software device on the CPU, not a GPU (allow_software=true)",
                gpu.adapter.name
            ));
        }
        Ok(Measured {
            metrics,
            details,
            warnings,
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        match (self.failure.take(), self.validation.is_empty()) {
            (Some(wrong), _) => Validation::fail(wrong),
            (None, true) => Validation::fail("nothing was measured, so nothing was checked"),
            (None, false) => Validation::pass(self.validation.join("; ")),
        }
    }
}
