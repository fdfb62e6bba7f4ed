//! `gpu_bandwidth`: device-memory bandwidth, STREAM's copy and triad on
//! the GPU.
//!
//! Three `vec4<f32>` arrays of `size_mb` MiB each (default: 256 MiB, or the
//! largest storage binding the adapter allows, whichever is smaller: several
//! times any GPU's last-level cache) live in device memory. Each sample runs
//! the copy kernel, then the triad kernel, each a grid-stride loop over its
//! arrays (over the workgroup count, of 64 to 8192, that copied fastest in
//! a trial), each timed from submission to completion. GB/s = 1e9 bytes/s,
//! counted as STREAM counts: 2 arrays moved by copy, 3 by triad. Every
//! element of both outputs is checked against the host's computation.

use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef,
};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, ParamValue, Validation};

use crate::device::Gpu;
use crate::kernels::{self, WORKGROUP};
use crate::{gpu_params, sized};

/// Benchmark name within the micro suite.
pub const NAME: &str = "gpu_bandwidth";

/// The triad's scalar (STREAM's).
const SCALAR: f32 = 3.0;

/// Workgroups of the grid-stride loops at most.
const MAX_GROUPS: u32 = 8192;

/// The spec of `gpu_bandwidth`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::Gpu)
        .description(
            "GPU device-memory bandwidth on wgpu compute: STREAM's copy and triad over vec4<f32> \
             arrays in device memory (256 MiB each by default), each kernel timed from submission \
             to completion. GB/s = 1e9 bytes/s counted as STREAM counts (2 arrays for copy, 3 for \
             triad). Validation: every element of both outputs equals the host's computation.",
        )
        .duration(4.0)
        .params(crate::common_params())
        .param(Param::int("size_mb", 0, 0..).unit("MiB").help(
            "MiB of EACH array; 0 = 256, or the adapter's largest storage binding if smaller",
        ))
        .metric("bandwidth")
        .build()
}

/// The arrays and kernels of a run.
struct Arrays {
    copy: (wgpu::ComputePipeline, wgpu::BindGroup),
    triad: (wgpu::ComputePipeline, wgpu::BindGroup),
    dst: wgpu::Buffer,
    a: wgpu::Buffer,
    groups: u32,
}

/// The running benchmark.
#[derive(Default)]
pub struct GpuBandwidth {
    gpu: Option<Gpu>,
    arrays: Option<Arrays>,
    elements: u32,
    inject_error: bool,
    validation: Option<Validation>,
}

/// The initial `b` and `c` (and copy source): small integers, so the
/// triad is exact in f32 whatever the rounding of its FMA.
fn initial(n: u32) -> (Vec<f32>, Vec<f32>) {
    let b = (0..n * 4).map(|i| (i % 1000) as f32).collect();
    let c = (0..n * 4)
        .map(|i| (i.wrapping_mul(7) % 1000) as f32)
        .collect();
    (b, c)
}

