//! The DGEMM rate of warpt's GEMM engine (the one the LU's trailing updates
//! run on) at one size, for `scripts/bench-linpack`'s attribution of a
//! Linpack gap to GEMM or to the LU around it.
//!
//! `cargo run --release -p warpt-linpack --example dgemm -- N [REPS]` prints
//! `{"n": N, "gflops": median, "samples": [...]}`: C = A B with N x N fp64
//! matrices on every CPU, 2 N^3 flops per product, one discarded
//! warm-up product then REPS (default 5) timed ones, the last product's
//! sampled entries checked against their dot products.

use std::time::Instant;

use warpt_gemm::{MatMut, MatRef};

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .ok_or("usage: dgemm N [REPS]")?
        .parse()
        .map_err(|e| format!("N: {e}"))?;
    let reps: usize = match args.next() {
        Some(r) => r.parse().map_err(|e| format!("REPS: {e}"))?,
        None => 5,
    };
    let entries =
        |f: fn(usize, usize) -> f64| (0..n * n).map(|x| f(x % n, x / n)).collect::<Vec<f64>>();
    let a = entries(|i, j| ((i * 7 + j * 13) % 101) as f64 / 101.0 - 0.5);
    let b = entries(|i, j| ((i * 11 + j * 3) % 103) as f64 / 103.0 - 0.5);
    let mut c = vec![0.0f64; n * n];
    let mut samples = Vec::new();
    for rep in 0..=reps {
        let t = Instant::now();
        let out = MatMut::col_major(&mut c, n, n).map_err(|e| e.to_string())?;
        let a = MatRef::col_major(&a, n, n).map_err(|e| e.to_string())?;
        let b = MatRef::col_major(&b, n, n).map_err(|e| e.to_string())?;
        warpt_gemm::gemm(out, 1.0, a, b, 0.0, 0).map_err(|e| e.to_string())?;
        let gflops = 2.0 * (n as f64).powi(3) / t.elapsed().as_secs_f64() / 1e9;
        if rep > 0 {
            samples.push(gflops);
        }
    }
    // A rate is only worth printing for a right product: sampled entries
    // against their dot products, within the fp64 rounding bound.
    for s in 0..16 {
        let (i, j) = ((s * 7919) % n, (s * 104_729 + n / 2) % n);
        let (mut dot, mut scale) = (0.0f64, 0.0f64);
        for p in 0..n {
            dot += a[i + p * n] * b[p + j * n];
            scale += (a[i + p * n] * b[p + j * n]).abs();
        }
        let bound = 2.0 * n as f64 * f64::EPSILON * scale;
        if (c[i + j * n] - dot).abs() > bound {
            return Err(format!(
                "C[{i}][{j}] = {}, expected {dot} (bound {bound:.3e})",
                c[i + j * n]
            ));
        }
    }
    let mut sorted = samples.clone();
    sorted.sort_by(f64::total_cmp);
    let median = if sorted.is_empty() {
        f64::NAN
    } else if sorted.len() % 2 == 1 {
        sorted[sorted.len() / 2]
    } else {
        (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0
    };
    let list: Vec<String> = samples.iter().map(|s| format!("{s:.2}")).collect();
    println!(
        "{{\"n\": {n}, \"gflops\": {median:.2}, \"samples\": [{}]}}",
        list.join(", ")
    );
    Ok(())
}
