//! The loops around the microkernel, and the threads.
//!
//! For each `NC`-wide block of columns and `KC`-deep slice of the depth,
//! B's block is packed into `NR`-wide micro-panels and A's rows `MC` at a
//! time into `MR`-tall ones, and the microkernel runs over every (B
//! micro-panel, A micro-panel) pair, B's outer so its micro-panel stays in
//! L1 while A's stream from L2.
//!
//! A product too small to split runs on the calling thread. One wide
//! enough to give every thread `COLUMNS_MIN` columns is split by columns,
//! each thread packing its own panels of B and all of A, waiting for no
//! other. A thinner one is split by rows, in whole micro-panels as evenly
//! as they go: the threads pack each block of B between them (each a share
//! of its micro-panels, into one of two slots so the next block's packing
//! never waits for this one's readers), wait for each other once, and each
//! multiplies its own rows. One too short in rows to split by them is
//! split by columns. When A is short (a few micro-panels: a layer's
//! weights against many activations) and B's columns are contiguous, B is
//! not packed at all: the kernel reads its columns where they lie, and the
//! threads split the columns.
//!
//! Here: the entry points, the checks and the split; `job`: each thread's
//! loops over the blocks and tiles of its share.

mod job;

use crate::blocking::{balanced, depth};
use crate::epilogue::Epilogue;
use crate::kernel::{Element, Kernel, Scalar};
use crate::mat::{MatMut, MatRef};
use crate::out::Out;
use crate::pack::pack_a;
use crate::packed::PackedA;
use crate::scratch::Scratch;
use crate::shared::{Shared, SpinBarrier};
use job::{Job, Team};

/// Why a product could not be formed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Rows of a packed A that it cannot give: a range that runs past its
    /// rows or starts inside a micro-panel.
    #[error(
        "rows {start}..{end} of a packed A of {rows} rows: a range must end by its last row and start at a multiple of {mr}"
    )]
    Rows {
        /// The range's first row.
        start: usize,
        /// Its end.
        end: usize,
        /// The packed A's rows.
        rows: usize,
        /// Its micro-panels' height.
        mr: usize,
    },
    /// The shapes do not chain: `C (m x n) = A (m x k) · B (k x n)`.
    #[error(
        "C is {c_rows} x {c_cols}, A is {a_rows} x {a_cols}, B is {b_rows} x {b_cols}: C = A·B needs A m x k, B k x n, C m x n"
    )]
    Shape {
        /// C's rows.
        c_rows: usize,
        /// C's columns.
        c_cols: usize,
        /// A's rows.
        a_rows: usize,
        /// A's columns.
        a_cols: usize,
        /// B's rows.
        b_rows: usize,
        /// B's columns.
        b_cols: usize,
    },
    /// An epilogue's operand that does not fit C.
    #[error("the epilogue has {what}")]
    Epilogue {
        /// Which operand, and its shape.
        what: String,
    },
}

/// At most this many of A's micro-panels, B is read in place where the
/// kernel can (each B panel would be packed for so few uses).
const DIRECT_MAX_PANELS: usize = 8;

/// From this many columns a thread, a product is split by columns: each
/// thread packs its own panels of B and waits for no other, instead of
/// sharing B's packed blocks with a barrier per slice of the depth and
/// reading half of each from the other cores. Two threads, Zen 4, columns
/// against rows: square products 384–2048 +1–13% (fp64, fp32, bf16),
/// int8 at 384 +17–25%, BERT's shapes +1–55%; 4096 rows by 16 columns
/// 0.74×, by 64 0.83–0.98×, by 96 and 192 level (`--example rate`).
const COLUMNS_MIN: usize = 96;

/// Below this many multiply-adds a product runs on one thread: starting
/// the others would cost more than they save.
const SPLIT_MIN: usize = 96 * 96 * 96;

/// `C = alpha·A·B + beta·C` with the best kernel this CPU runs (of its
/// best ISA level, the tile [`Kernel::for_rows`] takes for the product's
/// rows), on
/// `threads` threads (0: one per CPU this process may use). `beta = 0`
/// does not read C (NaNs in it are overwritten).
pub fn gemm<T: Element>(
    c: MatMut<'_, T::Acc>,
    alpha: T::Acc,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    beta: T::Acc,
    threads: usize,
) -> Result<(), Error> {
    // The rows of the product as the kernel sees it (see `gemm_with`).
    let rows = if transposed(&c) { c.cols() } else { c.rows() };
    gemm_with(Kernel::<T>::for_rows(rows), c, alpha, a, b, beta, threads)
}

/// Whether C is multiplied as Cᵀ = Bᵀ·Aᵀ: the kernels store tiles a
/// column at a time, so a row-major C is made column-major that way.
fn transposed<U>(c: &MatMut<'_, U>) -> bool {
    let (rs, cs) = c.strides();
    cs == 1 && rs != 1
}

