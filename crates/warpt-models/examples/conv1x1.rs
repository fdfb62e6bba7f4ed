//! A 1×1 convolution's product on `PackedMatrix::matmul_t_then`, for
//! tuning: `conv1x1 M K N REPS` multiplies `M` activation rows of `K`
//! channels by a packed `N × K` matrix with a bias, on every core, and
//! prints the median time and rate. `MODE` adds what ResNet-50's block
//! ends ask: `a` a shortcut added, `r` the ReLU, `s` streaming stores (the
//! result starts on a cache line here).

use std::time::Instant;

use warpt_models::packed::{PackedMatrix, Then};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse().expect("M K N REPS: counts"))
        .collect();
    let [m, k, n, reps] = args[..] else {
        panic!("usage: conv1x1 M K N REPS");
    };
    let mode = std::env::var("MODE").unwrap_or_default();
    let value = |i: usize, p: usize| ((i * 7919) % p) as f32 / p as f32 - 0.5;
    let w: Vec<f32> = (0..n * k).map(|i| value(i, 101)).collect();
    let bias: Vec<f32> = (0..n).map(|i| value(i, 7)).collect();
    let matrix = PackedMatrix::from_rows(&w, n, k).with_bias(&bias);
    let x: Vec<f32> = (0..m * k).map(|i| value(i, 97)).collect();
    let add: Vec<f32> = (0..m * n).map(|i| value(i, 89)).collect();
    // The result from a cache line on, as streaming stores need.
    let mut backing = vec![0f32; m * n + 16];
    let skip = backing.as_ptr().align_offset(64);
    let out = &mut backing[skip..skip + m * n];
    let then = Then {
        add: mode.contains('a').then_some(&add[..]),
        relu: mode.contains('r'),
        stream: mode.contains('s'),
    };
    let mut secs: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let t0 = Instant::now();
            matrix.matmul_t_then(&x, m, out, then);
            t0.elapsed().as_secs_f64()
        })
        .collect();
    secs.sort_by(f64::total_cmp);
    let median = secs[secs.len() / 2];
    let gflops = 2.0 * (m * k * n) as f64 / median / 1e9;
    println!(
        "m={m} k={k} n={n} mode={mode} median_ms={:.3} gflops={gflops:.1}",
        median * 1e3
    );
}
