//! Smith-Waterman with affine gaps across targets (inter-sequence SIMD,
//! Rognes's SWIPE, 2011): each lane aligns the query against a different
//! target, so a database search fills every lane with no data-dependent
//! pass (the striped kernel's lazy F) at all.
//!
//! Targets are sorted by length and packed `N` to a group (the vector's
//! lane count), residue `j` of every lane side by side; a group's shorter
//! targets are padded with a residue that scores at most zero against
//! anything, which cannot raise a lane's best (every padded cell is at most
//! a cell already computed). For each target column the kernel looks up
//! the column's scores against every alphabet letter (one shuffle per
//! letter), then walks the query: per cell, one vector of lanes holds
//! `H`, `E` and `F` of `N` different pairs.
//!
//! A group that would be mostly padding (the last, part-filled one, or a
//! few targets far longer than the rest) is aligned one pair at a time by
//! the striped kernel instead, so a skewed set of lengths costs no more
//! than it would there.
//!
//! As in the striped kernel, lanes start in saturating unsigned 8 bits (a
//! bias keeps scores non-negative); the pairs whose 8-bit score may have
//! saturated are packed again and aligned in signed 16-bit lanes, and a
//! 16-bit overflow falls back to the `i32` scalar reference.

use rayon::prelude::*;

use crate::scoring::{Gaps, Matrix};
use crate::sw_scalar;
use crate::sw_striped::{Aligner, Isa, Width};

/// Alphabets up to this many residues (the pad included) fit the lookup.
const TABLE: usize = 32;

/// Targets of one search, packed for one lane count.
pub struct Packed {
    lanes: usize,
    groups: Vec<Group>,
}

/// Up to `lanes` targets aligned together.
struct Group {
    /// Each lane's target, as an index into the search's targets.
    ids: Vec<usize>,
    /// The longest target's length: columns in the group.
    columns: usize,
    /// `columns × lanes` residues, column-major; the pad past a target's end.
    residues: Vec<u8>,
    /// Whether real residues fill at least half of its cells (else its
    /// targets are aligned one pair at a time).
    dense: bool,
}

impl Packed {
    /// `ids` (indices into `targets`) sorted by length, `lanes` to a group.
    fn new(targets: &[Vec<u8>], mut ids: Vec<usize>, lanes: usize, pad: u8) -> Self {
        ids.sort_by_key(|&i| (targets[i].len(), i));
        let groups = ids
            .chunks(lanes)
            .map(|chunk| {
                let columns = chunk.iter().map(|&i| targets[i].len()).max().unwrap_or(0);
                let filled: usize = chunk.iter().map(|&i| targets[i].len()).sum();
                let dense = 2 * filled >= columns * lanes;
                let mut residues = vec![pad; columns * lanes];
                for (lane, &i) in chunk.iter().enumerate() {
                    for (j, &r) in targets[i].iter().enumerate() {
                        residues[j * lanes + lane] = r;
                    }
                }
                Group {
                    ids: chunk.to_vec(),
                    columns,
                    residues,
                    dense,
                }
            })
            .collect();
        Packed { lanes, groups }
    }
}

/// A scoring scheme ready to search queries against packed targets.
pub struct Searcher<'m> {
    isa: Isa,
    matrix: &'m Matrix,
    gaps: Gaps,
    /// `-min score`: added to every 8-bit table entry.
    bias: u8,
    /// The highest score a cell can add (for the 16-bit overflow margin).
    max_score: i32,
    /// The residue index past a target's end (the alphabet's size).
    pad: u8,
    /// Per query letter, its score + bias against each target residue;
    /// 0 (a score of `-bias`) against the pad.
    tables8: Vec<[u8; TABLE]>,
    /// The same as `i8` scores, `i8::MIN` against the pad.
    tables16: Vec<[u8; TABLE]>,
}

impl<'m> Searcher<'m> {
    /// The scheme on `isa` (falling back to the scalar reference where the
    /// CPU lacks it, or the alphabet does not fit the lookup).
    ///
    /// # Panics
    /// If the gap penalties are not between 0 and 127.
    pub fn new(isa: Isa, matrix: &'m Matrix, gaps: Gaps) -> Self {
        assert!(
            (0..128).contains(&gaps.open) && (0..128).contains(&gaps.extend),
            "gap penalties 0..=127"
        );
        let size = matrix.size();
        let isa = if isa.available() && size < TABLE {
            isa
        } else {
            Isa::Scalar
        };
        let (min, max) = matrix.range();
        let bias = (-min).clamp(0, 127) as u8;
        let mut tables8 = vec![[0u8; TABLE]; size];
        let mut tables16 = vec![[i8::MIN as u8; TABLE]; size];
        for a in 0..size {
            for b in 0..size {
                let s = matrix.score(a as u8, b as u8);
                tables8[a][b] = (s + bias as i32).clamp(0, 255) as u8;
                tables16[a][b] = s.clamp(-128, 127) as i8 as u8;
            }
        }
        Searcher {
            isa,
            matrix,
            gaps,
            bias,
            max_score: max,
            pad: size as u8,
            tables8,
            tables16,
        }
    }

