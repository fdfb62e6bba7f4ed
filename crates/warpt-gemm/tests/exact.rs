//! Every kernel this CPU runs, against the exact product: small integers
//! in, so every product and sum is exact in fp32 and fp64 and the result
//! must equal the integer product bit for bit; every edge (tiles cut by
//! the matrix's end, depths past one block, columns past one block),
//! every layout (row-major, column-major, transposed, sub-matrices), one
//! to three threads split by rows and by columns, alpha and beta, A as a
//! view and packed once beforehand ([`PackedA`]). Kernels
//! whose ISA this CPU lacks are named as not run.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use warpt_gemm::{
    Bf16, Element, Half, Isa, Kernel, MatMut, MatRef, PackedA, f16, gemm, gemm_packed, gemm_with,
};

/// A seeded small integer in -span..=span.
fn small(seed: &mut u64, span: i64) -> i64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 33) % (2 * span as u64 + 1)) as i64 - span
}

/// The values' span for `T`: -4..=4, or -1..=1 for fp16, whose
/// accumulators hold integers exactly only up to 2048 (a depth of 1027
/// sums at most 1027 such products).
fn span<T: Element>() -> i64 {
    if T::NAME == "f16" { 1 } else { 4 }
}

/// How a matrix is laid out in its slice.
#[derive(Debug, Clone, Copy)]
enum Layout {
    RowMajor,
    ColMajor,
    /// Column-major inside a larger matrix (3 more rows, 1 more column).
    Sub,
    /// Every other row of a column-major matrix twice as tall: neither
    /// stride is 1.
    Strided,
}

/// `rows x cols` values stored in `layout`: (storage, rs, cs).
fn store<T: Copy>(
    v: &[i64],
    rows: usize,
    cols: usize,
    layout: Layout,
    from: impl Fn(i64) -> T,
) -> (Vec<T>, usize, usize) {
    let (len, rs, cs) = match layout {
        Layout::RowMajor => (rows * cols, cols, 1),
        Layout::ColMajor => (rows * cols, 1, rows),
        Layout::Sub => ((rows + 3) * (cols + 1), 1, rows + 3),
        Layout::Strided => (2 * rows * cols, 2, 2 * rows),
    };
    let mut data = vec![from(99); len];
    for i in 0..rows {
        for j in 0..cols {
            data[i * rs + j * cs] = from(v[i * cols + j]);
        }
    }
    (data, rs, cs)
}

/// Checks `C = alpha A B + beta C` for one shape, layout and thread count
/// with `kernel`; values as i64 for the reference, made operands by
/// `from` and accumulators by `acc`.
#[allow(clippy::too_many_arguments)]
fn check<T: Element>(
    kernel: &Kernel<T>,
    (m, n, k): (usize, usize, usize),
    layouts: [Layout; 3],
    threads: usize,
    (alpha, beta): (i64, i64),
    from: impl Fn(i64) -> T + Copy,
    acc: impl Fn(i64) -> T::Acc + Copy,
) where
    T::Acc: std::fmt::Debug,
{
    let mut seed = (m * 31 + n * 17 + k) as u64;
    let span = span::<T>();
    let a: Vec<i64> = (0..m * k).map(|_| small(&mut seed, span)).collect();
    let b: Vec<i64> = (0..k * n).map(|_| small(&mut seed, span)).collect();
    let c0: Vec<i64> = (0..m * n).map(|_| small(&mut seed, span)).collect();
    let (ad, ars, acs) = store(&a, m, k, layouts[0], from);
    let (bd, brs, bcs) = store(&b, k, n, layouts[1], from);
    let av = MatRef::new(&ad, m, k, ars, acs).unwrap();
    let bv = MatRef::new(&bd, k, n, brs, bcs).unwrap();
    // A as a view, then A packed once beforehand.
    for packed in [false, true] {
        let (mut cd, crs, ccs) = store(&c0, m, n, layouts[2], acc);
        if beta == 0 {
            // Not read when beta is 0: a NaN there must not come through.
            for x in cd.iter_mut() {
                *x = acc(i64::MAX);
            }
        }
        let cv = MatMut::new(&mut cd, m, n, crs, ccs).unwrap();
        if packed {
            let pa = PackedA::with_kernel(kernel, av);
            assert_eq!((pa.rows(), pa.cols()), (m, k));
            gemm_packed(cv, acc(alpha), &pa, bv, acc(beta), threads).unwrap();
        } else {
            gemm_with(kernel, cv, acc(alpha), av, bv, acc(beta), threads).unwrap();
        }
        for i in 0..m {
            for j in 0..n {
                let dot: i64 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
                let want = alpha * dot + if beta == 0 { 0 } else { beta * c0[i * n + j] };
                let got = cd[i * crs + j * ccs];
                assert!(
                    got == acc(want),
                    "{} {m}x{n}x{k} {layouts:?} threads {threads} packed A {packed}: C[{i},{j}] = {got:?}, want {want}",
                    kernel.name
                );
            }
        }
    }
}

