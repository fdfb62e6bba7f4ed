use super::*;

/// erf in f64 by its Taylor series (|x| < 3) or its asymptotic
/// continued fraction's limit, 1 (beyond, where f32 cannot tell).
fn erf64(x: f64) -> f64 {
    if x.abs() >= 3.5 {
        return x.signum();
    }
    let (mut term, mut sum) = (x, x);
    for n in 1..200 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn erf_and_exp_are_within_a_few_ulps_of_f64() {
    let mut worst_erf = 0f64;
    let mut worst_exp = 0f64;
    for i in -6000..=6000 {
        let x = i as f32 / 1000.0;
        worst_erf = worst_erf.max((erf::<false>(x) as f64 - erf64(x as f64)).abs());
        let a = x * 14.0;
        let (want, got) = ((a as f64).exp(), exp::<false>(a) as f64);
        worst_exp = worst_exp.max(((got - want) / want).abs());
    }
    assert!(worst_erf < 1e-6, "erf off by {worst_erf:e}");
    assert!(worst_exp < 1e-6, "exp off by {worst_exp:e} (relative)");
}

#[test]
fn axpy_is_the_plain_sum() {
    // 37 elements: a tail past every vector width; small integers, so
    // every rounding gives the same float.
    let a: Vec<f32> = (0..37).map(|i| (i % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..37).map(|i| (i % 5) as f32 - 2.0).collect();
    let mut y = b.clone();
    axpy(2.0, &a, &mut y);
    for ((y, a), b) in y.iter().zip(&a).zip(&b) {
        assert_eq!(*y, b + 2.0 * a);
    }
}

#[test]
fn exp_shifted_is_exp_and_its_sum() {
    // 37 elements: a tail past every vector width.
    let xs: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 0.53).collect();
    let mut e = xs.clone();
    let sum = exp_shifted(&mut e, 2.5);
    let mut want_sum = 0f64;
    for (x, got) in xs.iter().zip(&e) {
        let want = (f64::from(*x) - 2.5).exp();
        want_sum += want;
        assert!(
            ((f64::from(*got) - want) / want).abs() < 1e-6,
            "e^({x} - 2.5) = {got}"
        );
    }
    assert!(
        (f64::from(sum) - want_sum).abs() < 1e-5 * want_sum,
        "{sum} vs {want_sum}"
    );
    assert!((f64::from(exp_of(-1.5)) - (-1.5f64).exp()).abs() < 1e-7);
}

#[test]
fn silu_mul_matches_f64_on_every_path() {
    // 37 elements (a tail past every vector width), from far below 0
    // (where e^-g overflows f32) to far above.
    let gate: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 6.1).collect();
    let up: Vec<f32> = (0..37).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.3).collect();
    let mut slots = vec![MaybeUninit::uninit(); 37];
    let got = silu_mul(&gate, &up, &mut slots).to_vec();
    let mut slots = vec![MaybeUninit::uninit(); 37];
    silu_mul_body::<false>(&gate, &up, &mut slots);
    // SAFETY: the body wrote all 37.
    let plain = unsafe { assume_init(&mut slots) }.to_vec();
    for i in 0..37 {
        let g = f64::from(gate[i]);
        let want = g / (1.0 + (-g).exp()) * f64::from(up[i]);
        let tol = 1e-6 * want.abs().max(1e-3);
        assert!(
            (f64::from(got[i]) - want).abs() <= tol,
            "silu({}) * {} = {}, not {want}",
            gate[i],
            up[i],
            got[i]
        );
        assert!(
            (got[i] - plain[i]).abs() <= 1e-6 * got[i].abs(),
            "vector and baseline differ at {i}"
        );
    }
}

#[test]
fn rope_pairs_turn_each_pair_by_its_angle() {
    let x: Vec<f32> = (0..8).map(|i| i as f32 - 3.5).collect();
    let angles = [0.0f64, 0.5, 1.5, -2.0];
    let cos: Vec<f32> = angles.iter().map(|a| a.cos() as f32).collect();
    let sin: Vec<f32> = angles.iter().map(|a| a.sin() as f32).collect();
    let mut slots = vec![MaybeUninit::uninit(); 8];
    let got = rope_pairs(&x, &cos, &sin, &mut slots);
    for (j, a) in angles.iter().enumerate() {
        let (x0, x1) = (f64::from(x[2 * j]), f64::from(x[2 * j + 1]));
        let want = [x0 * a.cos() - x1 * a.sin(), x0 * a.sin() + x1 * a.cos()];
        for (g, w) in got[2 * j..2 * j + 2].iter().zip(want) {
            assert!((f64::from(*g) - w).abs() < 1e-6, "pair {j}: {g} vs {w}");
        }
    }
}