    /// The instruction set it runs on.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// `targets` packed for the first (8-bit) pass (nothing on the scalar
    /// reference, which aligns them as they are).
    pub fn pack(&self, targets: &[Vec<u8>]) -> Packed {
        let ids = match self.isa {
            Isa::Scalar => Vec::new(),
            _ => (0..targets.len()).collect(),
        };
        Packed::new(targets, ids, self.lanes(1), self.pad)
    }

    /// 8-bit lanes per vector (`bytes` = 1), or 16-bit (`bytes` = 2).
    fn lanes(&self, bytes: usize) -> usize {
        (self.isa.lanes8() / bytes).max(1)
    }

    /// The best local score of `query` against every target, in the
    /// targets' order, with the width that computed it. `packed` is
    /// [`Self::pack`] of the same `targets`. Runs on the current rayon pool.
    pub fn search(&self, query: &[u8], targets: &[Vec<u8>], packed: &Packed) -> Vec<(i32, Width)> {
        let scalar = |t: &Vec<u8>| sw_scalar::score(query, t, self.matrix, self.gaps);
        if self.isa == Isa::Scalar {
            return targets
                .par_iter()
                .map(|t| (scalar(t), Width::I32))
                .collect();
        }
        let mut out = vec![(0, Width::U8); targets.len()];
        if query.is_empty() {
            return out;
        }
        // For the groups that would be mostly padding.
        let striped = Aligner::new(self.isa, query, self.matrix, self.gaps);
        let first = self.pass(query, targets, packed, 1, &striped);
        let mut wide = Vec::new();
        for (id, score) in first {
            match score {
                Some(s) => out[id] = (s, Width::U8),
                None => wide.push(id),
            }
        }
        if wide.is_empty() {
            return out;
        }
        let packed16 = Packed::new(targets, wide, self.lanes(2), self.pad);
        let second = self.pass(query, targets, &packed16, 2, &striped);
        let mut overflow = Vec::new();
        for (id, score) in second {
            match score {
                Some(s) => out[id] = (s, Width::I16),
                None => overflow.push(id),
            }
        }
        let last: Vec<(usize, i32)> = overflow
            .into_par_iter()
            .map(|id| (id, scalar(&targets[id])))
            .collect();
        for (id, s) in last {
            out[id] = (s, Width::I32);
        }
        out
    }

    /// Every group of `packed` in `bytes`-wide lanes (a sparse group's
    /// targets one at a time on `striped`, `query`'s striped profile):
    /// each target's score, or `None` where it may have saturated.
    fn pass(
        &self,
        query: &[u8],
        targets: &[Vec<u8>],
        packed: &Packed,
        bytes: usize,
        striped: &Aligner<'_>,
    ) -> Vec<(usize, Option<i32>)> {
        debug_assert_eq!(packed.lanes, self.lanes(bytes));
        packed
            .groups
            .par_iter()
            .flat_map_iter(|g| {
                let best: Vec<Option<i32>> = if g.dense {
                    self.group(query, g, bytes)
                } else if bytes == 1 {
                    g.ids.iter().map(|&i| striped.score8(&targets[i])).collect()
                } else {
                    g.ids
                        .iter()
                        .map(|&i| striped.score16(&targets[i]))
                        .collect()
                };
                g.ids.iter().copied().zip(best).collect::<Vec<_>>()
            })
            .collect()
    }

