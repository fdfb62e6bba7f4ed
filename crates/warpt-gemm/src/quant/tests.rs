use super::*;

/// A small xorshift: the tests' weights and activations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn f32(&mut self) -> f32 {
        (self.next() % 20_001) as f32 / 10_000.0 - 1.0
    }
}

/// `rows × k` GGML blocks of `qtype` with random scales and weights
/// (q8_0's over the whole byte range, -128 included when `min`).
fn blocks(qtype: QType, rows: usize, k: usize, min: bool, rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rows * k / BLOCK {
        let d = half::f16::from_f32(rng.f32() * 0.05);
        out.extend(d.to_le_bytes());
        for _ in 0..qtype.ggml_block_bytes() - 2 {
            let mut byte = rng.next() as u8;
            if qtype == QType::Q8_0 && !min && byte == 0x80 {
                byte = 0x81;
            }
            out.push(byte);
        }
    }
    out
}

/// Row `r`'s weights and scales as GGML defines them, from its blocks.
fn ggml_row(qtype: QType, bytes: &[u8], r: usize, k: usize) -> Vec<(f64, [i32; BLOCK])> {
    let bb = qtype.ggml_block_bytes();
    (0..k / BLOCK)
        .map(|b| {
            let block = &bytes[(r * k / BLOCK + b) * bb..][..bb];
            let d = f64::from(half::f16::from_le_bytes([block[0], block[1]]).to_f32());
            let mut w = [0; BLOCK];
            for j in 0..BLOCK {
                w[j] = match qtype {
                    QType::Q8_0 => i32::from(block[2 + j] as i8),
                    QType::Q4_0 if j < 16 => i32::from(block[2 + j] & 0x0f) - 8,
                    QType::Q4_0 => i32::from(block[2 + j - 16] >> 4) - 8,
                };
            }
            (d, w)
        })
        .collect()
}

/// The product in f64 from GGML's definition of both operands' blocks.
fn reference(qtype: QType, bytes: &[u8], rows: usize, k: usize, acts: &QActs) -> Vec<f64> {
    let mut y = vec![0f64; acts.n() * rows];
    for r in 0..rows {
        for (b, (dw, w)) in ggml_row(qtype, bytes, r, k).into_iter().enumerate() {
            for t in 0..acts.n() {
                let (dx, _, x) = acts.block(t, b);
                let dot: i32 = w.iter().zip(x).map(|(w, x)| w * i32::from(*x)).sum();
                y[t * rows + r] += dw * f64::from(dx) * f64::from(dot);
            }
        }
    }
    y
}

#[test]
fn every_kernel_gives_the_blocks_product_and_all_agree_to_the_bit() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for qtype in [QType::Q8_0, QType::Q4_0] {
        for (rows, k, n) in [
            (16, 32, 1),
            (40, 96, 5),
            (1, 64, 9),
            (33, 128, 4),
            (70, 256, 3),
            // One activation row over several groups: a decode step's
            // tiles of one group (q4_0's short runs on VNNI) and of
            // several (q8_0; q4_0's long runs, 2048 deep).
            (70, 256, 1),
            (100, 64, 1),
            (40, 2048, 1),
        ] {
            let bytes = blocks(qtype, rows, k, false, &mut rng);
            let m = QMatrix::from_ggml(qtype, &bytes, rows, k).expect("repack");
            let x: Vec<f32> = (0..n * k).map(|_| rng.f32()).collect();
            let acts = QActs::quantize(&x, n, k);
            let want = reference(qtype, &bytes, rows, k, &acts);
            let mut first: Option<Vec<f32>> = None;
            for kernel in QKernel::all() {
                assert!(m.runs_on(kernel), "{kernel:?}");
                let mut y = vec![f32::NAN; n * rows];
                m.product_with(kernel, &acts, 0..m.groups(), &mut y);
                for (i, (got, want)) in y.iter().zip(&want).enumerate() {
                    let bound = 1e-5 * (1.0 + want.abs()) * (k / BLOCK) as f64;
                    assert!(
                        (f64::from(*got) - want).abs() <= bound,
                        "{qtype:?} {kernel:?} {rows}x{k} n {n}: [{i}] {got} vs {want}"
                    );
                }
                match &first {
                    None => first = Some(y),
                    Some(f) => assert_eq!(&y, f, "{qtype:?} {kernel:?} {rows}x{k} n {n}"),
                }
            }
        }
    }
}

#[test]
fn a_share_of_the_groups_is_those_columns_of_the_whole() {
    let mut rng = Rng(7);
    let (rows, k, n) = (75, 64, 6);
    for qtype in [QType::Q8_0, QType::Q4_0] {
        let bytes = blocks(qtype, rows, k, false, &mut rng);
        let m = QMatrix::from_ggml(qtype, &bytes, rows, k).expect("repack");
        assert_eq!(m.groups(), 5);
        let x: Vec<f32> = (0..n * k).map(|_| rng.f32()).collect();
        let acts = QActs::quantize(&x, n, k);
        let mut whole = vec![0f32; n * rows];
        m.product(&acts, 0..5, &mut whole);
        for groups in [1..3, 3..5, 4..5, 2..2] {
            let first = groups.start * GROUP;
            let width = (groups.end * GROUP).min(rows).saturating_sub(first);
            let mut part = vec![0f32; n * width];
            m.product(&acts, groups.clone(), &mut part);
            for t in 0..n {
                assert_eq!(
                    part[t * width..][..width],
                    whole[t * rows + first..][..width],
                    "{qtype:?} groups {groups:?} row {t}"
                );
            }
        }
    }
}

