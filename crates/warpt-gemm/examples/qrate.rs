//! The quantized product's rate on this CPU, per kernel:
//! `qrate q8_0|q4_0 ROWS K N [REPS]` multiplies a `ROWS × K` matrix of
//! random blocks by `N` activation rows on one thread and prints GB/s of
//! weights read and GOP/s (two per multiply-add), then the time the
//! `N × K` activations take to quantize, per instruction set.

use std::time::Instant;

use warpt_gemm::Isa;
use warpt_gemm::quant::{BLOCK, QActs, QKernel, QMatrix, QType};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let qtype = match args.first().map(String::as_str) {
        Some("q4_0") => QType::Q4_0,
        _ => QType::Q8_0,
    };
    let (rows, k, n, reps) = (arg(1, 4096), arg(2, 4096), arg(3, 1), arg(4, 50));
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let bytes: Vec<u8> = (0..rows * k / BLOCK * qtype.ggml_block_bytes())
        .map(|i| {
            if i % qtype.ggml_block_bytes() == 1 {
                0x10
            } else {
                next() as u8 & 0x7f
            }
        })
        .collect();
    let m = QMatrix::from_ggml(qtype, &bytes, rows, k).expect("repack");
    let x: Vec<f32> = (0..n * k)
        .map(|_| (next() % 1000) as f32 / 500.0 - 1.0)
        .collect();
    let acts = QActs::quantize(&x, n, k);
    let mut y = vec![0f32; n * rows];
    for kernel in QKernel::all() {
        if !m.runs_on(kernel) {
            continue;
        }
        m.product_with(kernel, &acts, 0..m.groups(), &mut y);
        let mut best = f64::INFINITY;
        for _ in 0..reps {
            let t = Instant::now();
            m.product_with(kernel, &acts, 0..m.groups(), &mut y);
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{qtype:?} {kernel:?} {rows}x{k} n {n}: {:.3} ms, {:.1} GB/s, {:.1} GOP/s",
            best * 1e3,
            m.bytes() as f64 / best / 1e9,
            2.0 * (rows * k * n) as f64 / best / 1e9
        );
    }
    for isa in [Isa::Portable, Isa::Avx2] {
        if !isa.available() {
            continue;
        }
        let mut best = f64::INFINITY;
        for _ in 0..reps {
            let t = Instant::now();
            std::hint::black_box(QActs::quantize_with(isa, std::hint::black_box(&x), n, k));
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "activations {n}x{k} quantized on {isa:?}: {:.2} us, {:.2} ns a value",
            best * 1e6,
            best * 1e9 / (n * k) as f64
        );
    }
}
