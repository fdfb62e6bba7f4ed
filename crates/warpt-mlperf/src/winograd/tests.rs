//! Winograd's convolution against its definition.

#![allow(clippy::unwrap_used)]

use std::sync::Mutex;

use warpt_models::packed::{PackedMatrix, Precision};

use super::*;

/// The convolution by its definition, in f64.
fn direct(x: &[f32], s: Shape, ci: usize, co: usize, k: &[f64]) -> Vec<f64> {
    let mut out = vec![0f64; s.n * s.h * s.w * co];
    for img in 0..s.n {
        for y in 0..s.h {
            for xx in 0..s.w {
                for o in 0..co {
                    let mut acc = 0f64;
                    for ky in 0..3 {
                        for kx in 0..3 {
                            let (iy, ix) = (y as isize + ky - 1, xx as isize + kx - 1);
                            if iy < 0 || ix < 0 || iy >= s.h as isize || ix >= s.w as isize {
                                continue;
                            }
                            let px = ((img * s.h + iy as usize) * s.w + ix as usize) * ci;
                            for i in 0..ci {
                                let tap = ((o * ci + i) * 3 + ky as usize) * 3 + kx as usize;
                                acc += x[px + i] as f64 * k[tap];
                            }
                        }
                    }
                    out[((img * s.h + y) * s.w + xx) * co + o] = acc;
                }
            }
        }
    }
    out
}

#[test]
fn an_empty_batch_writes_nothing() {
    let conv = Winograd::new(4, 3, |_, _| [1.0; 9], Precision::F32);
    let s = Shape { n: 0, h: 5, w: 5 };
    let fused = Fused {
        relu_in: false,
        bias: &[0.5; 4],
        relu_out: true,
    };
    for in_pieces in [false, true] {
        let mut scratch = Scratch::default();
        conv.forward_as(&[], s, fused, &mut [], &mut scratch, in_pieces);
        assert!(scratch.whole.v.is_empty() && scratch.whole.m.is_empty());
        assert!(scratch.pieces.is_empty());
    }
}

#[test]
fn in_bf16_is_near_the_direct_convolution() {
    // F(2×2, 3×3), the one ResNet-50 runs in bf16 (F(4×4)'s transforms
    // scale values by up to 100 and back: bf16's rounding of them came
    // out larger than the result). The transformed input and kernels
    // rounded to bf16 (8 bits):
    // within bf16's rounding of the largest output, and not equal to
    // the f32 result; on a CPU with bf16 products the input
    // transform writes bf16 itself.
    let (s, ci, co) = (Shape { n: 2, h: 7, w: 6 }, 40, 24);
    let k: Vec<f64> = (0..co * ci * 9)
        .map(|i| ((i * 7) % 19) as f64 / 8.0 - 1.1 + (i % 7) as f64 / 997.0)
        .collect();
    let x: Vec<f32> = (0..s.n * s.h * s.w * ci)
        .map(|i| ((i * 5) % 23) as f32 / 4.0 - 2.7 + (i % 11) as f32 / 1013.0)
        .collect();
    let kernel = |o: usize, i: usize| std::array::from_fn(|t| k[(o * ci + i) * 9 + t]);
    let bias = vec![0.25f32; co];
    let fused = Fused {
        relu_in: false,
        bias: &bias,
        relu_out: false,
    };
    let run = |precision, in_pieces| {
        let conv = Winograd::new(co, ci, kernel, precision);
        let mut out = vec![f32::NAN; s.n * s.h * s.w * co];
        let mut scratch = Scratch::default();
        conv.forward_as(&x, s, fused, &mut out, &mut scratch, in_pieces);
        let native = conv.u.iter().all(PackedMatrix::multiplies_bf16);
        let used = if in_pieces {
            let piece = scratch.pieces.iter().map(|p| p.lock().unwrap());
            let (f32s, bf16s) = piece.fold((0, 0), |(f, b), p| (f + p.v.len(), b + p.v_bf16.len()));
            (f32s > 0, bf16s > 0)
        } else {
            (
                !scratch.whole.v.is_empty(),
                !scratch.whole.v_bf16.is_empty(),
            )
        };
        assert_eq!(
            used,
            (!native, native),
            "{precision:?}, in pieces {in_pieces}"
        );
        out
    };
    for in_pieces in [false, true] {
        let (f32_out, bf16_out) = (
            run(Precision::F32, in_pieces),
            run(Precision::Bf16, in_pieces),
        );
        let want = direct(&x, s, ci, co, &k);
        let scale = want.iter().fold(1f64, |a, b| a.max(b.abs()));
        let mut worst = 0f64;
        for (j, (got, want)) in bf16_out.iter().zip(&want).enumerate() {
            let err = (*got as f64 - (want + 0.25)).abs();
            assert!(err <= 2e-2 * scale, "value {j}: {got} vs {want}");
            worst = worst.max(err);
        }
        assert!(worst > 1e-5 * scale, "bf16 rounded nothing: {worst}");
        assert_ne!(f32_out, bf16_out);
    }
}