fn every_kernel<T: Element>(from: impl Fn(i64) -> T + Copy, acc: impl Fn(i64) -> T::Acc + Copy)
where
    T::Acc: std::fmt::Debug,
{
    let kernels: Vec<_> = Kernel::<T>::all().collect();
    for k in T::kernels() {
        if !k.isa.available() {
            eprintln!("{}: not run here (this CPU lacks {})", k.name, k.isa.name());
        }
    }
    assert!(kernels.iter().any(|k| k.isa == Isa::Portable));
    // The best is the highest level this CPU runs.
    let top = kernels.iter().map(|k| k.isa).max();
    assert_eq!(Some(Kernel::<T>::best().isa), top);
    use Layout::*;
    for kernel in kernels {
        eprintln!("{}: checked", kernel.name);
        let (mr, nr, kc, mc) = (kernel.mr, kernel.nr, kernel.kc, kernel.mc);
        // Edges: a tile, one short and one past; depths past one block
        // (and odd, for kernels taking depths in pairs); rows past one
        // block.
        for shape in [
            (1, 1, 1),
            (mr, nr, 3),
            (mr - 1, nr + 1, 5),
            (mr + 1, nr - 1, kc + 3),
            (mc + mr + 1, 2 * nr + 1, 7),
            (3, 5, 2 * kc + 1),
            // B read in place up to 8 panels of A, taken whole (more than
            // MC rows); one panel more is packed.
            (8 * mr, 2 * nr + 1, 7),
            (8 * mr + 1, nr, 5),
        ] {
            for layouts in [
                [ColMajor; 3],
                [RowMajor; 3],
                [RowMajor, ColMajor, Sub],
                [Sub, RowMajor, ColMajor],
                [Strided, Strided, ColMajor],
            ] {
                check(kernel, shape, layouts, 1, (1, 0), from, acc);
            }
        }
        // alpha and beta.
        let shape = (mr + 3, nr + 2, 9);
        check(kernel, shape, [ColMajor; 3], 1, (2, -1), from, acc);
        check(kernel, shape, [RowMajor; 3], 1, (-3, 1), from, acc);
        // The updates a kernel stores straight into C (C -= A·B as an LU's
        // trailing update, C += A·B), one block of the depth and several.
        for k in [9, kc + 3] {
            for ab in [(-1, 1), (1, 1), (-1, 0)] {
                check(kernel, (2 * mr, nr + 2, k), [ColMajor; 3], 1, ab, from, acc);
                check(kernel, (mr, 2 * nr - 1, k), [RowMajor; 3], 1, ab, from, acc);
            }
        }
        // Threads: by rows (B's blocks shared, three slices of the depth
        // so both slots are written and one again), by columns (thin A),
        // and columns past one NC block.
        for threads in [2, 3] {
            let rows = (4 * mc + 5, 3 * nr + 1, 2 * kc + 3);
            check(
                kernel,
                rows,
                [ColMajor, RowMajor, ColMajor],
                threads,
                (1, 1),
                from,
                acc,
            );
            // B of one micro-panel (a decode step), each thread packing
            // its own copy.
            for n in [1, nr] {
                check(
                    kernel,
                    (2000, n, 600),
                    [RowMajor, ColMajor, ColMajor],
                    threads,
                    (-1, 1),
                    from,
                    acc,
                );
            }
            // Wide enough that each thread takes its own columns, tall
            // enough for several blocks of A's rows.
            check(
                kernel,
                (2 * mc + 5, 96 * threads + nr + 1, 40),
                [RowMajor, ColMajor, ColMajor],
                threads,
                (1, 1),
                from,
                acc,
            );
            let cols = (mr, kernel.nc + 2 * nr + 3, 150);
            check(
                kernel,
                cols,
                [RowMajor, ColMajor, RowMajor],
                threads,
                (1, 0),
                from,
                acc,
            );
        }
    }
}

