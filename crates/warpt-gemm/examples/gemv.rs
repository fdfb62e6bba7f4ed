//! One-column products (a decode step's matrix-vector products), for
//! tuning how fast they read a packed matrix: `gemv ROWS K [COUNT]
//! [f32|f16] [THREADS]` multiplies COUNT packed `ROWS x K` matrices by a
//! vector (1, f32, 1), reading their panels in pairs where the kernel
//! has them (rows from 0) and one at a time (the same count of rows from
//! the second panel on, where no pair starts), alternately, and prints
//! each one's best rate in GB/s of the matrices read.
use std::time::Instant;

use warpt_gemm::{Element, Half, Kernel, MatMut, MatRef, PackedA, gemm_packed_rows};

/// Best seconds of `reps` passes of `pass`.
fn best(reps: usize, mut pass: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            pass();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

/// Pairs against single tiles on `count` matrices of `T`.
fn run<T: Element<Acc = f32>>(
    rows: usize,
    k: usize,
    count: usize,
    threads: usize,
    from: fn(f32) -> T,
) {
    let kernel = Kernel::<T>::for_rows(rows);
    let mr = kernel.mr;
    // One panel more than asked, for the singles' rows to start on it.
    let all = rows + mr;
    let w: Vec<T> = (0..all * k)
        .map(|i| from(((i * 7919) % 1000) as f32 * 1e-3))
        .collect();
    let x = vec![from(0.5); k];
    let ws: Vec<PackedA<T>> = (0..count)
        .map(|_| PackedA::with_kernel(kernel, MatRef::row_major(&w, all, k).expect("all x k")))
        .collect();
    let mut out = vec![0f32; rows];
    let mut pass = |first: usize| {
        for p in &ws {
            let c = MatMut::col_major(&mut out, rows, 1).expect("rows x 1");
            let b = MatRef::col_major(&x, k, 1).expect("k x 1");
            gemm_packed_rows(c, 1.0, p, first..first + rows, b, 0.0, threads).expect("a product");
        }
    };
    let bytes = (rows * k * size_of::<T>() * count) as f64;
    let (mut paired, mut single) = (f64::MAX, f64::MAX);
    for _ in 0..10 {
        paired = paired.min(best(2, || pass(0)));
        single = single.min(best(2, || pass(mr)));
    }
    println!(
        "{} {rows} x {k} x {count}, {threads} thread(s), {}: pairs {:.1} GB/s, single tiles {:.1} GB/s ({:.3}x)",
        T::NAME,
        kernel.name,
        bytes / paired / 1e9,
        bytes / single / 1e9,
        single / paired
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let num =
        |i: usize, default: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default);
    let (rows, k, count) = (num(1, 32000), num(2, 768), num(3, 1));
    let threads = num(5, 1);
    match args.get(4).map(String::as_str) {
        Some("f16") => run::<Half>(rows, k, count, threads, Half::from_f32),
        _ => run::<f32>(rows, k, count, threads, |v| v),
    }
}
