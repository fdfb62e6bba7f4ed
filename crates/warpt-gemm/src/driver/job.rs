//! One product's work once it is split: the blocks of A and B a thread
//! packs or shares, and the microkernel over each pair of them, tile by
//! tile, each tile stored into C (in place or through the tile buffer)
//! and finished by the epilogue after the depth's last slice.

use super::{Left, share};
use crate::blocking::{balanced, depth, rows as block_rows};
use crate::epilogue::{Epilogue, TileEpilogue};
use crate::kernel::{Dest, Element, Kernel, PanelOrder, Scalar, Store};
use crate::mat::MatRef;
use crate::out::Out;
use crate::pack::pack_b_in;
use crate::scratch::Scratch;
use crate::shared::{Shared, SpinBarrier};
use crate::tile::TileMut;

/// One product's operands.
pub(super) struct Job<'a, T: Element> {
    pub(super) kernel: &'a Kernel<T>,
    pub(super) a: Left<'a, T>,
    pub(super) b: MatRef<'a, T>,
    pub(super) out: Out<'a, T::Acc>,
    pub(super) alpha: T::Acc,
    pub(super) beta: T::Acc,
    /// Applied to each tile after its last slice of the depth.
    pub(super) epilogue: Option<Epilogue<'a, T::Acc>>,
    /// B read in place, not packed (column split only).
    pub(super) direct: bool,
    /// C's tiles written with streaming stores ([`Store::Stream`]): the
    /// epilogue asks for them and C's layout and the product allow.
    pub(super) stream: bool,
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
pub(super) struct Team<'a> {
    pub(super) t: usize,
    pub(super) threads: usize,
    pub(super) barrier: &'a SpinBarrier,
}