/// [`gemm`] with the given kernel (one of [`Kernel::all`]).
pub fn gemm_with<T: Element>(
    kernel: &Kernel<T>,
    c: MatMut<'_, T::Acc>,
    alpha: T::Acc,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    beta: T::Acc,
    threads: usize,
) -> Result<(), Error> {
    if transposed(&c) && shape_ok(&c, &a, &b) {
        execute(
            kernel,
            c.t(),
            alpha,
            Left::Plain(b.t()),
            a.t(),
            beta,
            Epilogue::NONE,
            threads,
        )
    } else {
        execute(
            kernel,
            c,
            alpha,
            Left::Plain(a),
            b,
            beta,
            Epilogue::NONE,
            threads,
        )
    }
}

/// Whether `C = A·B` chains.
fn shape_ok<T, U>(c: &MatMut<'_, U>, a: &MatRef<'_, T>, b: &MatRef<'_, T>) -> bool {
    a.rows() == c.rows() && b.rows() == a.cols() && b.cols() == c.cols()
}

/// A product's left operand: a view packed block by block as the product
/// goes, or packed once beforehand.
#[derive(Clone, Copy)]
pub(crate) enum Left<'a, T: Element> {
    /// A view.
    Plain(MatRef<'a, T>),
    /// Rows `first..first + rows` of a packed A (`first` a multiple of
    /// its `MR`).
    Packed {
        /// The packed matrix.
        a: &'a PackedA<T>,
        /// The first of its rows the product takes.
        first: usize,
        /// How many.
        rows: usize,
    },
}

impl<T: Element> Left<'_, T> {
    fn rows(&self) -> usize {
        match self {
            Left::Plain(a) => a.rows(),
            Left::Packed { rows, .. } => *rows,
        }
    }

    fn cols(&self) -> usize {
        match self {
            Left::Plain(a) => a.cols(),
            Left::Packed { a, .. } => a.cols(),
        }
    }

    /// A buffer for one packed block of `mc` rows, or none when A is
    /// packed already.
    fn buffer(&self, kernel: &Kernel<T>, mc: usize) -> Scratch<T> {
        Scratch::new(match self {
            Left::Plain(a) => mc.next_multiple_of(kernel.mr) * depth(kernel, a.cols()),
            Left::Packed { .. } => 0,
        })
    }

    /// The packed panels of rows `i0..i0 + m`, depths `p0..p0 + k`: packed
    /// into `buf`, or found in the packed A.
    #[allow(clippy::too_many_arguments)]
    fn panels<'s>(
        &'s self,
        i0: usize,
        m: usize,
        p0: usize,
        k: usize,
        mr: usize,
        buf: &'s mut [T],
    ) -> &'s [T] {
        match self {
            Left::Plain(a) => {
                // A buffer too short would leave rows unpacked, silently.
                assert!(buf.len() >= m.div_ceil(mr) * k.next_multiple_of(T::GROUP) * mr);
                pack_a(a, i0, m, p0, k, mr, buf);
                buf
            }
            Left::Packed { a, first, .. } => a.panels(first + i0, m, p0, mr),
        }
    }
}