#[test]
fn every_f64_kernel_is_exact_on_every_edge_layout_and_split() {
    let f = |x| if x == i64::MAX { f64::NAN } else { x as f64 };
    every_kernel::<f64>(f, f);
}

#[test]
fn every_f32_kernel_is_exact_on_every_edge_layout_and_split() {
    let f = |x| if x == i64::MAX { f32::NAN } else { x as f32 };
    every_kernel::<f32>(f, f);
}

#[test]
fn every_int8_kernel_is_exact_on_every_edge_layout_and_split() {
    // NaN has no i32: beta = 0 must still overwrite whatever C held.
    let acc = |x: i64| if x == i64::MAX { i32::MIN } else { x as i32 };
    every_kernel::<i8>(|x| x as i8, acc);
    // The extremes: -128 x -128 summed, through the unsigned side's offset.
    for kernel in Kernel::<i8>::all() {
        let (m, n, k) = (kernel.mr + 1, kernel.nr + 1, 67);
        let a = vec![i8::MIN; m * k];
        let b = vec![i8::MIN; k * n];
        let mut c = vec![0i32; m * n];
        let cv = MatMut::row_major(&mut c, m, n).unwrap();
        let (av, bv) = (
            MatRef::row_major(&a, m, k).unwrap(),
            MatRef::row_major(&b, k, n).unwrap(),
        );
        gemm_with(kernel, cv, 1, av, bv, 0, 1).unwrap();
        assert!(c.iter().all(|&x| x == 67 * 128 * 128), "{}", kernel.name);
    }
}

#[test]
fn every_fp16_kernel_is_exact_on_every_edge_layout_and_split() {
    let f = |x| {
        if x == i64::MAX {
            f16::NAN
        } else {
            f16::from_f32(x as f32)
        }
    };
    every_kernel::<f16>(f, f);
}

#[test]
fn every_bf16_kernel_is_exact_on_every_edge_layout_and_split() {
    let f = |x| if x == i64::MAX { f32::NAN } else { x as f32 };
    every_kernel::<Bf16>(|x| Bf16::from_f32(f(x)), f);
    // Rounding to bf16: to nearest, ties to even.
    assert_eq!(Bf16::from_f32(1.0 + 1.0 / 256.0).to_f32(), 1.0);
    assert_eq!(
        Bf16::from_f32(1.0 + 3.0 / 256.0).to_f32(),
        1.0 + 4.0 / 256.0
    );
}

