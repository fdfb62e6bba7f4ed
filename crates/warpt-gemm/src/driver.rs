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

use crate::blocking::{balanced, depth};
use crate::epilogue::Epilogue;
use crate::kernel::{Dest, Element, Kernel, Scalar, Store};
use crate::mat::{MatMut, MatRef};
use crate::out::Out;
use crate::pack::{pack_a, pack_b_in};
use crate::packed::PackedA;
use crate::scratch::Scratch;
use crate::shared::{Shared, SpinBarrier};

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
            Left::Packed { a, first, .. } => a.panels(first + i0, m, p0),
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
    let job = Job {
        kernel,
        a,
        b,
        out,
        alpha,
        beta,
        epilogue: (!epilogue.is_none()).then_some(epilogue),
        direct,
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
            job.rows(share(m, kernel.mr, threads, t), &alone, &shared);
            kernel.finish();
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
            job.rows(share(m, kernel.mr, threads, t), &team, &shared);
            kernel.finish();
        });
    } else {
        crate::team::run(threads, &|t| {
            job.columns(share(n, kernel.nr, threads, t));
            kernel.finish();
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

/// One product's operands.
struct Job<'a, T: Element> {
    kernel: &'a Kernel<T>,
    a: Left<'a, T>,
    b: MatRef<'a, T>,
    out: Out<'a, T::Acc>,
    alpha: T::Acc,
    beta: T::Acc,
    /// Applied to each tile after its last slice of the depth.
    epilogue: Option<Epilogue<'a, T::Acc>>,
    /// B read in place, not packed (column split only).
    direct: bool,
}

/// Where a pair of packed blocks sits in the product: rows `ic..ic + mb`,
/// columns `jc..jc + nb`, depths `pc..pc + kb`.
#[derive(Clone, Copy)]
struct Span {
    ic: usize,
    mb: usize,
    jc: usize,
    nb: usize,
    pc: usize,
    kb: usize,
}

impl Span {
    /// The rows and columns of C that tile `(ir, jr)` of the blocks covers.
    fn tile<T: Element>(
        &self,
        kr: &Kernel<T>,
        ir: usize,
        jr: usize,
    ) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let (i0, j0) = (self.ic + ir * kr.mr, self.jc + jr * kr.nr);
        (
            i0..(i0 + kr.mr).min(self.ic + self.mb),
            j0..(j0 + kr.nr).min(self.jc + self.nb),
        )
    }
}

/// The threads of a row-split product, and which one this is.
struct Team<'a> {
    t: usize,
    threads: usize,
    barrier: &'a SpinBarrier,
}