impl<T: Element> Job<'_, T> {
    /// Rows `rows` of C, B's blocks packed with the team into `shared`.
    pub(super) fn rows(&self, rows: std::ops::Range<usize>, team: &Team<'_>, shared: &Shared<T>) {
        let kr = self.kernel;
        let (n, k) = (self.b.cols(), self.a.cols());
        let kcb = balanced(k, kr.kc, T::GROUP);
        let mcb = balanced(rows.len(), block_rows(kr, kcb), kr.mr);
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
        if self.stream {
            crate::out::fence_streams();
        }
    }

    /// Columns `cols` of C, every panel packed by this thread.
    pub(super) fn columns(&self, cols: std::ops::Range<usize>) {
        let kr = self.kernel;
        let (m, k) = (self.a.rows(), self.a.cols());
        let mut b_buf = Scratch::new(if self.direct { 0 } else { kr.nc * depth(kr, k) });
        let mut tile = vec![T::Acc::ZERO; kr.mr * kr.nr];
        // B read in place is read once per block of A's rows: A (a few
        // panels, as `direct` requires) is taken whole.
        let kcb = balanced(k, kr.kc, T::GROUP);
        let mc = if self.direct {
            m.next_multiple_of(kr.mr)
        } else {
            block_rows(kr, kcb)
        };
        let mcb = balanced(m, mc, kr.mr);
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
        if self.stream {
            crate::out::fence_streams();
        }
    }

    /// How a kernel may store its tile of this block straight into C:
    /// for `alpha = ±1` and `beta ∈ {0, 1}` (this block's), with no
    /// correction to add. None: through the tile buffer.
    fn store(&self, beta: T::Acc, corrected: bool) -> Option<Store> {
        let (one, zero) = (T::Acc::ONE, T::Acc::ZERO);
        match (self.alpha, beta) {
            _ if corrected => None,
            (a, b) if a == one && b == zero && self.stream => Some(Store::Stream),
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
            // thread, Zen 3 with busy neighbours; level when quiet). Where
            // the kernel wants it (`Kernel::prefetches_next_b`): not AMX's
            // tiles, whose loads wait on the line-fill buffers these
            // prefetches hold (bf16, one thread, `--example rate`: 1.05x at
            // n = 1024, 1.15x at 2048 without them, 3 interleaved rounds on
            // a Xeon with AMX), nor cores with a large L2.
            let next = match kr.order() {
                PanelOrder::Steps if kr.prefetches_next_b() => b_block
                    .get((jr + 1) * kp * kr.nr..(jr + 2) * kp * kr.nr)
                    .unwrap_or(&[]),
                _ => &[],
            };
            let share = next.len().div_ceil(tiles);
            // C's tile asked into L1 before the kernel runs, where the
            // kernel wants it (`Kernel::prefetches_c`: not AMX's tiles over
            // whole deep chunks).
            let prefetch_c = kr.prefetches_c(groups) && !self.stream;
            for (ir, a_panel) in a_block.chunks_exact(kp * kr.mr).take(tiles).enumerate() {
                let (rows, cols) = at.tile(kr, ir, jr);
                if prefetch_c {
                    self.out.prefetch(rows.clone(), cols.clone());
                }
                self.prefetch_epilogue(at, &rows, &cols);
                if let Some(part) = next.chunks(share.max(1)).nth(ir) {
                    crate::prefetch::into_l2(part);
                }
                if let Some(bias) = self.folded_bias(&rows, &cols).filter(|_| pc == 0)
                    && let Some(tile) = self.out.tile_mut(rows.clone(), cols.clone(), kr.mr)
                {
                    kr.run_biased(groups, a_panel, b_panel, bias, tile);
                } else if let Some(f) = self.finishing(at, store, &rows, &cols, false) {
                    kr.run_finishing(groups, a_panel, b_panel, f.tile, f.store, &f.epilogue);
                    // The epilogue is applied: nothing left for `finish`.
                    continue;
                } else if let Some(dest) = self.in_c(store, &rows, &cols) {
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

    /// The tile `rows x cols` of C, how to store into it and its epilogue,
    /// when the kernel applies the epilogue as it stores the tile (reading
    /// B in place when `direct`): the depth's last slice, an epilogue to
    /// apply, the tile whole and written in place by `store`, the added
    /// matrix's columns contiguous. [`Self::finish`] then has nothing left
    /// to do for the tile: a ResNet-50 convolution's bias, shortcut and
    /// ReLU went through a pass of their own over each stored tile.
    fn finishing(
        &self,
        at: Span,
        store: Option<Store>,
        rows: &std::ops::Range<usize>,
        cols: &std::ops::Range<usize>,
        direct: bool,
    ) -> Option<Finished<'_, T::Acc>> {
        let kr = self.kernel;
        if !kr.has_finishing(direct) || at.pc + at.kb != self.a.cols() {
            return None;
        }
        let fin = self
            .epilogue
            .as_ref()?
            .for_tile(rows.clone(), cols.clone())?;
        let tile = self.out.tile_mut(rows.clone(), cols.clone(), kr.mr)?;
        Some(Finished {
            tile,
            store: store?,
            epilogue: fin,
        })
    }

    /// The row biases of tile `rows x cols` when the kernel starts its
    /// accumulators from them (its first slice of the depth) rather than
    /// the epilogue adding them to the stored tile: a kernel that can, the
    /// epilogue's bias, `alpha = 1` and `beta = 0`, the tile whole and
    /// written in place. The same for every slice of a tile, so the
    /// epilogue leaves out what the kernel added ([`Self::finish`]).
    fn folded_bias(
        &self,
        rows: &std::ops::Range<usize>,
        cols: &std::ops::Range<usize>,
    ) -> Option<&[T::Acc]> {
        let kr = self.kernel;
        if !kr.has_biased() || self.direct || T::CORRECTED {
            return None;
        }
        let bias = self.epilogue.as_ref()?.row_bias?;
        (self.store(self.beta, false) == Some(Store::Set)
            && rows.len() == kr.mr
            && self
                .out
                .tile_mut(rows.clone(), cols.clone(), kr.mr)
                .is_some())
        .then(|| &bias[rows.clone()])
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
        let tiles = mb.div_ceil(kr.mr);
        let panels = nb.div_ceil(kr.nr);
        for jr in 0..panels {
            let b = (&data[pc + (jc + jr * kr.nr) * cs..], cs);
            // The next panel's columns asked into L2, a few with each tile
            // of this one: read in place, they come from memory (a layer's
            // activations), and the first tile of a panel would otherwise
            // wait on NR streams of misses the prefetchers pick up late.
            // Two threads, Zen 4, `--example rate` with M = 25088: K = 64,
            // N = 256 (ResNet-50's 1×1 64→256 at 56²) 1.04×, K = 256,
            // N = 64 1.20×; one thread 1.05× and 1.19×; resnet50_infer
            // f32 batch 8 1.013× (4 interleaved rounds each).
            let next = if jr + 1 < panels {
                kr.nr.min(nb - (jr + 1) * kr.nr)
            } else {
                0
            };
            let first = jc + (jr + 1) * kr.nr;
            for (ir, a_panel) in a_block.chunks_exact(kb * kr.mr).take(tiles).enumerate() {
                let (rows, cols) = at.tile(kr, ir, jr);
                if !self.stream {
                    self.out.prefetch(rows.clone(), cols.clone());
                }
                self.prefetch_epilogue(at, &rows, &cols);
                for col in (ir..next).step_by(tiles) {
                    let start = pc + (first + col) * cs;
                    if let Some(part) = data.get(start..start + kb) {
                        crate::prefetch::into_l2(part);
                    }
                }
                if next > 0 {
                    self.prefetch_next_epilogue(at, jr + 1, ir, tiles);
                }
                if let Some(f) = self.finishing(at, store, &rows, &cols, true) {
                    kr.run_direct_finishing(kb, a_panel, b, f.tile, f.store, &f.epilogue);
                    continue;
                }
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

    /// The epilogue's operands of panel `jr` of B's block (the next one),
    /// over the block's rows, asked into L2: tile `ir` of the current
    /// panel's `tiles` asks for its share of the columns, when the block
    /// is the depth's last slice. A residual block's shortcut is as large
    /// as C and read from memory: asked for a tile at a time only
    /// ([`Self::prefetch_epilogue`]), its misses stalled each tile. Where
    /// B is read in place (a shallow layer, few tiles a panel): ResNet-50's
    /// 1×1 64 → 256 at 56² with its shortcut 1.03× (Zen 4, two threads,
    /// four interleaved rounds); where B is packed (128 → 512 at 28²,
    /// 256 → 1024 at 14²) it measured 0.98–0.99×, so those do without.
    fn prefetch_next_epilogue(&self, at: Span, jr: usize, ir: usize, tiles: usize) {
        if let Some(epilogue) = &self.epilogue
            && at.pc + at.kb == self.a.cols()
        {
            let kr = self.kernel;
            let first = jr * kr.nr;
            let count = kr.nr.min(at.nb.saturating_sub(first));
            for col in (ir..count).step_by(tiles) {
                epilogue.prefetch_column(at.ic..at.ic + at.mb, at.jc + first + col);
            }
        }
    }

    /// The epilogue on a tile just stored, when its block was the depth's
    /// last slice (the tile is complete, and still in L1).
    fn finish(&self, at: Span, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) {
        if let Some(epilogue) = &self.epilogue
            && at.pc + at.kb == self.a.cols()
        {
            // Without the bias when the kernel started from it.
            let epilogue = match self.folded_bias(&rows, &cols) {
                Some(_) => Epilogue {
                    row_bias: None,
                    ..*epilogue
                },
                None => *epilogue,
            };
            if !epilogue.is_none() {
                self.out.finish(rows, cols, &epilogue);
            }
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

/// A tile of C whose kernel applies the epilogue as it stores the tile
/// ([`Job::finishing`]).
struct Finished<'e, A> {
    /// The tile, whole, in C.
    tile: TileMut<A>,
    /// How the product goes into it.
    store: Store,
    /// The tile's part of the epilogue.
    epilogue: TileEpilogue<'e, A>,
}