#[test]
fn every_widened_fp16_kernel_is_exact_on_every_edge_layout_and_split() {
    let f = |x| if x == i64::MAX { f32::NAN } else { x as f32 };
    every_kernel::<Half>(|x| Half::from_f32(f(x)), f);
    // Summed in fp32, not fp16: 4099 ones add up to 4099 (an fp16
    // accumulator stops at 2048), on every tile width and in place.
    for kernel in Kernel::<Half>::all() {
        for n in [1, kernel.nr] {
            let (m, k) = (kernel.mr + 1, 4099);
            let a = vec![Half::from_f32(1.0); m * k];
            let b = vec![Half::from_f32(1.0); k * n];
            let mut c = vec![0f32; m * n];
            let cv = MatMut::row_major(&mut c, m, n).unwrap();
            let (av, bv) = (
                MatRef::row_major(&a, m, k).unwrap(),
                MatRef::col_major(&b, k, n).unwrap(),
            );
            gemm_with(kernel, cv, 1.0, av, bv, 0.0, 1).unwrap();
            assert!(c.iter().all(|&x| x == 4099.0), "{} n {n}", kernel.name);
        }
    }
    // Rounding to fp16: to nearest, ties to even.
    assert_eq!(Half::from_f32(1.0 + 1.0 / 2048.0).to_f32(), 1.0);
    assert_eq!(
        Half::from_f32(1.0 + 3.0 / 2048.0).to_f32(),
        1.0 + 4.0 / 2048.0
    );
}

#[test]
fn blocking_changed_by_the_caller_is_made_whole() {
    // MC not a whole number of tiles, KC not of bf16's pairs, NC not of
    // tiles: every row, depth and column still counts.
    let f = |x: i64| x as f32;
    for kernel in Kernel::<Bf16>::all() {
        let mut odd = *kernel;
        (odd.mc, odd.kc, odd.nc) = (kernel.mr + 1, 3, kernel.nr + 1);
        for threads in [1, 2] {
            let shape = (3 * kernel.mr + 2, 3 * kernel.nr + 2, 200);
            let layouts = [Layout::ColMajor, Layout::RowMajor, Layout::ColMajor];
            check(
                &odd,
                shape,
                layouts,
                threads,
                (1, 0),
                |x| Bf16::from_f32(f(x)),
                f,
            );
        }
    }
}

#[test]
fn shapes_and_views_are_checked() {
    let data = vec![1.0f64; 12];
    assert!(MatRef::new(&data, 3, 4, 4, 1).is_ok());
    let e = MatRef::new(&data, 4, 4, 4, 1).unwrap_err().to_string();
    assert!(e.contains("needs 16 elements, the slice has 12"), "{e}");
    let mut out = vec![0.0f64; 12];
    // Rows two apart in a 3-column row-major layout overlap the next row.
    let e = MatMut::new(&mut out, 3, 3, 2, 1).unwrap_err().to_string();
    assert!(e.contains("overlap"), "{e}");
    let a = MatRef::row_major(&data, 3, 4).unwrap();
    let b = MatRef::row_major(&data, 3, 4).unwrap();
    let c = MatMut::row_major(&mut out, 3, 4).unwrap();
    let e = gemm(c, 1.0, a, b, 0.0, 1).unwrap_err().to_string();
    assert!(e.contains("A is 3 x 4, B is 3 x 4"), "{e}");
    // k = 0: C = beta C.
    let mut c = vec![2.0f32; 4];
    let empty: [f32; 0] = [];
    gemm(
        MatMut::row_major(&mut c, 2, 2).unwrap(),
        1.0,
        MatRef::row_major(&empty, 2, 0).unwrap(),
        MatRef::row_major(&empty, 0, 2).unwrap(),
        0.5,
        0,
    )
    .unwrap();
    assert_eq!(c, [1.0; 4]);
}

#[test]
fn packed_operands_take_the_tile_that_pads_their_rows_least() {
    let best = Kernel::<f32>::best();
    for rows in [1, 31, 32, 48, 64, 96, 128, 256, 1000, 1024, 2048] {
        let chosen = Kernel::<f32>::for_rows(rows);
        let padded = |k: &Kernel<f32>| rows.div_ceil(k.mr) * k.mr;
        assert_eq!(chosen.isa, best.isa, "{rows} rows: {}", chosen.name);
        // The best tile unless another pads by a twentieth less.
        assert!(
            Kernel::<f32>::all()
                .filter(|k| k.isa == best.isa)
                .all(|k| 20 * padded(k) > 19 * padded(chosen)),
            "{rows} rows: {} pads to {}",
            chosen.name,
            padded(chosen)
        );
        if 20 * padded(chosen) > 19 * padded(best) {
            assert_eq!(chosen.name, best.name, "{rows} rows");
        }
        let a = vec![1.0f32; rows * 3];
        let packed = PackedA::new(MatRef::row_major(&a, rows, 3).unwrap());
        assert_eq!(packed.kernel().name, chosen.name);
    }
}

