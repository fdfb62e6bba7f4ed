//! The epilogue (`gemm_packed_rows_then`: a bias per row, a matrix added,
//! a ReLU) on every kernel this CPU runs, against the exact result: small
//! integers in, so every value is exact and must match bit for bit; depths
//! of one slice and of several (the epilogue only after the last), C
//! column-major (tiles written in place) and row-major (through the tile
//! buffer), B packed and read in place, one to three threads split by rows
//! and by columns, beta 0 and 1, the added matrix in either layout; and
//! with streaming stores asked for, C on cache lines (the kernels' own
//! streaming stores) and off them (ordinary stores).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use warpt_gemm::{
    Bf16, Element, Epilogue, Error, Half, Kernel, MatMut, MatRef, PackedA, gemm_packed_rows_then,
};

/// A seeded small integer in -span..=span.
fn small(seed: &mut u64, span: i64) -> i64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 33) % (2 * span as u64 + 1)) as i64 - span
}

/// `rows x cols` values, row-major or column-major: (storage, rs, cs).
fn store<U: Copy>(
    v: &[i64],
    rows: usize,
    cols: usize,
    row_major: bool,
    f: impl Fn(i64) -> U,
) -> (Vec<U>, usize, usize) {
    let (rs, cs) = if row_major { (cols, 1) } else { (1, rows) };
    let mut data = vec![f(0); rows * cols];
    for i in 0..rows {
        for j in 0..cols {
            data[i * rs + j * cs] = f(v[i * cols + j]);
        }
    }
    (data, rs, cs)
}

/// What one case asks of the epilogue.
#[derive(Debug, Clone, Copy)]
struct Case {
    bias: bool,
    /// The added matrix, and whether it is row-major.
    add: Option<bool>,
    relu: bool,
    /// Streaming stores asked for, C's storage starting on a cache line.
    stream: bool,
}

/// One shape, layout, split and epilogue: rows `first..m` of a packed A
/// (the bias indexed by C's rows, not A's), against the integer result.
#[allow(clippy::too_many_arguments)]
fn check<T: Element>(
    kernel: &Kernel<T>,
    (m, n, k): (usize, usize, usize),
    first: usize,
    (c_row_major, b_row_major): (bool, bool),
    threads: usize,
    beta: i64,
    case: Case,
    from: impl Fn(i64) -> T + Copy,
    acc: impl Fn(i64) -> T::Acc + Copy,
) where
    T::Acc: std::fmt::Debug,
{
    let mut seed = (m * 31 + n * 17 + k + threads) as u64;
    let a: Vec<i64> = (0..m * k).map(|_| small(&mut seed, 3)).collect();
    let b: Vec<i64> = (0..k * n).map(|_| small(&mut seed, 3)).collect();
    let rows = m - first;
    let c0: Vec<i64> = (0..rows * n).map(|_| small(&mut seed, 3)).collect();
    let bias: Vec<i64> = (0..rows).map(|_| small(&mut seed, 40)).collect();
    let add: Vec<i64> = (0..rows * n).map(|_| small(&mut seed, 40)).collect();
    let (ad, _, _) = store(&a, m, k, true, from);
    let (bd, brs, bcs) = store(&b, k, n, b_row_major, from);
    let pa = PackedA::with_kernel(kernel, MatRef::row_major(&ad, m, k).unwrap());
    let (c_vec, crs, ccs) = store(&c0, rows, n, c_row_major, acc);
    // C from a cache line on when streaming (else where the allocator
    // put it): 64 bytes more room, and the first aligned element.
    let mut backing = vec![acc(0); c_vec.len() + 64];
    let skip = if case.stream {
        backing.as_ptr().align_offset(64)
    } else {
        0
    };
    let cd = &mut backing[skip..skip + c_vec.len()];
    cd.copy_from_slice(&c_vec);
    let bias_d: Vec<T::Acc> = bias.iter().map(|&v| acc(v)).collect();
    let (add_d, add_rs, add_cs) = store(&add, rows, n, case.add.unwrap_or(true), acc);
    let epilogue = Epilogue {
        row_bias: case.bias.then_some(&bias_d[..]),
        add: case
            .add
            .map(|_| MatRef::new(&add_d, rows, n, add_rs, add_cs).unwrap()),
        relu: case.relu,
        stream: case.stream,
    };
    let cv = MatMut::new(cd, rows, n, crs, ccs).unwrap();
    let bv = MatRef::new(&bd, k, n, brs, bcs).unwrap();
    gemm_packed_rows_then(cv, acc(1), &pa, first..m, bv, acc(beta), epilogue, threads).unwrap();
    for r in 0..rows {
        for j in 0..n {
            let i = first + r;
            let dot: i64 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            let mut want = dot + beta * c0[r * n + j];
            if case.bias {
                want += bias[r];
            }
            if case.add.is_some() {
                want += add[r * n + j];
            }
            if case.relu {
                want = want.max(0);
            }
            let got = cd[r * crs + j * ccs];
            assert!(
                got == acc(want),
                "{} {m}x{n}x{k} from row {first}, C row-major {c_row_major}, B row-major \
                 {b_row_major}, threads {threads}, beta {beta}, {case:?}: C[{r},{j}] = {got:?}, \
                 want {want}",
                kernel.name
            );
        }
    }
}