#[test]
fn equals_the_direct_convolution() {
    // Even and odd sides (a last tile half outside), one and several
    // images, channel counts off every vector width, with and without
    // the fused bias and ReLUs, a whole batch a step and in pieces;
    // in a pool of three threads.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let shapes = [
        (1, 4, 4, 3, 5),
        (2, 7, 5, 17, 9),
        (3, 1, 1, 8, 4),
        (1, 6, 9, 33, 70),
        // Several pieces an image (3 tile rows of 10 each), the last
        // one row, half outside.
        (2, 19, 40, 64, 70),
    ];
    let relus = [false, true, false, true, true];
    let cases = shapes.into_iter().zip(relus);
    for (((n, h, w, ci, co), relu), tile) in cases.flat_map(|c| [(c, Tile::F2), (c, Tile::F4)]) {
        let s = Shape { n, h, w };
        let k: Vec<f64> = (0..co * ci * 9)
            .map(|i| ((i * 7) % 19) as f64 / 8.0 - 1.1)
            .collect();
        let x: Vec<f32> = (0..n * h * w * ci)
            .map(|i| ((i * 5) % 23) as f32 / 4.0 - 2.7)
            .collect();
        let bias: Vec<f32> = (0..co).map(|i| (i % 3) as f32 - 1.0).collect();
        let conv = Winograd::with_tile(
            tile,
            co,
            ci,
            |o, i| std::array::from_fn(|t| k[(o * ci + i) * 9 + t]),
            Precision::F32,
        );
        let fused = Fused {
            relu_in: relu,
            bias: &bias,
            relu_out: relu,
        };
        for in_pieces in [false, true] {
            let mut out = vec![f32::NAN; n * h * w * co];
            // Scratch left dirty by a larger call.
            let dirty = || Buffers {
                v: vec![f32::NAN; 20_000],
                v_bf16: Vec::new(),
                m: vec![f32::NAN; 20_000],
            };
            let mut scratch = Scratch {
                whole: dirty(),
                pieces: (0..3).map(|_| Mutex::new(dirty())).collect(),
            };
            pool.install(|| conv.forward_as(&x, s, fused, &mut out, &mut scratch, in_pieces));
            let act = |v: f32| if relu { v.max(0.0) } else { v };
            let xr: Vec<f32> = x.iter().map(|&v| act(v)).collect();
            let want = direct(&xr, s, ci, co, &k);
            let scale = want.iter().fold(1f64, |a, b| a.max(b.abs()));
            let mut clipped = 0;
            let mut worst = 0f64;
            for (j, (got, want)) in out.iter().zip(&want).enumerate() {
                let want = want + bias[j % co] as f64;
                let want = if relu { want.max(0.0) } else { want };
                clipped += usize::from(relu && want == 0.0);
                let err = (*got as f64 - want).abs();
                worst = worst.max(err);
                assert!(
                    err <= 1e-5 * scale,
                    "{tile:?} {n}x{h}x{w}, {ci} -> {co}, relu {relu}, in pieces {in_pieces}: value {j}: {got} vs {want}"
                );
            }
            // F(4×4)'s transforms cost it a few bits: more than F(2×2)'s
            // rounding, still far inside the bound (3e-6 here).
            if tile == Tile::F4 && h > 1 {
                assert!(
                    worst > 5e-7 * scale,
                    "{n}x{h}x{w}: F(4x4) as exact as F(2x2)?"
                );
            }
            // The ReLUs had something to clip.
            assert!(!relu || clipped > 0, "{n}x{h}x{w}: nothing clipped");
        }
    }
}