impl<T: Element> Job<'_, T> {
    /// Rows `rows` of C, B's blocks packed with the team into `shared`.
    fn rows(&self, rows: std::ops::Range<usize>, team: &Team<'_>, shared: &Shared<T>) {
        let kr = self.kernel;
        let (n, k) = (self.b.cols(), self.a.cols());
        let (kcb, mcb) = (
            balanced(k, kr.kc, T::GROUP),
            balanced(rows.len(), kr.mc, kr.mr),
        );
        let mut a_buf = self.a.buffer(kr, mcb);
        let mut tile = vec![T::Acc::ZERO; kr.mr * kr.nr];
        let ncb = balanced(n, kr.nc, kr.nr);
        let steps = (0..n)
            .step_by(ncb)
            .flat_map(|jc| (0..k).step_by(kcb).map(move |pc| (jc, pc)));
        for (step, (jc, pc)) in steps.enumerate() {
            let (nb, kb) = (ncb.min(n - jc), kcb.min(k - pc));
            let panels = nb.div_ceil(kr.nr);
            let kp = kb.next_multiple_of(T::GROUP);
            let mine = share(panels, 1, team.threads, team.t);
            // This step's slot of the shared blocks.
            let (b_at, corr_at) = shared.slot(step);
            // SAFETY: each thread writes only its own panels of this step's
            // slot, which no thread reads until all have passed the barrier
            // below, and which the last step to read it is done with: a
            // thread alone read it in its previous step; in a team that was
            // `step - 2`, which every thread finished before packing
            // `step - 1` and passing that step's barrier, which this thread
            // has passed.
            let dst = unsafe {
                shared
                    .b
                    .get_mut(b_at + mine.start * kp * kr.nr, mine.len() * kp * kr.nr)
            };
            pack_b_in(
                kr.order(),
                &self.b,
                pc,
                kb,
                jc,
                nb,
                kr.nr,
                mine.clone(),
                dst,
            );
            if T::CORRECTED {
                // SAFETY: as the panels above.
                let corr = unsafe {
                    shared
                        .corr
                        .get_mut(corr_at + mine.start * kr.nr, mine.len() * kr.nr)
                };
                correct_panels(kr, kp, nb, mine.start, dst, corr);
            }
            team.barrier.wait();
            // SAFETY: every thread has packed its panels of this slot
            // (barrier above), and none writes it again before every
            // thread has passed the next step's barrier.
            let b_block = unsafe { shared.b.get(b_at, panels * kp * kr.nr) };
            // SAFETY: as B's block.
            let corr = T::CORRECTED.then(|| unsafe { shared.corr.get(corr_at, panels * kr.nr) });
            for ic in rows.clone().step_by(mcb) {
                let mb = mcb.min(rows.end - ic);
                let a_block = self.a.panels(ic, mb, pc, kb, kr.mr, &mut a_buf);
                let at = Span {
                    ic,
                    mb,
                    jc,
                    nb,
                    pc,
                    kb,
                };
                self.block(at, a_block, b_block, corr, &mut tile);
            }
        }
    }

    /// Columns `cols` of C, every panel packed by this thread.
    fn columns(&self, cols: std::ops::Range<usize>) {
        let kr = self.kernel;
        let (m, k) = (self.a.rows(), self.a.cols());
        let mut b_buf = Scratch::new(if self.direct { 0 } else { kr.nc * depth(kr, k) });
        let mut tile = vec![T::Acc::ZERO; kr.mr * kr.nr];
        // B read in place is read once per block of A's rows: A (a few
        // panels, as `direct` requires) is taken whole.
        let mc = if self.direct {
            m.next_multiple_of(kr.mr)
        } else {
            kr.mc
        };
        let (kcb, mcb) = (balanced(k, kr.kc, T::GROUP), balanced(m, mc, kr.mr));
        let mut a_buf = self.a.buffer(kr, mcb);
        let ncb = balanced(cols.len(), kr.nc, kr.nr);
        let mut corr = vec![T::Acc::ZERO; if T::CORRECTED { ncb } else { 0 }];
        for jc in cols.clone().step_by(ncb) {
            let nb = ncb.min(cols.end - jc);
            let panels = nb.div_ceil(kr.nr);
            for pc in (0..k).step_by(kcb) {
                let kb = kcb.min(k - pc);
                if !self.direct {
                    let order = kr.order();
                    pack_b_in(order, &self.b, pc, kb, jc, nb, kr.nr, 0..panels, &mut b_buf);
                    if T::CORRECTED {
                        let kp = kb.next_multiple_of(T::GROUP);
                        correct_panels(kr, kp, nb, 0, &b_buf[..panels * kp * kr.nr], &mut corr);
                    }
                }
                for ic in (0..m).step_by(mcb) {
                    let mb = mcb.min(m - ic);
                    let a_block = self.a.panels(ic, mb, pc, kb, kr.mr, &mut a_buf);
                    let at = Span {
                        ic,
                        mb,
                        jc,
                        nb,
                        pc,
                        kb,
                    };
                    if self.direct {
                        self.block_in_place(at, a_block, &mut tile);
                    } else {
                        let corr = T::CORRECTED.then_some(&corr[..]);
                        self.block(at, a_block, &b_buf, corr, &mut tile);
                    }
                }
            }
        }
    }

    /// How a kernel may store its tile of this block straight into C:
    /// for `alpha = ±1` and `beta ∈ {0, 1}` (this block's), with no
    /// correction to add. None: through the tile buffer.
    fn store(&self, beta: T::Acc, corrected: bool) -> Option<Store> {
        let (one, zero) = (T::Acc::ONE, T::Acc::ZERO);
        match (self.alpha, beta) {
            _ if corrected => None,
            (a, b) if a == one && b == zero => Some(Store::Set),
            (a, b) if a == one && b == one => Some(Store::Add),
            (a, b) if a == zero - one && b == one => Some(Store::Sub),
            _ => None,
        }
    }

    /// The microkernel over one packed block pair, each tile added into C
    /// (with its columns' `corr`ections, NR per panel of B, where the
    /// element needs them).
    fn block(
        &self,
        at: Span,
        a_block: &[T],
        b_block: &[T],
        corr: Option<&[T::Acc]>,
        tile: &mut [T::Acc],
    ) {
        let Span { mb, nb, pc, kb, .. } = at;
        let kr = self.kernel;
        // The first slice of the depth applies beta; later ones add.
        let beta = if pc == 0 { self.beta } else { T::Acc::ONE };
        let groups = kb.div_ceil(T::GROUP);
        let kp = groups * T::GROUP;
        for (jr, b_panel) in b_block
            .chunks_exact(kp * kr.nr)
            .take(nb.div_ceil(kr.nr))
            .enumerate()
        {
            // What the stored A needs for this panel's columns (int8).
            let correction = corr.map(|c| &c[jr * kr.nr..][..kr.nr.min(nb - jr * kr.nr)]);
            let store = self.store(beta, correction.is_some());
            let tiles = mb.div_ceil(kr.mr);
            // The next panel of B asked into L2, a share of it with each
            // tile of this one: the block was packed for every block of
            // A's rows and lives in L3, where the prefetchers find a new
            // panel only after its first misses (+7% at n = 2048, f32, one
            // thread, Zen 3 with busy neighbours; level when quiet).
            let next = b_block
                .get((jr + 1) * kp * kr.nr..(jr + 2) * kp * kr.nr)
                .unwrap_or(&[]);
            let share = next.len().div_ceil(tiles);
            for (ir, a_panel) in a_block.chunks_exact(kp * kr.mr).take(tiles).enumerate() {
                let (rows, cols) = at.tile(kr, ir, jr);
                self.out.prefetch(rows.clone(), cols.clone());
                self.prefetch_epilogue(at, &rows, &cols);
                if let Some(part) = next.chunks(share.max(1)).nth(ir) {
                    crate::prefetch::into_l2(part);
                }
                if let Some(dest) = self.in_c(store, &rows, &cols) {
                    kr.run(groups, a_panel, b_panel, rows.len(), cols.len(), dest);
                } else {
                    kr.run(
                        groups,
                        a_panel,
                        b_panel,
                        rows.len(),
                        cols.len(),
                        Dest::Buffer(tile),
                    );
                    if let Some(correction) = correction {
                        for (col, &c) in tile.chunks_exact_mut(kr.mr).zip(correction) {
                            for t in col {
                                *t = *t + c;
                            }
                        }
                    }
                    self.out
                        .update(rows.clone(), cols.clone(), kr.mr, tile, self.alpha, beta);
                }
                self.finish(at, rows, cols);
            }
        }
    }

    /// The tile `rows x cols` of C as a kernel's destination, when `store`
    /// allows and C's layout lets the kernel write it in place.
    fn in_c<'t>(
        &self,
        store: Option<Store>,
        rows: &std::ops::Range<usize>,
        cols: &std::ops::Range<usize>,
    ) -> Option<Dest<'t, T::Acc>> {
        let store = store?;
        let tile = self
            .out
            .tile_mut(rows.clone(), cols.clone(), self.kernel.mr)?;
        Some(Dest::C(tile, store))
    }

    /// [`Self::block`] reading B's columns where they lie (the job is
    /// `direct`: B column-major, elements one depth each, and the kernel
    /// has an in-place variant).
    fn block_in_place(&self, at: Span, a_block: &[T], tile: &mut [T::Acc]) {
        let Span {
            mb, jc, nb, pc, kb, ..
        } = at;
        let kr = self.kernel;
        let beta = if pc == 0 { self.beta } else { T::Acc::ONE };
        let store = self.store(beta, false);
        let (data, rs, cs) = self.b.raw();
        debug_assert!(rs == 1 && T::GROUP == 1);
        for jr in 0..nb.div_ceil(kr.nr) {
            let b = (&data[pc + (jc + jr * kr.nr) * cs..], cs);
            for (ir, a_panel) in a_block
                .chunks_exact(kb * kr.mr)
                .take(mb.div_ceil(kr.mr))
                .enumerate()
            {
                let (rows, cols) = at.tile(kr, ir, jr);
                self.out.prefetch(rows.clone(), cols.clone());
                self.prefetch_epilogue(at, &rows, &cols);
                let dest = self.in_c(store, &rows, &cols);
                let buffered = dest.is_none();
                let dest = dest.unwrap_or(Dest::Buffer(&mut *tile));
                kr.run_direct(kb, a_panel, b, cols.len(), dest);
                if buffered {
                    self.out
                        .update(rows.clone(), cols.clone(), kr.mr, tile, self.alpha, beta);
                }
                self.finish(at, rows, cols);
            }
        }
    }

    /// The epilogue's operands of a tile about to be computed, asked into
    /// cache when its block is the depth's last slice.
    fn prefetch_epilogue(
        &self,
        at: Span,
        rows: &std::ops::Range<usize>,
        cols: &std::ops::Range<usize>,
    ) {
        if let Some(epilogue) = &self.epilogue
            && at.pc + at.kb == self.a.cols()
        {
            epilogue.prefetch(rows.clone(), cols.clone());
        }
    }

    /// The epilogue on a tile just stored, when its block was the depth's
    /// last slice (the tile is complete, and still in L1).
    fn finish(&self, at: Span, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) {
        if let Some(epilogue) = &self.epilogue
            && at.pc + at.kb == self.a.cols()
        {
            self.out.finish(rows, cols, epilogue);
        }
    }
}

/// The correction of each column of packed panels (`nb` columns from
/// panel `first` of the block on, `kp` deep): [`Element::correct`] of
/// each, NR entries per panel (a last panel packed narrow fills its width).
fn correct_panels<T: Element>(
    kr: &Kernel<T>,
    kp: usize,
    nb: usize,
    first: usize,
    packed: &[T],
    out: &mut [T::Acc],
) {
    for (i, (panel, o)) in packed
        .chunks_exact(kp * kr.nr)
        .zip(out.chunks_exact_mut(kr.nr))
        .enumerate()
    {
        let width = kr.nr.min(nb - (first + i) * kr.nr);
        T::correct(&panel[..kp * width], width, kr.order(), o);
    }
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