#[test]
fn a_q8_0_weight_of_minus_128_is_multiplied_exactly_off_avx2() {
    let mut rng = Rng(11);
    let (rows, k, n) = (16, 32, 2);
    let mut bytes = blocks(QType::Q8_0, rows, k, false, &mut rng);
    bytes[2] = 0x80;
    let m = QMatrix::from_ggml(QType::Q8_0, &bytes, rows, k).expect("repack");
    assert!(!m.runs_on(QKernel::Avx2));
    assert_ne!(m.kernel(), QKernel::Avx2);
    let x: Vec<f32> = (0..n * k)
        .map(|i| if i % 3 == 0 { -0.5 } else { 0.25 })
        .collect();
    let acts = QActs::quantize(&x, n, k);
    let want = reference(QType::Q8_0, &bytes, rows, k, &acts);
    let mut y = vec![0f32; n * rows];
    m.product(&acts, 0..1, &mut y);
    for (got, want) in y.iter().zip(&want) {
        assert!((f64::from(*got) - want).abs() <= 1e-5 * (1.0 + want.abs()));
    }
}

#[test]
fn activations_round_to_their_block_scale() {
    let mut rng = Rng(3);
    let (n, k) = (3, 96);
    let mut x: Vec<f32> = (0..n * k).map(|_| rng.f32() * 4.0).collect();
    x[32..64].fill(0.0);
    let acts = QActs::quantize(&x, n, k);
    for t in 0..n {
        for b in 0..k / BLOCK {
            let (d, sum, q) = acts.block(t, b);
            let src = &x[t * k + b * BLOCK..][..BLOCK];
            let amax = src.iter().fold(0f32, |m, v| m.max(v.abs()));
            assert_eq!(d, amax / 127.0);
            assert_eq!(sum, q.iter().map(|v| i32::from(*v)).sum::<i32>());
            assert!(q.iter().all(|v| *v > -128));
            for (v, q) in src.iter().zip(q) {
                assert!(
                    (v - f32::from(*q) * d).abs() <= d / 2.0 * 1.0001,
                    "{v} vs {q} x {d}"
                );
            }
        }
    }
    assert_eq!(acts.block(0, 1).0, 0.0);
}

#[test]
fn every_quantizer_gives_the_portable_loops_bytes() {
    let mut rng = Rng(0x5eed);
    let (n, k) = (3, 12 * BLOCK);
    let mut x: Vec<f32> = (0..n * k).map(|_| rng.f32() * 8.0).collect();
    // Block 1 zeros; 2 a NaN (left out of the scale, quantized to 0); 3
    // an infinity (every value's quotient a NaN); 4 ties at a scale of 1
    // (the largest magnitude 127), which round to even; 5 subnormals; 6
    // negative zeros and a largest magnitude that is negative.
    x[BLOCK..2 * BLOCK].fill(0.0);
    x[2 * BLOCK + 5] = f32::NAN;
    x[3 * BLOCK + 9] = f32::NEG_INFINITY;
    for (i, v) in x[4 * BLOCK..5 * BLOCK].iter_mut().enumerate() {
        *v = (i as f32 - 15.5) * if i % 2 == 0 { 1.0 } else { -3.0 };
    }
    x[4 * BLOCK] = 127.0;
    x[5 * BLOCK..6 * BLOCK]
        .iter_mut()
        .enumerate()
        .for_each(|(i, v)| *v = f32::from_bits(i as u32 + 1) * if i % 3 == 0 { -1.0 } else { 1.0 });
    x[6 * BLOCK..7 * BLOCK].fill(-0.0);
    x[6 * BLOCK + 17] = -2.5;
    x[6 * BLOCK + 18] = 1.25;
    let want = QActs::quantize_with(Isa::Portable, &x, n, k);
    assert_eq!(want.block(0, 2).2[5], 0, "the NaN");
    assert_eq!(want.block(0, 4).0, 1.0, "block 4's scale");
    assert_eq!(
        &want.block(0, 4).2[..4],
        &[127, 44, -14, 38],
        "ties to even"
    );
    let mut ran = 0;
    for isa in [Isa::Avx2] {
        if !isa.available() {
            eprintln!("{isa:?} quantizer: not run here (the CPU lacks it)");
            continue;
        }
        ran += 1;
        let got = QActs::quantize_with(isa, &x, n, k);
        for t in 0..n {
            for b in 0..k / BLOCK {
                let (gd, gs, gq) = got.block(t, b);
                let (wd, ws, wq) = want.block(t, b);
                assert_eq!(
                    (gd.to_bits(), gs, gq),
                    (wd.to_bits(), ws, wq),
                    "{isa:?} row {t} block {b}"
                );
            }
        }
    }
    if cfg!(target_arch = "x86_64") && Isa::Avx2.available() {
        assert!(ran > 0);
    }
}

#[test]
fn bad_shapes_are_named() {
    assert_eq!(
        QMatrix::from_ggml(QType::Q8_0, &[0; 34], 1, 33).err(),
        Some(QuantError::Columns { k: 33 })
    );
    let err = QMatrix::from_ggml(QType::Q4_0, &[0; 35], 2, 32)
        .err()
        .expect("an error");
    assert_eq!(
        err.to_string(),
        "35 bytes of Q4_0 blocks, 36 expected for 2 x 32"
    );
}