#[test]
fn rms_norm_matches_f64_on_every_path() {
    // 397 elements: a tail past every vector width.
    let h = 397;
    let xs: Vec<f32> = (0..h)
        .map(|i| 0.4 + ((i * 37 % 101) as f32 - 50.0) * 0.03)
        .collect();
    let weight: Vec<f32> = (0..h).map(|i| 0.5 + (i % 7) as f32 * 0.1).collect();
    let eps = 1e-5f32;
    let ms = xs.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / h as f64;
    let inv = 1.0 / (ms + f64::from(eps)).sqrt();
    let mut slots = vec![MaybeUninit::uninit(); h];
    let got = rms_norm(&xs, &weight, eps, &mut slots).to_vec();
    let mut slots = vec![MaybeUninit::uninit(); h];
    rms_norm_body(&xs, &weight, eps, &mut slots);
    // SAFETY: the body wrote all h.
    let plain = unsafe { assume_init(&mut slots) }.to_vec();
    for i in 0..h {
        let want = f64::from(xs[i]) * inv * f64::from(weight[i]);
        assert!(
            (f64::from(got[i]) - want).abs() < 1e-6,
            "element {i}: {}, not {want}",
            got[i]
        );
        assert!((got[i] - plain[i]).abs() < 1e-6, "paths differ at {i}");
    }
}

#[test]
fn gelu_and_softmax_match_f64_on_every_path() {
    // 37 elements: a tail past every vector width.
    let xs: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 0.37).collect();
    let mut g = xs.clone();
    gelu_erf(&mut g);
    let mut plain = xs.clone();
    gelu_body::<false>(&mut plain);
    for ((x, a), b) in xs.iter().zip(&g).zip(&plain) {
        let want = 0.5 * *x as f64 * (1.0 + erf64(*x as f64 / std::f64::consts::SQRT_2));
        assert!(
            (*a as f64 - want).abs() < 1e-5,
            "gelu({x}) = {a}, not {want}"
        );
        assert!((a - b).abs() < 1e-6, "vector and baseline gelu({x}) differ");
    }
    let keep: Vec<f32> = (0..37)
        .map(|i| if i % 5 == 3 { 0.0 } else { 1.0 })
        .collect();
    let mut s = xs.clone();
    softmax_masked(&mut s, &keep);
    let max = xs.iter().copied().fold(f32::MIN, f32::max) as f64;
    let denom: f64 = xs
        .iter()
        .zip(&keep)
        .map(|(x, k)| (*x as f64 - max).exp() * *k as f64)
        .sum();
    for ((x, k), got) in xs.iter().zip(&keep).zip(&s) {
        let want = (*x as f64 - max).exp() * *k as f64 / denom;
        assert!(
            (*got as f64 - want).abs() < 1e-6,
            "softmax at {x}: {got}, not {want}"
        );
        if *k == 0.0 {
            assert_eq!(*got, 0.0, "a masked position has weight");
        }
    }
    // Masked positions far above the rest (in a vector's lanes and
    // the tail) are not the shift: e^(x - 200) of the kept ones would
    // vanish.
    let mut high = xs.clone();
    for (x, k) in high.iter_mut().zip(&keep) {
        if *k == 0.0 {
            *x = 200.0;
        }
    }
    let weights = high.clone();
    softmax_masked(&mut high, &keep);
    for (a, b) in high.iter().zip(&s) {
        assert!((a - b).abs() < 1e-6, "{a} vs {b} with high masked values");
    }
    // Attention's weights: the same softmax before its division, in
    // bf16, for a block of two rows of the scores doubled at a scale of a
    // half; 0 where masked (the masked values still far above), at most 1.
    let scores: Vec<f32> = weights.iter().chain(&weights).map(|x| 2.0 * x).collect();
    let mut out = vec![warpt_gemm::Bf16(0); 74];
    let mut sums = [0f32; 2];
    attention_weights(&scores, &keep, 0.5, &mut out, &mut sums);
    for (row, sum) in out.chunks_exact(37).zip(sums) {
        assert!(sum >= 1.0, "the sum {sum} misses the maximum's e^0");
        for ((w, k), p) in row.iter().zip(&keep).zip(&s) {
            let w = w.to_f32();
            assert!(w <= 1.0 && (*k != 0.0 || w == 0.0), "weight {w}");
            // bf16 rounds to half its spacing: at most 2^-8 of a weight.
            assert!((w / sum - p).abs() <= p * 4e-3 + 1e-7, "{w} / {sum} vs {p}");
        }
    }
}

