//! PackedMatrix against the plain product, in f32, bf16 and fp16.

#![allow(clippy::unwrap_used)]
use super::*;

/// A pool of three threads: bands and chunks split unevenly.
fn three_threads() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap()
}

#[test]
fn equals_the_plain_product() {
    // Sizes off every tile: rows 1, 7, 13, 40 and 400 (tiles of every
    // width), n = 75 (a padded last panel), k = 37 and 900 (one and
    // several slices of the depth), with and without a bias, on one
    // thread and all. Small integers: every order of summation gives
    // the same float.
    let n = 75;
    let pool = three_threads();
    for k in [37, 900] {
        let w: Vec<f32> = (0..n * k).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
        let bias: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
        let plain = PackedMatrix::from_rows(&w, n, k);
        let biased = PackedMatrix::from_rows(&w, n, k).with_bias(&bias);
        for (packed, rows) in [&plain, &biased]
            .into_iter()
            .flat_map(|p| [1, 7, 13, 40, 400].map(|r| (p, r)))
        {
            let b = |c: usize| packed.bias.as_ref().map_or(0.0, |_| bias[c]);
            let x: Vec<f32> = (0..rows * k).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
            // In a pool of three threads whatever the host: rows 1-40
            // take the bands in parallel, 400 chunks of rows.
            let parallel = pool.install(|| packed.matmul_t(&x, rows));
            for got in [parallel, packed.matmul_t_serial(&x, rows)] {
                for r in 0..rows {
                    for c in 0..n {
                        let want: f32 =
                            b(c) + (0..k).map(|i| x[r * k + i] * w[c * k + i]).sum::<f32>();
                        assert_eq!(
                            got[r * n + c],
                            want,
                            "k {k}, {rows} rows, bias {}: row {r} column {c}",
                            packed.bias.is_some()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_transpose_packs_to_the_same_matrix() {
    let (n, k, rows) = (45, 70, 9);
    let w: Vec<f32> = (0..n * k).map(|i| (i % 17) as f32 - 8.0).collect();
    let wt: Vec<f32> = (0..k * n).map(|i| w[(i % n) * k + i / n]).collect();
    let x: Vec<f32> = (0..rows * k).map(|i| (i % 5) as f32).collect();
    let (a, b) = (
        PackedMatrix::from_rows(&w, n, k),
        PackedMatrix::from_cols(&wt, n, k),
    );
    assert_eq!(a.matmul_t(&x, rows), b.matmul_t(&x, rows));
    assert_eq!(a.rows(), n);
    // In bf16 too (small integers: bf16 holds them exactly).
    let (a, b) = (
        PackedMatrix::from_rows_in(&w, n, k, Precision::Bf16),
        PackedMatrix::from_cols_in(&wt, n, k, Precision::Bf16),
    );
    assert_eq!(b.precision(), Precision::Bf16);
    assert_eq!(a.matmul_t(&x, rows), b.matmul_t(&x, rows));
    // And fp16.
    let (a, b) = (
        PackedMatrix::from_rows_in(&w, n, k, Precision::F16),
        PackedMatrix::from_cols_in(&wt, n, k, Precision::F16),
    );
    assert_eq!(b.precision(), Precision::F16);
    assert_eq!(a.matmul_t(&x, rows), b.matmul_t(&x, rows));
    assert_eq!(
        a.matmul_t(&x, rows),
        PackedMatrix::from_rows(&w, n, k).matmul_t(&x, rows)
    );
}

#[test]
fn an_empty_batch_gives_an_empty_result() {
    let m = PackedMatrix::from_rows(&[1.0; 6], 2, 3).with_bias(&[1.0, 2.0]);
    assert!(m.matmul_t(&[], 0).is_empty());
}

#[test]
fn no_input_features_give_the_bias() {
    // 40 rows would be split into chunks of rows: of zero inputs each.
    let m = PackedMatrix::from_rows(&[], 2, 0).with_bias(&[1.0, 2.0]);
    assert_eq!(m.matmul_t(&[], 40), [1.0, 2.0].repeat(40));
}

#[test]
fn matmul_t_add_adds_to_what_is_there() {
    // A residual's start plus the product and the bias, for a few rows
    // (bands) and many (chunks of rows), in a pool of three threads.
    let (n, k) = (70, 40);
    let pool = three_threads();
    let w: Vec<f32> = (0..n * k).map(|i| ((i * 3) % 7) as f32 - 3.0).collect();
    let bias: Vec<f32> = (0..n).map(|i| (i % 5) as f32).collect();
    for with_bias in [false, true] {
        let mut m = PackedMatrix::from_rows(&w, n, k);
        if with_bias {
            m = m.with_bias(&bias);
        }
        for rows in [3, 300] {
            let x: Vec<f32> = (0..rows * k).map(|i| ((i * 7) % 9) as f32 - 4.0).collect();
            let start: Vec<f32> = (0..rows * n).map(|i| (i % 11) as f32).collect();
            let mut out = start.clone();
            pool.install(|| m.matmul_t_add(&x, rows, &mut out));
            // Into a buffer of anything: overwritten.
            let mut into = vec![f32::NAN; rows * n];
            pool.install(|| m.matmul_t_into(&x, rows, &mut into));
            assert_eq!(into, m.matmul_t(&x, rows), "{rows} rows into a buffer");
            for r in 0..rows {
                for c in 0..n {
                    let b = if with_bias { bias[c] } else { 0.0 };
                    let dot: f32 = (0..k).map(|i| x[r * k + i] * w[c * k + i]).sum();
                    assert_eq!(
                        out[r * n + c],
                        start[r * n + c] + b + dot,
                        "row {r} col {c}"
                    );
                }
            }
        }
    }
}

#[test]
fn matmul_t_then_adds_the_bias_the_matrix_and_the_relu() {
    // A residual block's last convolution: x·wᵀ + bias + shortcut, then
    // the ReLU, for a few rows (bands), many (chunks), and without depth;
    // one slice of the depth and several; on three threads and one; in
    // every precision (small integers: exact in each).
    let n = 70;
    let pool = three_threads();
    for (k, precision) in [
        (40, Precision::F32),
        (900, Precision::F32),
        (40, Precision::Bf16),
        (40, Precision::F16),
        (0, Precision::F32),
    ] {
        let w: Vec<f32> = (0..n * k).map(|i| ((i * 3) % 7) as f32 - 3.0).collect();
        let bias: Vec<f32> = (0..n).map(|i| (i % 5) as f32 - 2.0).collect();
        for with_bias in [false, true] {
            let mut m = PackedMatrix::from_rows_in(&w, n, k, precision);
            if with_bias {
                m = m.with_bias(&bias);
            }
            for rows in [3, 300] {
                let x: Vec<f32> = (0..rows * k).map(|i| ((i * 7) % 9) as f32 - 4.0).collect();
                let add: Vec<f32> = (0..rows * n).map(|i| (i % 23) as f32 - 11.0).collect();
                for (shortcut, relu, stream) in [
                    (true, true, false),
                    (true, false, false),
                    (false, true, false),
                    (true, true, true),
                ] {
                    let add = shortcut.then_some(&add[..]);
                    let then = Then { add, relu, stream };
                    let mut parallel = vec![f32::NAN; rows * n];
                    pool.install(|| m.matmul_t_then(&x, rows, &mut parallel, then));
                    let mut alone = vec![f32::NAN; rows * n];
                    m.matmul_t_then(&x, rows, &mut alone, then);
                    for got in [&parallel, &alone] {
                        for r in 0..rows {
                            for c in 0..n {
                                let b = if with_bias { bias[c] } else { 0.0 };
                                let dot: f32 = (0..k).map(|i| x[r * k + i] * w[c * k + i]).sum();
                                let mut want = dot + b + add.map_or(0.0, |a| a[r * n + c]);
                                if relu {
                                    want = want.max(0.0);
                                }
                                assert_eq!(
                                    got[r * n + c],
                                    want,
                                    "k {k} {precision:?} bias {with_bias} {rows} rows, shortcut \
                                     {shortcut}, relu {relu}: row {r} col {c}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `len` values bf16 cannot hold (eight significant bits): small
/// integers `(i·a) mod m`, centred, plus `(i mod f) / d`.
fn off_bf16(len: usize, a: usize, m: usize, f: usize, d: f32) -> Vec<f32> {
    (0..len)
        .map(|i| ((i * a) % m) as f32 - (m / 2) as f32 + (i % f) as f32 / d)
        .collect()
}

/// `n` biases, thirds of 0..6.
fn thirds(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i % 7) as f32 / 3.0).collect()
}

/// A value rounded to a precision, held in f32.
type Round = fn(f32) -> f32;

#[test]
fn bf16_and_fp16_multiply_the_rounded_values_in_f32() {
    // Values neither format holds (eight and eleven significant bits):
    // the product is the f64 one of the rounded weights and activations,
    // to f32's rounding of the sums, and differs from the unrounded
    // product. Both holdings: the format itself for its own tiles (where
    // this CPU has them) and the same values in f32; a few rows (bands)
    // and many (chunks of rows), with a bias.
    let (n, k) = (70, 300);
    let pool = three_threads();
    let (w, bias) = (off_bf16(n * k, 5, 11, 13, 1000.0), thirds(n));
    let cases: [(Precision, Round); 2] = [
        (Precision::Bf16, |v| Bf16::from_f32(v).to_f32()),
        (Precision::F16, |v| Half::from_f32(v).to_f32()),
    ];
    for ((precision, round), native) in cases
        .into_iter()
        .flat_map(|c| [(c, false), (c, c.0.native())])
    {
        let r = |v: f32| round(v) as f64;
        let m = PackedMatrix::from_rows_on(&w, n, k, precision, native).with_bias(&bias);
        assert_eq!(m.precision(), precision);
        let own = matches!(m.bands, Bands::Bf16(_) | Bands::Half(_));
        assert_eq!(own, native, "{precision:?}");
        for rows in [3, 300] {
            let x = off_bf16(rows * k, 7, 9, 17, 700.0);
            let got = pool.install(|| m.matmul_t(&x, rows));
            let mut unrounded_differs = false;
            for row in 0..rows {
                for c in 0..n {
                    let xs = &x[row * k..][..k];
                    let ws = &w[c * k..][..k];
                    let want: f64 =
                        bias[c] as f64 + xs.iter().zip(ws).map(|(a, b)| r(*a) * r(*b)).sum::<f64>();
                    let exact: f64 = bias[c] as f64
                        + xs.iter()
                            .zip(ws)
                            .map(|(a, b)| *a as f64 * *b as f64)
                            .sum::<f64>();
                    // f32's summation error is within 1e-5 of the
                    // terms' magnitude; rounding to bf16 moves sums
                    // by some 1e-4 of it.
                    let magnitude: f64 = bias[c].abs() as f64
                        + xs.iter()
                            .zip(ws)
                            .map(|(a, b)| (r(*a) * r(*b)).abs())
                            .sum::<f64>();
                    let g = got[row * n + c] as f64;
                    assert!(
                        (g - want).abs() <= 1e-5 * magnitude,
                        "{precision:?} native {native}, {rows} rows: row {row} column {c}: {g} vs {want}"
                    );
                    unrounded_differs |= (exact - want).abs() > 1e-5 * magnitude;
                }
            }
            assert!(
                unrounded_differs,
                "the test's values are all {precision:?}'s"
            );
        }
    }
}

#[test]
fn activations_given_in_bf16_multiply_as_rounded_ones() {
    // matmul_t_into_serial_bf16 on x already in bf16 is the product on
    // x rounded by the matrix itself (bf16 matrices, both holdings), and
    // on an f32 or fp16 matrix its product of the same values; the serial
    // f32 entry point agrees with the parallel one. Into a dirty output.
    let (n, k, rows) = (70, 300, 29);
    let (w, bias) = (off_bf16(n * k, 5, 11, 13, 1000.0), thirds(n));
    let x = off_bf16(rows * k, 7, 9, 17, 700.0);
    let xb: Vec<Bf16> = x.iter().map(|v| Bf16::from_f32(*v)).collect();
    let xr: Vec<f32> = xb.iter().map(|v| v.to_f32()).collect();
    let matrices = [
        PackedMatrix::from_rows_on(&w, n, k, Precision::Bf16, false),
        PackedMatrix::from_rows_on(&w, n, k, Precision::Bf16, Precision::Bf16.native()),
        PackedMatrix::from_rows_in(&w, n, k, Precision::F32),
        PackedMatrix::from_rows_on(&w, n, k, Precision::F16, false),
        PackedMatrix::from_rows_in(&w, n, k, Precision::F16),
    ];
    for m in matrices.map(|m| m.with_bias(&bias)) {
        let (mut serial, mut given) = (vec![f32::NAN; rows * n], vec![f32::NAN; rows * n]);
        m.matmul_t_into_serial(&x, rows, &mut serial);
        m.matmul_t_into_serial_bf16(&xb, rows, &mut given);
        let whole = m.matmul_t(&x, rows);
        assert_eq!(serial, whole, "{:?}: serial and parallel", m.precision());
        let want = if m.precision() == Precision::Bf16 {
            whole
        } else {
            m.matmul_t(&xr, rows)
        };
        assert_eq!(given, want, "{:?}: given in bf16", m.precision());
        assert_eq!(m.multiplies_bf16(), matches!(m.bands, Bands::Bf16(_)));
    }
    // The f32 matrix's product of rounded values is not its product of
    // the originals: the f32 case above tested something.
    assert_ne!(
        f32_product(&w, &bias, &x, n, k, rows),
        f32_product(&w, &bias, &xr, n, k, rows)
    );
}

#[test]
fn activations_given_in_bf16_add_as_rounded_ones() {
    // matmul_t_add_bf16 is matmul_t_add on the bf16 values (rounded by a
    // bf16 matrix itself), for a few rows (bands) and many (chunks of
    // rows), in a pool of three threads.
    let (n, k) = (70, 300);
    let pool = three_threads();
    let (w, bias) = (off_bf16(n * k, 5, 11, 13, 1000.0), thirds(n));
    let matrices = [
        PackedMatrix::from_rows_on(&w, n, k, Precision::Bf16, Precision::Bf16.native()),
        PackedMatrix::from_rows_in(&w, n, k, Precision::F32),
    ];
    for m in matrices.map(|m| m.with_bias(&bias)) {
        for rows in [29, 300] {
            let x = off_bf16(rows * k, 7, 9, 17, 700.0);
            let xb: Vec<Bf16> = x.iter().map(|v| Bf16::from_f32(*v)).collect();
            let xr: Vec<f32> = xb.iter().map(|v| v.to_f32()).collect();
            let start: Vec<f32> = (0..rows * n).map(|i| (i % 11) as f32).collect();
            let (mut got, mut want) = (start.clone(), start.clone());
            pool.install(|| m.matmul_t_add_bf16(&xb, rows, &mut got));
            pool.install(|| m.matmul_t_add(&xr, rows, &mut want));
            assert_eq!(got, want, "{:?}, {rows} rows", m.precision());
            assert_ne!(got, start, "nothing was added");
        }
    }
}

#[test]
fn matrices_given_in_bf16_pack_as_rounded_ones() {
    // from_rows_bf16 and from_cols_bf16 are from_rows_in and from_cols_in
    // in bf16 on the values (their products equal, to the bit).
    let (n, k, rows) = (37, 70, 29);
    let w = off_bf16(n * k, 5, 11, 13, 1000.0);
    let wb: Vec<Bf16> = w.iter().map(|v| Bf16::from_f32(*v)).collect();
    let x = off_bf16(rows * k, 7, 9, 17, 700.0);
    let pairs = [
        (
            PackedMatrix::from_rows_bf16(&wb, n, k),
            PackedMatrix::from_rows_in(&w, n, k, Precision::Bf16),
        ),
        (
            PackedMatrix::from_cols_bf16(&wb, n, k),
            PackedMatrix::from_cols_in(&w, n, k, Precision::Bf16),
        ),
    ];
    for (given, rounded) in pairs {
        assert_eq!(given.precision(), Precision::Bf16);
        assert_eq!(given.matmul_t(&x, rows), rounded.matmul_t(&x, rows));
    }
}

/// The f32 product of `x` with `w` and its bias.
fn f32_product(w: &[f32], bias: &[f32], x: &[f32], n: usize, k: usize, rows: usize) -> Vec<f32> {
    PackedMatrix::from_rows(w, n, k)
        .with_bias(bias)
        .matmul_t(x, rows)
}

#[test]
fn precisions_parse_by_name() {
    for name in Precision::NAMES {
        assert_eq!(Precision::parse(name).unwrap().name(), *name);
    }
    assert!(Precision::parse("q8_0").unwrap_err().contains("'q8_0'"));
    assert_eq!(
        PackedMatrix::from_rows(&[1.0], 1, 1).precision(),
        Precision::F32
    );
}