impl Benchmark for GpuBandwidth {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let (index, allow_software) = gpu_params(ctx)?;
        let gpu = Gpu::open(index, allow_software)?;
        let bytes = sized(ctx, &gpu, 256)?;
        let n = (bytes / 16) as u32;
        let (b, c) = initial(n);
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
        let init = |label: &str, data: &[f32]| gpu.filled(label, data, storage);
        let empty = |label: &str| {
            gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage: storage,
                mapped_at_creation: false,
            })
        };
        let (bb, cb) = (init("b", &b), init("c", &c));
        let (dst, a) = (empty("dst"), empty("a"));
        let copy = gpu.pipeline("copy", kernels::COPY);
        let triad = gpu.pipeline("triad", kernels::TRIAD);
        // The grid: the workgroup count that copies fastest, of 64 to
        // 8192 (a GPU wants many in flight; a software device a few, each
        // looping over many elements).
        let bound = |groups: u32| {
            let params = [n, groups * WORKGROUP, SCALAR.to_bits(), 0];
            let uniform = gpu.filled("stream-params", &params, wgpu::BufferUsages::UNIFORM);
            (
                gpu.bind(&copy, &[&uniform, &bb, &dst]),
                gpu.bind(&triad, &[&uniform, &bb, &cb, &a]),
            )
        };
        let mut best: Option<(f64, u32)> = None;
        for groups in [64u32, 256, 1024, 8192] {
            let groups = groups.min(n.div_ceil(WORKGROUP)).clamp(1, MAX_GROUPS);
            let (copy_bind, _) = bound(groups);
            let mut fastest = f64::INFINITY;
            for _ in 0..3 {
                fastest = fastest.min(gpu.run(&copy, &copy_bind, groups, 1)?);
            }
            if best.is_none_or(|(t, _)| fastest < t) {
                best = Some((fastest, groups));
            }
        }
        let groups = best.map_or(1, |(_, g)| g);
        let (copy_bind, triad_bind) = bound(groups);
        self.arrays = Some(Arrays {
            copy: (copy, copy_bind),
            triad: (triad, triad_bind),
            dst,
            a,
            groups,
        });
        self.elements = n;
        self.inject_error = ctx.bool_param("inject_error")?;
        self.gpu = Some(gpu);
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let gpu = warpt_harness::prepared(&self.gpu)?;
        let arrays = warpt_harness::prepared(&self.arrays)?;
        let bytes = f64::from(self.elements) * 16.0;
        let defs = [
            SeriesDef::new(
                "bandwidth",
                "GB/s",
                true,
                &[("kernel", "copy".to_string())],
                Convert::Rate(2.0 * bytes / 1e9),
            ),
            SeriesDef::new(
                "bandwidth",
                "GB/s",
                true,
                &[("kernel", "triad".to_string())],
                Convert::Rate(3.0 * bytes / 1e9),
            ),
        ];
        let mut error = None;
        let m = measure.run(
            &MeasurePolicy::share_of(ctx, 1),
            "gpu stream",
            &defs,
            |out| {
                for (slot, (pipeline, bind)) in out.iter_mut().zip([&arrays.copy, &arrays.triad]) {
                    match gpu.run(pipeline, bind, arrays.groups, 1) {
                        Ok(s) => *slot = s,
                        Err(e) => {
                            error.get_or_insert(e);
                            *slot = 1.0;
                        }
                    }
                }
            },
        );
        if let Some(e) = error {
            return Err(e);
        }
        self.validation = Some(self.check(gpu, arrays)?);
        let mut details = gpu.details();
        details.push(("array_mib".into(), ParamValue::Float(bytes / 1048576.0)));
        details.push((
            "workgroups".into(),
            ParamValue::Int(i64::from(arrays.groups)),
        ));
        let mut warnings = Vec::new();
        if gpu.adapter.software {
            warnings.push(format!(
                "{} is a software device: its \"device memory\" is host RAM",
                gpu.adapter.name
            ));
        }
        Ok(Measured {
            metrics: m.metrics,
            details,
            warnings,
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        self.validation
            .take()
            .unwrap_or_else(|| Validation::fail("nothing was measured, so nothing was checked"))
    }
}

impl GpuBandwidth {
    fn check(&self, gpu: &Gpu, arrays: &Arrays) -> Result<Validation, BenchmarkError> {
        let n = self.elements;
        let bytes = u64::from(n) * 16;
        let (b, c) = initial(n);
        let mut dst: Vec<f32> = bytemuck::cast_slice(&gpu.read(&arrays.dst, bytes)?).to_vec();
        let a: Vec<f32> = bytemuck::cast_slice(&gpu.read(&arrays.a, bytes)?).to_vec();
        if self.inject_error && !dst.is_empty() {
            let k = dst.len() / 2;
            dst[k] += 1.0;
        }
        if let Some(i) = (0..dst.len()).find(|&i| dst[i] != b[i]) {
            return Ok(Validation::fail(format!(
                "copy: element {i} is {}, the source holds {}",
                dst[i], b[i]
            )));
        }
        if let Some(i) = (0..a.len()).find(|&i| a[i] != SCALAR * c[i] + b[i]) {
            return Ok(Validation::fail(format!(
                "triad: element {i} is {}, b + 3 c = {}",
                a[i],
                SCALAR * c[i] + b[i]
            )));
        }
        Ok(Validation::pass(format!(
            "all {} elements of copy and of triad equal the host's computation",
            dst.len()
        )))
    }
}
