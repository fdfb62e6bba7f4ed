//! The engine's rate on square row-major products, for tuning:
//! `rate f64|f32|bf16|f16|i8 N REPS SAMPLES [THREADS] [KERNEL-ISA]`; prints
//! `precision=.. n=.. median_gflops=.. best_gflops=.. kernel=..` as
//! bench/gemm_peer.c does for OpenBLAS. Environment `M` and `K` make the
//! product `M x K` times `K x N` instead (row-major, as a layer's
//! activations times its weights).

use std::time::Instant;

use warpt_gemm::{Bf16, Element, Half, Isa, Kernel, MatMut, MatRef, Scalar, gemm_with};

fn run<T: Element>(
    n: usize,
    reps: usize,
    samples: usize,
    threads: usize,
    isa: Option<Isa>,
    from: fn(f64) -> T,
) {
    // TILE picks a kernel by its name's tile (`32x12`); else the ISA's
    // best, else the tile that pads the rows least.
    let tile = std::env::var("TILE").ok();
    let mut kernel = *tile
        .and_then(|t| Kernel::<T>::all().find(|k| k.name.ends_with(&format!(" {t}"))))
        .or_else(|| isa.and_then(Kernel::<T>::for_isa))
        .unwrap_or_else(|| Kernel::<T>::for_rows(n));
    // Blocking overrides, for tuning: KC, MC, NC.
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
    kernel.kc = env("KC").unwrap_or(kernel.kc);
    kernel.mc = env("MC").unwrap_or(kernel.mc);
    kernel.nc = env("NC").unwrap_or(kernel.nc);
    let kernel = &kernel;
    let mut seed = 7u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        from((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
    };
    let (m, k) = (env("M").unwrap_or(n), env("K").unwrap_or(n));
    let a: Vec<T> = (0..m * k).map(|_| next()).collect();
    let b: Vec<T> = (0..k * n).map(|_| next()).collect();
    let mut c = vec![T::Acc::ZERO; m * n];
    let mut secs = Vec::new();
    for s in 0..=samples {
        let t0 = Instant::now();
        for _ in 0..reps {
            let (av, bv) = (
                MatRef::row_major(&a, m, k).expect("a"),
                MatRef::row_major(&b, k, n).expect("b"),
            );
            gemm_with(
                kernel,
                MatMut::row_major(&mut c, m, n).expect("c"),
                T::Acc::ONE,
                av,
                bv,
                T::Acc::ZERO,
                threads,
            )
            .expect("shapes");
        }
        if s > 0 {
            secs.push(t0.elapsed().as_secs_f64());
        }
    }
    secs.sort_by(f64::total_cmp);
    let work = 2.0 * (m * n * k) as f64 * reps as f64;
    println!(
        "precision={} n={n} median_gflops={:.3} best_gflops={:.3} kernel=\"{}\"",
        T::NAME,
        work / secs[secs.len() / 2] / 1e9,
        work / secs[0] / 1e9,
        kernel.name
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let (n, reps, samples, threads) = (arg(2, 1024), arg(3, 3), arg(4, 5), arg(5, 0));
    let isa = args
        .get(6)
        .and_then(|s| Isa::ALL.into_iter().find(|i| i.name() == s));
    match args.get(1).map(String::as_str) {
        Some("f32") => run::<f32>(n, reps, samples, threads, isa, |x| x as f32),
        Some("bf16") => run::<Bf16>(n, reps, samples, threads, isa, |x| Bf16::from_f32(x as f32)),
        Some("f16") => run::<Half>(n, reps, samples, threads, isa, |x| Half::from_f32(x as f32)),
        Some("i8") => run::<i8>(n, reps, samples, threads, isa, |x| (x * 255.0) as i8),
        _ => run::<f64>(n, reps, samples, threads, isa, |x| x),
    }
}