/// Rows `rows` of a packed A times B, as `gemm_packed_rows` computes it,
/// against the integer product; `from` makes the operands.
fn check_rows<T: Element>(kernel: &Kernel<T>, from: impl Fn(i64) -> T + Copy)
where
    T::Acc: std::fmt::Debug + From<i16>,
{
    let (m, n, k) = (3 * kernel.mr + 5, 9, 2 * kernel.kc + 3);
    let mut seed = 7;
    let a: Vec<i64> = (0..m * k).map(|_| small(&mut seed, 4)).collect();
    let b: Vec<i64> = (0..k * n).map(|_| small(&mut seed, 4)).collect();
    let ad: Vec<T> = a.iter().map(|&v| from(v)).collect();
    let bd: Vec<T> = b.iter().map(|&v| from(v)).collect();
    let pa = PackedA::with_kernel(kernel, MatRef::row_major(&ad, m, k).unwrap());
    let mr = pa.kernel().mr;
    for rows in [0..m, mr..m, 0..mr, 2 * mr..2 * mr + 3, m..m] {
        for threads in [1, 2] {
            let mut c = vec![T::Acc::from(0); rows.len() * n];
            let cv = MatMut::row_major(&mut c, rows.len(), n).unwrap();
            let bv = MatRef::row_major(&bd, k, n).unwrap();
            let one = T::Acc::from(1);
            warpt_gemm::gemm_packed_rows(cv, one, &pa, rows.clone(), bv, T::Acc::from(0), threads)
                .unwrap();
            for (r, i) in rows.clone().enumerate() {
                for j in 0..n {
                    let dot: i64 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
                    assert_eq!(
                        c[r * n + j],
                        T::Acc::from(dot as i16),
                        "{} rows {rows:?} threads {threads}: C[{i},{j}]",
                        kernel.name
                    );
                }
            }
        }
    }
    // A range inside a micro-panel, or past the rows: an error, nothing
    // written.
    for rows in [1..mr + 1, 0..m + 1] {
        let mut c = vec![T::Acc::from(0); rows.len() * n];
        let cv = MatMut::row_major(&mut c, rows.len(), n).unwrap();
        let bv = MatRef::row_major(&bd, k, n).unwrap();
        let err = warpt_gemm::gemm_packed_rows(
            cv,
            T::Acc::from(1),
            &pa,
            rows.clone(),
            bv,
            T::Acc::from(0),
            1,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("a range must end by its last row"),
            "{err}"
        );
    }
}

#[test]
fn a_packed_matrix_multiplies_any_run_of_its_panels() {
    for kernel in Kernel::<f32>::all() {
        check_rows(kernel, |v| v as f32);
    }
    for kernel in Kernel::<Bf16>::all() {
        check_rows(kernel, |v| Bf16::from_f32(v as f32));
    }
    for kernel in Kernel::<Half>::all() {
        check_rows(kernel, |v| Half::from_f32(v as f32));
    }
}