#[test]
fn gelu_to_bf16_is_gelu_then_the_rounding() {
    // 2500 values: chunks of the buffer and a tail.
    let xs: Vec<f32> = (0..2500).map(|i| (i as f32 - 1250.0) * 0.0043).collect();
    let mut want = xs.clone();
    gelu_erf(&mut want);
    let want: Vec<u16> = want
        .iter()
        .map(|v| warpt_gemm::Bf16::from_f32(*v).0)
        .collect();
    let mut got = vec![warpt_gemm::Bf16(0); xs.len()];
    gelu_erf_to_bf16(&xs, &mut got);
    let got: Vec<u16> = got.iter().map(|v| v.0).collect();
    assert_eq!(got, want);
}

#[test]
fn layer_norm_matches_f64_on_every_path() {
    // 397 elements (a tail past every vector width), off-centre and
    // spread as a hidden state is, with a residual.
    let h = 397;
    let xs: Vec<f32> = (0..h)
        .map(|i| 3.0 + ((i * 37 % 101) as f32 - 50.0) * 0.21)
        .collect();
    let res: Vec<f32> = (0..h).map(|i| ((i * 11 % 13) as f32 - 6.0) * 0.5).collect();
    let weight: Vec<f32> = (0..h).map(|i| 0.5 + (i % 7) as f32 * 0.1).collect();
    let bias: Vec<f32> = (0..h).map(|i| (i % 5) as f32 * 0.01 - 0.02).collect();
    let eps = 1e-12f32;
    let summed: Vec<f64> = xs.iter().zip(&res).map(|(x, r)| f64::from(x + r)).collect();
    let mean = summed.iter().sum::<f64>() / h as f64;
    let var = summed.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / h as f64;
    let mut got = xs.clone();
    layer_norm(&mut got, Some(&res), &weight, &bias, eps);
    let mut plain = xs.clone();
    layer_norm_body(&mut plain, Some(&res), &weight, &bias, eps);
    for i in 0..h {
        let want = (summed[i] - mean) / (var + f64::from(eps)).sqrt() * f64::from(weight[i])
            + f64::from(bias[i]);
        assert!(
            (f64::from(got[i]) - want).abs() < 1e-5,
            "element {i}: {}, not {want}",
            got[i]
        );
        assert!(
            (got[i] - plain[i]).abs() < 1e-5,
            "vector and baseline differ at {i}"
        );
    }
    // Without a residual: the row alone.
    let mut alone = xs.clone();
    layer_norm(&mut alone, None, &weight, &bias, eps);
    let mean = xs.iter().map(|&v| f64::from(v)).sum::<f64>() / h as f64;
    let var = xs
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / h as f64;
    let want = (f64::from(xs[5]) - mean) / (var + f64::from(eps)).sqrt() * f64::from(weight[5])
        + f64::from(bias[5]);
    assert!(
        (f64::from(alone[5]) - want).abs() < 1e-5,
        "{} vs {want}",
        alone[5]
    );
}

/// A decode step's attention in f64: each query's softmax-weighted sum
/// of the values.
fn attend_one_f64(q: &[f32], k: &[f32], v: &[f32], hd: usize, scale: f32) -> Vec<f64> {
    let keys = k.len() / hd;
    let mut out = Vec::new();
    for qr in q.chunks_exact(hd) {
        let s: Vec<f64> = k
            .chunks_exact(hd)
            .map(|kj| {
                qr.iter()
                    .zip(kj)
                    .map(|(a, b)| f64::from(*a) * f64::from(*b))
                    .sum::<f64>()
            })
            .map(|d| d * f64::from(scale))
            .collect();
        let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = s.iter().map(|x| (x - max).exp()).collect();
        let total: f64 = e.iter().sum();
        out.extend((0..hd).map(|d| {
            (0..keys)
                .map(|j| e[j] / total * f64::from(v[j * hd + d]))
                .sum::<f64>()
        }));
    }
    out
}