fn every_kernel<T: Element>(from: impl Fn(i64) -> T + Copy, acc: impl Fn(i64) -> T::Acc + Copy)
where
    T::Acc: std::fmt::Debug,
{
    let cases = [
        Case {
            bias: true,
            add: None,
            relu: false,
            stream: false,
        },
        Case {
            bias: true,
            add: Some(true),
            relu: true,
            stream: false,
        },
        Case {
            bias: false,
            add: Some(false),
            relu: false,
            stream: false,
        },
        Case {
            bias: false,
            add: None,
            relu: true,
            stream: false,
        },
    ];
    for kernel in Kernel::<T>::all() {
        let (mr, nr, kc) = (kernel.mr, kernel.nr, kernel.kc);
        // One slice and several; a short A (B read in place when it is
        // column-major), a tall one split by rows, a wide one by columns.
        let shapes = [
            (mr + 3, 2 * nr + 1, 7, 0),
            (3 * mr + 5, nr + 2, kc + 5, mr),
            (2 * mr, 3 * 96 + 5, kc + 3, 0),
            (9 * mr + 1, 5, 33, 0),
            // One column (a decode step's product): its tiles in pairs
            // where the kernel has them, B in place and packed (21
            // panels), a last pair half empty, rows from a pair's start.
            (5 * mr + 7, 1, kc + 5, 0),
            (21 * mr + 3, 1, 9, 2 * mr),
        ];
        for (m, n, k, first) in shapes {
            for layouts in [(false, true), (true, false), (false, false)] {
                for threads in [1, 2, 3] {
                    for beta in [0, 1] {
                        for case in cases {
                            check(
                                kernel,
                                (m, n, k),
                                first,
                                layouts,
                                threads,
                                beta,
                                case,
                                from,
                                acc,
                            );
                        }
                    }
                }
            }
        }
        // Streaming stores: C column-major on cache lines, its columns
        // whole lines (rows a multiple of 16 values); one slice (streamed)
        // and several (stored as usual), B read in place and packed, split
        // by rows and by columns, the last tiles narrow; then C's columns
        // off their lines (4 rows more: stored as usual).
        let lines = 64 / size_of::<T::Acc>();
        let tall = (2 * mr).next_multiple_of(lines);
        let streamed = [
            (tall, 2 * nr + 1, 7, 0),
            (tall, nr + 2, kc + 5, 0),
            ((9 * mr).next_multiple_of(lines), 3 * 96 + 5, 33, 0),
            (tall + 4, 2 * nr + 1, 7, 0),
            ((4 * mr).next_multiple_of(lines), 1, 7, 0),
        ];
        for (m, n, k, first) in streamed {
            for b_row_major in [false, true] {
                for threads in [1, 2, 3] {
                    for beta in [0, 1] {
                        for case in cases {
                            let case = Case {
                                stream: true,
                                ..case
                            };
                            let layouts = (false, b_row_major);
                            let at = (m, n, k);
                            check(kernel, at, first, layouts, threads, beta, case, from, acc);
                        }
                    }
                }
            }
        }
        println!("checked {}", kernel.name);
    }
}

#[test]
fn the_epilogue_is_exact_on_every_f32_kernel() {
    every_kernel::<f32>(|v| v as f32, |v| v as f32);
}

#[test]
fn the_epilogue_is_exact_on_every_f64_kernel() {
    every_kernel::<f64>(|v| v as f64, |v| v as f64);
}

#[test]
fn the_epilogue_is_exact_on_every_bf16_int8_and_widened_fp16_kernel() {
    every_kernel::<Bf16>(|v| Bf16::from_f32(v as f32), |v| v as f32);
    every_kernel::<Half>(|v| Half::from_f32(v as f32), |v| v as f32);
    every_kernel::<i8>(|v| v as i8, |v| v as i32);
}

#[test]
fn an_epilogue_that_does_not_fit_c_is_an_error_and_nothing_is_written() {
    let a = vec![1.0f32; 6 * 4];
    let b = vec![1.0f32; 4 * 5];
    let pa = PackedA::new(MatRef::row_major(&a, 6, 4).unwrap());
    let short_bias = [1.0f32; 5];
    let wrong = vec![0.0f32; 5 * 6];
    for epilogue in [
        Epilogue {
            row_bias: Some(&short_bias[..]),
            add: None,
            relu: false,
            stream: false,
        },
        Epilogue {
            row_bias: None,
            add: Some(MatRef::row_major(&wrong, 5, 6).unwrap()),
            relu: true,
            stream: true,
        },
    ] {
        let mut c = vec![7.0f32; 6 * 5];
        let cv = MatMut::row_major(&mut c, 6, 5).unwrap();
        let bv = MatRef::row_major(&b, 4, 5).unwrap();
        let err = gemm_packed_rows_then(cv, 1.0, &pa, 0..6, bv, 0.0, epilogue, 1).unwrap_err();
        assert!(matches!(err, Error::Epilogue { .. }), "{err}");
        assert!(c.iter().all(|&v| v == 7.0));
    }
}