/// One column of a packed A's product (a decode step's) on `kernel`,
/// whose tiles go in pairs ([`Kernel::band_rows`] is two panels): the
/// integer product exactly for runs of rows that start on a pair and
/// end anywhere (a last pair half empty or past the rows' own panels),
/// B in place (a few pairs) and packed (more than eight), one and two
/// threads; and on values that round, a pair's rows bit for bit what the
/// single tiles give the same rows from a run that starts between two
/// panels (where no pair is read), and near the f64 product.
fn check_pairs<T: Element<Acc = f32>>(kernel: &Kernel<T>, from: fn(f32) -> T, to: fn(T) -> f32) {
    let mr = kernel.mr;
    assert_eq!(
        kernel.band_rows(),
        2 * mr,
        "{} reads panels in pairs",
        kernel.name
    );
    let k = kernel.kc + 5;
    for m in [5 * mr + 7, 21 * mr + 3] {
        let mut seed = m as u64;
        let a: Vec<i64> = (0..m * k).map(|_| small(&mut seed, 4)).collect();
        let b: Vec<i64> = (0..k).map(|_| small(&mut seed, 4)).collect();
        let ad: Vec<T> = a.iter().map(|&v| from(v as f32)).collect();
        let bd: Vec<T> = b.iter().map(|&v| from(v as f32)).collect();
        let pa = PackedA::with_kernel(kernel, MatRef::row_major(&ad, m, k).unwrap());
        for rows in [0..m, 2 * mr..m, 0..mr, 0..2 * mr + 3, 4 * mr..5 * mr] {
            for threads in [1, 2] {
                let mut c = vec![0f32; rows.len()];
                let cv = MatMut::col_major(&mut c, rows.len(), 1).unwrap();
                let bv = MatRef::col_major(&bd, k, 1).unwrap();
                warpt_gemm::gemm_packed_rows(cv, 1.0, &pa, rows.clone(), bv, 0.0, threads).unwrap();
                for (r, i) in rows.clone().enumerate() {
                    let dot: i64 = (0..k).map(|p| a[i * k + p] * b[p]).sum();
                    assert_eq!(
                        c[r], dot as f32,
                        "{} rows {rows:?} threads {threads}: C[{i}]",
                        kernel.name
                    );
                }
            }
        }
        // Values that round: pairs against single tiles over the same rows.
        let mut seed = 11;
        let mut frac = |scale: f32| from(small(&mut seed, 1000) as f32 / scale);
        let ad: Vec<T> = (0..m * k).map(|_| frac(997.0)).collect();
        let bd: Vec<T> = (0..k).map(|_| frac(991.0)).collect();
        let pa = PackedA::with_kernel(kernel, MatRef::row_major(&ad, m, k).unwrap());
        let product = |rows: std::ops::Range<usize>| {
            let mut c = vec![0f32; rows.len()];
            let cv = MatMut::col_major(&mut c, rows.len(), 1).unwrap();
            let bv = MatRef::col_major(&bd, k, 1).unwrap();
            warpt_gemm::gemm_packed_rows(cv, 1.0, &pa, rows, bv, 0.0, 1).unwrap();
            c
        };
        let (paired, single) = (product(0..m), product(mr..m));
        for (i, (p, s)) in paired[mr..].iter().zip(&single).enumerate() {
            assert_eq!(
                p.to_bits(),
                s.to_bits(),
                "{} {m} rows: row {}",
                kernel.name,
                mr + i
            );
        }
        for (i, &p) in paired.iter().enumerate() {
            let dot: f64 = (0..k)
                .map(|q| f64::from(to(ad[i * k + q])) * f64::from(to(bd[q])))
                .sum();
            assert!(
                (f64::from(p) - dot).abs() < 1e-4 * (1.0 + dot.abs()),
                "{} row {i}: {p} against {dot}",
                kernel.name
            );
        }
    }
}

#[test]
fn one_column_products_read_panels_in_pairs_as_their_tiles_would() {
    let mut checked = 0;
    for kernel in Kernel::<f32>::all().filter(|k| k.band_rows() > k.mr) {
        check_pairs(kernel, |v| v, |v| v);
        checked += 1;
    }
    for kernel in Kernel::<Half>::all().filter(|k| k.band_rows() > k.mr) {
        check_pairs(kernel, Half::from_f32, Half::to_f32);
        checked += 1;
    }
    if Isa::Avx512.available() {
        // The AVX-512 tiles of f32 (48 and 32 rows) have pairs.
        assert_eq!(checked, 2);
    } else {
        println!("pairs of tiles: not run here (no AVX-512)");
    }
}