    /// One group: each lane's best, or `None` if it may have saturated.
    fn group(&self, query: &[u8], group: &Group, bytes: usize) -> Vec<Option<i32>> {
        #[cfg(target_arch = "x86_64")]
        {
            let (open, ext) = (self.gaps.open, self.gaps.extend);
            let mut best = vec![0i32; self.lanes(bytes)];
            let job = x86::Job {
                query,
                residues: &group.residues,
                columns: group.columns,
                letters: self.tables8.len(),
            };
            // SAFETY: `new` kept `isa` only where the CPU runs it; the
            // tables hold one 32-byte row per letter and every residue
            // (the pad included) is below 32; `residues` holds
            // `columns × lanes` of them; `best` holds `lanes`.
            unsafe {
                match (self.isa, bytes) {
                    (Isa::Avx2, 1) => {
                        x86::avx2_u8(&job, &self.tables8, (open, ext, self.bias), &mut best)
                    }
                    (Isa::Avx2, _) => x86::avx2_i16(&job, &self.tables16, (open, ext), &mut best),
                    (Isa::Avx512Bw, 1) => {
                        x86::avx512_u8(&job, &self.tables8, (open, ext, self.bias), &mut best)
                    }
                    (Isa::Avx512Bw, _) => {
                        x86::avx512_i16(&job, &self.tables16, (open, ext), &mut best)
                    }
                    (Isa::Scalar, _) => unreachable!("the scalar search aligns no groups"),
                }
            }
            // A cell at the top of the range may have been cut off there.
            let top = if bytes == 1 {
                255 - self.bias as i32
            } else {
                i16::MAX as i32 - self.max_score
            };
            best.into_iter().map(|b| (b < top).then_some(b)).collect()
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (query, bytes);
            vec![None; group.ids.len()]
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The column loop, written once over [`Lanes`] and instantiated for
    //! each ISA and width inside a `target_feature` function.

    use super::TABLE;
    use crate::sw_lanes::{Avx2I16, Avx2U8, Avx512I16, Avx512U8, Lanes};

    /// One group's inputs.
    pub(super) struct Job<'a> {
        pub query: &'a [u8],
        /// `columns × N` residues, column-major.
        pub residues: &'a [u8],
        pub columns: usize,
        /// Letters in the alphabet (rows of the tables).
        pub letters: usize,
    }

    /// Every lane's best cell over the group. `add(diag, s)` adds a
    /// looked-up score to a diagonal predecessor and floors the sum at
    /// zero (for 8 bits, taking the bias off again).
    ///
    /// The vertical gap `F` is the loop-carried chain (each row waits for
    /// the one above). With `OPEN_GE_EXT` (opening costs at least as much
    /// as extending) the chain is two instructions instead of four: as
    /// `H = max(X, F)` with `X = max(diagonal + s, E)`, `H − open =
    /// max(X − open, F − open)` and `F − open ≤ F − extend`, so the next
    /// `F = max(F − extend, X − open)` does not wait for `H`.
    #[inline(always)]
    unsafe fn inter<V: Lanes, const OPEN_GE_EXT: bool>(
        job: &Job<'_>,
        tables: &[[u8; TABLE]],
        open: V::Elem,
        ext: V::Elem,
        add: impl Fn(V, V) -> V,
        best_out: &mut [i32],
    ) {
        // SAFETY: the caller's contract (see `Searcher::group`).
        unsafe {
            let (v_open, v_ext, zero) = (V::splat(open), V::splat(ext), V::zero());
            let m = job.query.len();
            // H of the previous column and E into the next, per query row.
            let mut h_col = vec![zero; m];
            let mut e_col = vec![zero; m];
            // The column's scores against each query letter.
            let mut scores = vec![zero; job.letters];
            let mut best = zero;
            for j in 0..job.columns {
                let index = job.residues.as_ptr().add(j * V::N);
                for (a, row) in tables.iter().enumerate() {
                    scores[a] = V::lookup(row.as_ptr(), index);
                }
                let mut diag = zero;
                let mut f = zero;
                for (i, &q) in job.query.iter().enumerate() {
                    let left = *h_col.get_unchecked(i);
                    let e = *e_col.get_unchecked(i);
                    let x = V::max(add(diag, *scores.get_unchecked(q as usize)), e);
                    let h = V::max(x, f);
                    *h_col.get_unchecked_mut(i) = h;
                    best = V::max(best, h);
                    let h_open = V::subs(h, v_open);
                    *e_col.get_unchecked_mut(i) = V::max(V::subs(e, v_ext), h_open);
                    f = if OPEN_GE_EXT {
                        V::max(V::subs(f, v_ext), V::subs(x, v_open))
                    } else {
                        V::max(V::subs(f, v_ext), h_open)
                    };
                    diag = left;
                }
            }
            let mut lanes = [V::Elem::default(); 64];
            V::store(lanes.as_mut_ptr(), best);
            for (out, &b) in best_out.iter_mut().zip(&lanes[..V::N]) {
                *out = b.into();
            }
        }
    }

    /// [`inter`] with the gap chain the penalties allow.
    #[inline(always)]
    unsafe fn dispatch<V: Lanes>(
        job: &Job<'_>,
        tables: &[[u8; TABLE]],
        open: V::Elem,
        ext: V::Elem,
        add: impl Fn(V, V) -> V,
        best: &mut [i32],
    ) {
        // SAFETY: the caller's contract.
        unsafe {
            if open.into() >= ext.into() {
                inter::<V, true>(job, tables, open, ext, add, best)
            } else {
                inter::<V, false>(job, tables, open, ext, add, best)
            }
        }
    }

    /// 8-bit lanes on AVX2.
    ///
    /// # Safety
    /// The CPU has AVX2; see `Searcher::group`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2_u8(
        job: &Job<'_>,
        tables: &[[u8; TABLE]],
        (open, ext, bias): (i32, i32, u8),
        best: &mut [i32],
    ) {
        // SAFETY: the caller's contract.
        unsafe {
            let b = Avx2U8::splat(bias);
            let add = |d, s| Avx2U8::subs(Avx2U8::adds(d, s), b);
            dispatch::<Avx2U8>(job, tables, open as u8, ext as u8, add, best)
        }
    }

