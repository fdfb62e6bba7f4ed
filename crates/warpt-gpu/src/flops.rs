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

use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef,
};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, ParamValue, Validation};

use crate::device::Gpu;
use crate::gpu_params;
use crate::kernels::{self, WORKGROUP};

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
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::Gpu)
        .description(
            "GPU FMA throughput on wgpu compute (Vulkan, Metal, DX12): 1024 workgroups x 256 \
             invocations, each 8 independent vec4 FMA chains, f32 and (with shader-f16) f16, \
             timed from submission to completion; GFLOP/s counts 2 flops per FMA lane. In builds \
             with the `cuda` feature on NVIDIA GPUs also cuBLAS GEMM in fp64, fp32, tf32, fp16 and \
             bf16 (tag api=cublas). Validation: every FMA output element equals its closed form \
             exactly; sampled GEMM entries equal the host's count.",
        )
        .duration(4.0)
        .params(crate::common_params())
        .param(Param::choice("precision", "all", &PRECISIONS).help(
            "`f32`, `f16` (wgpu's FMA kernel; f16 with shader-f16), `fp64`, `fp32`, `tf32`, `fp16`, `bf16` \
             (cuBLAS GEMM, builds with the `cuda` feature on NVIDIA), or `all`: every one this machine has",
        ))
        .metric("gflops")
        .build()
}

/// The `precision` values: wgpu's FMA kernel (`f32`, `f16`), cuBLAS's
/// GEMM ([`CUBLAS`]), or every one available (`all`).
pub const PRECISIONS: [&str; 8] = ["all", "f32", "f16", "fp64", "fp32", "tf32", "fp16", "bf16"];

/// The precisions cuBLAS measures (feature `cuda`).
pub const CUBLAS: [&str; 5] = ["fp64", "fp32", "tf32", "fp16", "bf16"];

/// The running benchmark.
#[derive(Default)]
pub struct GpuFlops {
    gpu: Option<Gpu>,
    precisions: Vec<bool>,
    #[cfg(feature = "cuda")]
    cuda: Option<crate::cuda::Cuda>,
    cublas: Vec<&'static str>,
    cublas_note: Option<String>,
    inject_error: bool,
    validation: Vec<String>,
    failure: Option<String>,
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
    let uniform = gpu.filled(
        "fma-params",
        &kernels::fma_params(f16, ITERS, salt),
        wgpu::BufferUsages::UNIFORM,
    );
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

impl GpuFlops {
    /// The wgpu FMA series, one per precision.
    fn measure_wgpu(
        &mut self,
        policy: &MeasurePolicy,
        measure: &mut Measure<'_>,
        out: &mut Measured,
    ) -> Result<(), BenchmarkError> {
        let gpu = warpt_harness::prepared(&self.gpu)?;
        out.details.extend(gpu.details());
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
                &[("precision", tag.to_string()), ("api", "wgpu".to_string())],
                Convert::Rate(gflop),
            );
            let mut error = None;
            let m = measure.run(policy, &format!("gpu fma {tag}"), &[def], |o| {
                match gpu.run(&k.pipeline, &k.bind, k.groups, dispatches) {
                    Ok(s) => o[0] = s,
                    Err(e) => {
                        error.get_or_insert(e);
                        o[0] = 1.0;
                    }
                }
            });
            if let Some(e) = error {
                return Err(e);
            }
            out.metrics.extend(m.metrics);
            out.details.push((
                format!("invocations_{tag}"),
                ParamValue::Int(i64::from(k.groups * WORKGROUP)),
            ));
            out.details.push((
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
        out.details
            .push(("iterations".into(), ParamValue::Int(i64::from(ITERS))));
        if gpu.adapter.software {
            out.warnings.push(format!(
                "{} is a software device on the CPU, not a GPU (allow_software=true)",
                gpu.adapter.name
            ));
        }
        Ok(())
    }
}

impl Benchmark for GpuFlops {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let (index, allow_software) = gpu_params(ctx)?;
        let precision = ctx.str_param("precision")?.to_string();
        if !PRECISIONS.contains(&precision.as_str()) {
            return Err(BenchmarkError::InvalidParam {
                key: "precision".into(),
                reason: format!("'{precision}': one of {}", PRECISIONS.join(", ")),
            });
        }
        self.inject_error = ctx.bool_param("inject_error")?;
        let all = precision == "all";
        let mut reasons = Vec::new();
        if all || precision == "f32" || precision == "f16" {
            match Gpu::open(index, allow_software) {
                Ok(gpu) => {
                    self.precisions = match precision.as_str() {
                        "f32" => vec![false],
                        "f16" if gpu.f16 => vec![true],
                        "f16" => {
                            reasons.push(format!("wgpu: {} has no shader-f16", gpu.adapter.name));
                            Vec::new()
                        }
                        _ if gpu.f16 => vec![false, true],
                        _ => vec![false],
                    };
                    self.gpu = Some(gpu);
                }
                Err(BenchmarkError::Skipped(why)) => reasons.push(why),
                Err(e) => return Err(e),
            }
        }
        let cublas: Vec<&'static str> = CUBLAS
            .iter()
            .copied()
            .filter(|p| all || *p == precision)
            .collect();
        if !cublas.is_empty() {
            #[cfg(feature = "cuda")]
            match crate::cuda::Cuda::open(index.max(0) as usize, crate::cuda::Needs::Blas) {
                Ok(c) => {
                    self.cuda = Some(c);
                    self.cublas = cublas;
                }
                Err(BenchmarkError::Skipped(why)) => self.cublas_note = Some(why),
                Err(e) => return Err(e),
            }
            #[cfg(not(feature = "cuda"))]
            {
                self.cublas_note =
                    Some("this build has no CUDA path (build warpt with `--features cuda`)".into());
            }
            if !all && let Some(why) = &self.cublas_note {
                reasons.push(format!("cuBLAS: {why}"));
            }
        }
        if self.precisions.is_empty() && self.cublas.is_empty() {
            return Err(BenchmarkError::Skipped(reasons.join("; ")));
        }
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let policy = MeasurePolicy::share_of(ctx, self.precisions.len() + self.cublas.len());
        let mut out = Measured::default();
        if self.gpu.is_some() {
            self.measure_wgpu(&policy, measure, &mut out)?;
        }
        #[cfg(feature = "cuda")]
        if let Some(cuda) = &self.cuda {
            for p in &self.cublas {
                let run = crate::cuda::gemm::run(cuda, p, &policy, measure, self.inject_error)?;
                out.metrics.push(run.metric);
                match run.check {
                    Ok(what) => self.validation.push(what),
                    Err(wrong) => {
                        self.failure.get_or_insert(wrong);
                    }
                }
            }
            out.details.extend(cuda.details());
        }
        if let Some(why) = &self.cublas_note {
            out.details
                .push(("cublas".into(), ParamValue::from(format!("skipped: {why}"))));
        }
        Ok(out)
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        match (self.failure.take(), self.validation.is_empty()) {
            (Some(wrong), _) => Validation::fail(wrong),
            (None, true) => Validation::fail("nothing was measured, so nothing was checked"),
            (None, false) => Validation::pass(self.validation.join("; ")),
        }
    }
}