#[test]
fn attend_one_matches_f64_on_every_path() {
    // Every path this CPU runs: the dispatched one, the generic body, and
    // on x86 each block kernel the CPU has (whatever attend_one picks).
    type Path = fn(&[f32], &[f32], &[f32], usize, f32, &mut [f32], &mut [f32]) -> bool;
    let paths: [(&str, Path); 4] = [
        ("attend_one", |q, k, v, hd, s, sc, o| {
            attend_one(q, k, v, hd, s, sc, o);
            true
        }),
        ("generic body", |q, k, v, hd, s, sc, o| {
            attention::attend_one_body::<false>(q, k, v, hd, s, sc, o);
            true
        }),
        ("AVX-512 blocks", |q, k, v, hd, s, sc, o| {
            #[cfg(target_arch = "x86_64")]
            if decode_avx512::takes(hd) && std::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F; the sizes are attend_one's.
                unsafe { decode_avx512::attend(q, k, v, hd, s, sc, o) };
                return true;
            }
            let _ = (q, k, v, hd, s, sc, o);
            false
        }),
        ("AVX2 blocks", |q, k, v, hd, s, sc, o| {
            #[cfg(target_arch = "x86_64")]
            if decode_avx2::takes(hd)
                && std::is_x86_feature_detected!("avx2")
                && std::is_x86_feature_detected!("fma")
            {
                // SAFETY: the CPU has AVX2 and FMA; the sizes are attend_one's.
                unsafe { decode_avx2::attend(q, k, v, hd, s, sc, o) };
                return true;
            }
            let _ = (q, k, v, hd, s, sc, o);
            false
        }),
    ];
    // Heads the blocks take (multiples of 8 or 16 up to 128) and some
    // they leave to the generic body; key counts below, at and past a
    // block of 8 and of 16; groups of one to four queries.
    for hd in [8, 16, 40, 64, 80, 128, 136, 256] {
        for keys in [1, 7, 8, 9, 15, 16, 17, 100] {
            for g in [1, 3, 4] {
                let val = |i: usize, m: usize| ((i * m % 97) as f32 - 48.0) * 0.02;
                let q: Vec<f32> = (0..g * hd).map(|i| val(i, 31)).collect();
                let k: Vec<f32> = (0..keys * hd).map(|i| val(i, 17)).collect();
                let v: Vec<f32> = (0..keys * hd).map(|i| val(i, 13)).collect();
                let scale = 1.0 / (hd as f32).sqrt();
                let want = attend_one_f64(&q, &k, &v, hd, scale);
                for (name, path) in paths {
                    let mut scores = vec![0f32; g * keys];
                    let mut got = vec![f32::NAN; g * hd];
                    if !path(&q, &k, &v, hd, scale, &mut scores, &mut got) {
                        continue;
                    }
                    for (i, w) in want.iter().enumerate() {
                        assert!(
                            (f64::from(got[i]) - w).abs() < 1e-5,
                            "{name}: hd {hd}, {keys} keys, {g} queries, value {i}: {}, not {w}",
                            got[i]
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn the_f16_cache_gives_the_f32_blocks_result_on_its_widened_values() {
    // attend_one_f16 widens each value exactly as it loads it, in the
    // same blocks and order as the f32 kernel: the same bits.
    let mut ran = 0;
    for hd in [16, 64, 128] {
        if !attends_f16(hd) {
            eprintln!("f16 decode attention for heads of {hd}: not run here (no AVX-512F)");
            continue;
        }
        for keys in [1, 15, 16, 17, 100] {
            for g in [1, 3] {
                let val = |i: usize, m: usize| ((i * m % 97) as f32 - 48.0) * 0.021;
                let q: Vec<f32> = (0..g * hd).map(|i| val(i, 31)).collect();
                let k: Vec<half::f16> = (0..keys * hd)
                    .map(|i| half::f16::from_f32(val(i, 17)))
                    .collect();
                let v: Vec<half::f16> = (0..keys * hd)
                    .map(|i| half::f16::from_f32(val(i, 13)))
                    .collect();
                let (kw, vw): (Vec<f32>, Vec<f32>) = (
                    k.iter().map(|x| x.to_f32()).collect(),
                    v.iter().map(|x| x.to_f32()).collect(),
                );
                let scale = 1.0 / (hd as f32).sqrt();
                let (mut s16, mut s32) = (vec![0f32; g * keys], vec![0f32; g * keys]);
                let (mut got, mut want) = (vec![f32::NAN; g * hd], vec![f32::NAN; g * hd]);
                attend_one_f16(&q, &k, &v, hd, scale, &mut s16, &mut got);
                attend_one(&q, &kw, &vw, hd, scale, &mut s32, &mut want);
                let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "hd {hd}, {keys} keys, {g} queries");
                let f64_want = attend_one_f64(&q, &kw, &vw, hd, scale);
                assert!((f64::from(got[0]) - f64_want[0]).abs() < 1e-5);
                ran += 1;
            }
        }
    }
    if ran == 0 {
        assert!(!attends_f16(64));
    }
}