    /// 16-bit lanes on AVX2.
    ///
    /// # Safety
    /// As [`avx2_u8`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2_i16(
        job: &Job<'_>,
        tables: &[[u8; TABLE]],
        (open, ext): (i32, i32),
        best: &mut [i32],
    ) {
        // SAFETY: the caller's contract.
        unsafe {
            let zero = Avx2I16::zero();
            let add = |d, s| Avx2I16::max(Avx2I16::adds(d, s), zero);
            dispatch::<Avx2I16>(job, tables, open as i16, ext as i16, add, best)
        }
    }

    /// 8-bit lanes on AVX-512BW.
    ///
    /// # Safety
    /// The CPU has AVX-512BW; see `Searcher::group`.
    #[target_feature(enable = "avx512bw,avx2")]
    pub(super) unsafe fn avx512_u8(
        job: &Job<'_>,
        tables: &[[u8; TABLE]],
        (open, ext, bias): (i32, i32, u8),
        best: &mut [i32],
    ) {
        // SAFETY: the caller's contract.
        unsafe {
            let b = Avx512U8::splat(bias);
            let add = |d, s| Avx512U8::subs(Avx512U8::adds(d, s), b);
            dispatch::<Avx512U8>(job, tables, open as u8, ext as u8, add, best)
        }
    }

    /// 16-bit lanes on AVX-512BW.
    ///
    /// # Safety
    /// As [`avx512_u8`].
    #[target_feature(enable = "avx512bw,avx2")]
    pub(super) unsafe fn avx512_i16(
        job: &Job<'_>,
        tables: &[[u8; TABLE]],
        (open, ext): (i32, i32),
        best: &mut [i32],
    ) {
        // SAFETY: the caller's contract.
        unsafe {
            let zero = Avx512I16::zero();
            let add = |d, s| Avx512I16::max(Avx512I16::adds(d, s), zero);
            dispatch::<Avx512I16>(job, tables, open as i16, ext as i16, add, best)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_sorts_by_length_pads_and_marks_mostly_padded_groups() {
        // 40 targets of 10 residues, one of 1000: four lanes a group.
        let mut targets = vec![vec![1u8; 10]; 40];
        targets[7] = vec![2u8; 1000];
        targets[3] = vec![3u8; 9];
        let packed = Packed::new(&targets, (0..targets.len()).collect(), 4, 99);
        assert_eq!(packed.groups.len(), 10);
        // The shortest first, ties by index; the long one last, with the
        // three next longest: 1030 residues in 4000 cells.
        assert_eq!(packed.groups[0].ids, [3, 0, 1, 2]);
        assert_eq!(packed.groups[9].ids, [37, 38, 39, 7]);
        assert!(
            packed.groups[..9]
                .iter()
                .all(|g| g.dense && g.columns == 10)
        );
        assert!(!packed.groups[9].dense);
        // Column-major, the pad past a target's end.
        let g = &packed.groups[0];
        assert_eq!(&g.residues[..4], &[3, 1, 1, 1]);
        assert_eq!(&g.residues[9 * 4..], &[99, 1, 1, 1]);
    }

    #[test]
    fn mostly_padded_groups_score_the_same_one_pair_at_a_time() {
        let matrix = Matrix::blosum62();
        let gaps = Gaps {
            open: 10,
            extend: 1,
        };
        let query: Vec<u8> = (0..60).map(|i| (i * 7 % 20) as u8).collect();
        let mut targets: Vec<Vec<u8>> = (0..35)
            .map(|k| (0..30).map(|i| ((i * 3 + k) % 20) as u8).collect())
            .collect();
        targets.push(query.repeat(20));
        let searcher = Searcher::new(Isa::detect(), &matrix, gaps);
        let packed = searcher.pack(&targets);
        if searcher.isa() != Isa::Scalar {
            assert!(packed.groups.iter().any(|g| !g.dense));
        }
        let got = searcher.search(&query, &targets, &packed);
        for (t, &(s, _)) in targets.iter().zip(&got) {
            assert_eq!(s, sw_scalar::score(&query, t, &matrix, gaps));
        }
    }
}