/// The product itself, C in tiles as it is laid out.
#[allow(clippy::too_many_arguments)]
pub(crate) fn execute<T: Element>(
    kernel: &Kernel<T>,
    mut c: MatMut<'_, T::Acc>,
    alpha: T::Acc,
    a: Left<'_, T>,
    b: MatRef<'_, T>,
    beta: T::Acc,
    epilogue: Epilogue<'_, T::Acc>,
    threads: usize,
) -> Result<(), Error> {
    let (m, n, k) = (c.rows(), c.cols(), a.cols());
    if a.rows() != m || b.rows() != k || b.cols() != n {
        return Err(Error::Shape {
            c_rows: m,
            c_cols: n,
            a_rows: a.rows(),
            a_cols: a.cols(),
            b_rows: b.rows(),
            b_cols: b.cols(),
        });
    }
    epilogue.check(m, n)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    let kernel = &kernel.fitted();
    if let Left::Packed { a: p, .. } = a {
        // A was packed in its kernel's slices of the depth.
        debug_assert_eq!(p.slice_depth(), balanced(k, kernel.kc, T::GROUP));
    }
    // A product of one column on a packed A whose rows start on a pair of
    // its panels reads them two at a time (`kernel::Pair`).
    let paired = match a {
        Left::Packed { first, .. } if n == 1 && first.is_multiple_of(2 * kernel.mr) => {
            kernel.paired().map(|k| k.fitted())
        }
        _ => None,
    };
    let kernel = paired.as_ref().unwrap_or(kernel);
    let out = Out::new(&mut c);
    if k == 0 || alpha == T::Acc::ZERO {
        out.scale(0..m, 0..n, beta);
        out.finish(0..m, 0..n, &epilogue);
        return Ok(());
    }
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        threads
    };
    let threads = if m.saturating_mul(n).saturating_mul(k) < SPLIT_MIN {
        1
    } else {
        threads.min(m.div_ceil(kernel.mr).max(n.div_ceil(kernel.nr)))
    };
    // B read in place where packing it would not pay: the kernel can,
    // B's columns are contiguous, and A is so short that each B panel
    // meets only a few of A's (a layer's weights against a batch of
    // activations or an im2col), so packing would copy all of B for a few
    // uses of each element.
    let direct =
        kernel.has_direct() && b.strides().0 == 1 && m.div_ceil(kernel.mr) <= DIRECT_MAX_PANELS;
    // Streaming stores where the epilogue asks and every tile's vectors
    // start on cache lines, the product is one slice of the depth (so each
    // tile is stored once, never read back), and the kernel applies the
    // epilogue as it stores the tile (no pass reading it back after).
    let stream = epilogue.stream
        && out.lines_aligned(kernel.mr)
        && balanced(k, kernel.kc, T::GROUP) >= k
        && (epilogue.is_none() || kernel.has_finishing(direct));
    let job = Job {
        kernel,
        a,
        b,
        out,
        alpha,
        beta,
        epilogue: (!epilogue.is_none()).then_some(epilogue),
        direct,
        stream,
    };
    // By columns, each thread packing its own panels of B and all of A,
    // when every thread gets `COLUMNS_MIN` columns or more (A's packing,
    // repeated by each thread, is then small beside the products), when B
    // is read in place, or when A is too short to give every thread two
    // panels. Otherwise by rows, B's packed blocks shared. One thread
    // runs on the caller either way. B of a single micro-panel (a decode
    // step's activations) is packed by each thread for itself: copying it
    // costs nothing, waiting for one another at every slice of the depth
    // does.
    let by_rows = !direct
        && (threads <= 1 || (m.div_ceil(kernel.mr) >= 2 * threads && n < COLUMNS_MIN * threads));
    if by_rows && threads > 1 && n <= kernel.nr {
        crate::team::run(threads, &|t| {
            let (shared, barrier) = (Shared::new(kernel, k, n, 1), SpinBarrier::new(1));
            let alone = Team {
                t: 0,
                threads: 1,
                barrier: &barrier,
            };
            let _share = kernel.share();
            job.rows(share(m, kernel.mr, threads, t), &alone, &shared);
        });
    } else if by_rows {
        let shared = Shared::new(kernel, k, n, threads);
        let barrier = SpinBarrier::new(threads);
        crate::team::run(threads, &|t| {
            let team = Team {
                t,
                threads,
                barrier: &barrier,
            };
            let _share = kernel.share();
            job.rows(share(m, kernel.mr, threads, t), &team, &shared);
        });
    } else {
        crate::team::run(threads, &|t| {
            let _share = kernel.share();
            job.columns(share(n, kernel.nr, threads, t));
        });
    }
    Ok(())
}

/// Thread `t`'s share of `len` in whole units of `unit`, as even as they go.
fn share(len: usize, unit: usize, threads: usize, t: usize) -> std::ops::Range<usize> {
    let units = len.div_ceil(unit);
    let at = |t: usize| (units * t / threads * unit).min(len);
    at(t)..at(t + 1)
}

/// `C = alpha·A·B + beta·C` for a packed A, on its kernel, on `threads`
/// threads (0: one per CPU this process may use). As [`gemm`]
/// otherwise; C of any layout (a row-major C is written a tile column at
/// a time through its strides).
pub fn gemm_packed<T: Element>(
    c: MatMut<'_, T::Acc>,
    alpha: T::Acc,
    a: &PackedA<T>,
    b: MatRef<'_, T>,
    beta: T::Acc,
    threads: usize,
) -> Result<(), Error> {
    gemm_packed_rows(c, alpha, a, 0..a.rows(), b, beta, threads)
}

/// [`gemm_packed`] on rows `rows` of the packed A alone (C has that many
/// rows): a band of a layer's output features, on one thread of many,
/// from one packing of the whole matrix. `rows.start` must be a multiple
/// of the kernel's `MR` ([`PackedA::kernel`]) unless the range is empty.
pub fn gemm_packed_rows<T: Element>(
    c: MatMut<'_, T::Acc>,
    alpha: T::Acc,
    a: &PackedA<T>,
    rows: std::ops::Range<usize>,
    b: MatRef<'_, T>,
    beta: T::Acc,
    threads: usize,
) -> Result<(), Error> {
    gemm_packed_rows_then(c, alpha, a, rows, b, beta, Epilogue::NONE, threads)
}

/// [`gemm_packed_rows`], then `epilogue` on C (a bias per row of C, a
/// matrix added, a ReLU), each tile as it is completed.
#[allow(clippy::too_many_arguments)]
pub fn gemm_packed_rows_then<T: Element>(
    c: MatMut<'_, T::Acc>,
    alpha: T::Acc,
    a: &PackedA<T>,
    rows: std::ops::Range<usize>,
    b: MatRef<'_, T>,
    beta: T::Acc,
    epilogue: Epilogue<'_, T::Acc>,
    threads: usize,
) -> Result<(), Error> {
    let misaligned = !rows.is_empty() && !rows.start.is_multiple_of(a.kernel().mr);
    if rows.start > rows.end || rows.end > a.rows() || misaligned {
        return Err(Error::Rows {
            start: rows.start,
            end: rows.end,
            rows: a.rows(),
            mr: a.kernel().mr,
        });
    }
    let left = Left::Packed {
        a,
        first: rows.start,
        rows: rows.len(),
    };
    execute(a.kernel(), c, alpha, left, b, beta, epilogue, threads)
}
