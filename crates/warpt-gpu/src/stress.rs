//! `warpt stress gpu`: the FMA kernel and a device-memory round trip, over
//! and over, every result checked.
//!
//! Each pass runs the f32 FMA kernel with a new salt (so every pass's
//! answers differ) and checks every element against its closed form, then
//! uploads a new pattern, copies it on the device and checks every word of
//! the copy. Throughput is the FMA kernel's GFLOP/s per second of the run;
//! `inject_error=1` corrupts one result of the first recorded pass.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use warpt_model::{ParamValue, Params, ThroughputPoint};
use warpt_model::{StressConfig, StressOutcome};

use crate::device::Gpu;
use crate::kernels::{self, WORKGROUP};

/// Errors kept as examples.
const EXAMPLES: usize = 10;

/// Workgroups of each FMA dispatch.
const GROUPS: u32 = 256;

/// Iterations per chain.
const ITERS: u32 = 256;

/// Words of the memory round trip (16 MiB).
const WORDS: u32 = 4 << 20;

/// The parameters `stress gpu` accepts, with defaults.
pub fn default_params() -> Params {
    [
        ("inject_error".to_string(), ParamValue::Int(0)),
        ("device_index".to_string(), ParamValue::Int(-1)),
        ("allow_software".to_string(), ParamValue::Bool(false)),
    ]
    .into()
}

fn param_i64(cfg: &StressConfig<'_>, key: &str, default: i64) -> i64 {
    cfg.params
        .get(key)
        .and_then(ParamValue::as_i64)
        .unwrap_or(default)
}

/// Runs the stress test; the reason when it cannot (no GPU).
pub fn run(cfg: &StressConfig<'_>) -> Result<StressOutcome, String> {
    let allow = cfg
        .params
        .get("allow_software")
        .and_then(ParamValue::as_bool)
        .unwrap_or(false);
    let gpu = Gpu::open(param_i64(cfg, "device_index", -1), allow).map_err(|e| {
        format!(
            "stress gpu: {}",
            e.to_string().trim_start_matches("skipped: ")
        )
    })?;
    let inject = param_i64(cfg, "inject_error", 0) != 0;
    let n = GROUPS * WORKGROUP;
    let fma = gpu.pipeline("stress-fma", kernels::FMA_F32);
    let out = gpu.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("stress-out"),
        size: u64::from(n) * 16,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let copy = gpu.pipeline("stress-copy", kernels::COPY);
    let storage =
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    let make = |label: &str| {
        gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: u64::from(WORDS) * 4,
            usage: storage,
            mapped_at_creation: false,
        })
    };
    let (src, dst) = (make("stress-src"), make("stress-dst"));
    let vec4s = WORDS / 4;
    let copy_groups = vec4s.div_ceil(WORKGROUP).min(4096);
    let copy_params = gpu.filled(
        "stress-copy-params",
        &[vec4s, copy_groups * WORKGROUP, 0, 0],
        wgpu::BufferUsages::UNIFORM,
    );
    let copy_bind = gpu.bind(&copy, &[&copy_params, &src, &dst]);

    let stopped = || cfg.stop.is_some_and(|f| f.load(Ordering::Relaxed));
    let (mut checks, mut errors, mut examples) = (0u64, 0u64, Vec::new());
    let mut error = |what: String, errors: &mut u64| {
        *errors += 1;
        if examples.len() < EXAMPLES {
            examples.push(what);
        }
    };
    let gflop_per_pass = f64::from(n) * kernels::fma_flops_per_invocation(ITERS) / 1e9;
    let start = Instant::now();
    let mut recording: Option<Instant> = None;
    let mut points = Vec::new();
    let mut window = (Instant::now(), 0.0f64);
    let mut pass = 0u32;
    loop {
        let now = Instant::now();
        if recording.is_none() && now.duration_since(start) >= cfg.burnin {
            recording = Some(now);
            window = (now, 0.0);
        }
        if let Some(t0) = recording
            && (now.duration_since(t0) >= cfg.duration || stopped())
        {
            break;
        }
        if recording.is_none() && stopped() {
            break;
        }
        pass = pass.wrapping_add(1);
        let corrupt = inject && recording.is_some() && points.is_empty() && window.1 == 0.0;
        // Compute: the FMA kernel with this pass's salt.
        let uniform = gpu.filled(
            "stress-params",
            &kernels::fma_params(false, ITERS, pass),
            wgpu::BufferUsages::UNIFORM,
        );
        let bind = gpu.bind(&fma, &[&uniform, &out]);
        gpu.run(&fma, &bind, GROUPS, 1).map_err(|e| e.to_string())?;
        let mut got: Vec<f32> = bytemuck::cast_slice(
            &gpu.read(&out, u64::from(n) * 16)
                .map_err(|e| e.to_string())?,
        )
        .to_vec();
        if corrupt {
            got[7] += 1.0;
        }
        for (k, v) in got.iter().enumerate() {
            let (i, lane) = ((k / 4) as u32, (k % 4) as u32);
            let want = kernels::fma_expected(false, ITERS, pass, i, lane);
            if *v != want {
                error(
                    format!("pass {pass}: FMA element {i} lane {lane} is {v}, expected {want}"),
                    &mut errors,
                );
            }
        }
        checks += got.len() as u64;
        // Memory: a new pattern up, copied on the device, back and checked.
        let pattern: Vec<u32> = (0..WORDS)
            .map(|w| w.wrapping_mul(2_654_435_761) ^ pass.rotate_left(7))
            .collect();
        gpu.queue
            .write_buffer(&src, 0, bytemuck::cast_slice(&pattern));
        gpu.run(&copy, &copy_bind, copy_groups, 1)
            .map_err(|e| e.to_string())?;
        let back = gpu
            .read(&dst, u64::from(WORDS) * 4)
            .map_err(|e| e.to_string())?;
        let words: &[u32] = bytemuck::cast_slice(&back);
        for (w, (a, b)) in words.iter().zip(&pattern).enumerate() {
            if a != b {
                error(
                    format!("pass {pass}: copied word {w} is {a:#x}, expected {b:#x}"),
                    &mut errors,
                );
            }
        }
        checks += u64::from(WORDS);
        if let Some(t0) = recording {
            window.1 += gflop_per_pass;
            let now = Instant::now();
            if now.duration_since(window.0) >= Duration::from_secs(1) {
                points.push(ThroughputPoint {
                    t_s: now.duration_since(t0).as_secs_f64(),
                    value: window.1 / now.duration_since(window.0).as_secs_f64(),
                });
                window = (now, 0.0);
            }
        }
    }
    let recorded = recording.map_or(0.0, |t0| t0.elapsed().as_secs_f64());
    if window.1 > 0.0 {
        let dt = window.0.elapsed().as_secs_f64();
        if dt > 0.0 {
            points.push(ThroughputPoint {
                t_s: recorded,
                value: window.1 / dt,
            });
        }
    }
    let mut warnings = vec![format!(
        "on {} ({} {}, {})",
        gpu.adapter.name, gpu.adapter.backend, gpu.adapter.device_type, gpu.adapter.driver
    )];
    if gpu.adapter.software {
        warnings.push(format!(
            "{} is a software device on the CPU, not a GPU",
            gpu.adapter.name
        ));
    }
    Ok(StressOutcome {
        unit: "GFLOP/s".into(),
        throughput: points,
        checks,
        errors,
        examples,
        warnings,
        duration_s: recorded,
    })
}
