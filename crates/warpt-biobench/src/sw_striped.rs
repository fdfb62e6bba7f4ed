//! Smith-Waterman with affine gaps on striped query profiles (Farrar,
//! 2007), many query positions per SIMD instruction.
//!
//! The query of length `m` is cut into `LANES` segments of `seg =
//! ceil(m / LANES)` positions; vector `i` of a column holds positions `i,
//! i + seg, i + 2·seg, …`, one per lane. A target residue's column is one
//! pass over the `seg` vectors, with the vertical gap (F) carried only
//! within segments, then a "lazy F" pass that carries it across segment
//! boundaries until it can no longer raise any score. For nucleotides the
//! horizontal gap (E) of a column is derived at the start of the next
//! column from the final scores, so the lazy-F pass (on DNA more
//! iterations than the main pass has vectors) only raises scores.
//!
//! Scores start in saturating unsigned 8-bit lanes (a bias keeps the
//! substitution scores non-negative) and, when a score reaches the top of
//! that range, the pair is aligned again in signed 16-bit lanes; a 16-bit
//! overflow falls back to the `i32` scalar reference. The widest
//! instruction set the CPU has is chosen at run time: AVX-512BW (64 × 8-bit
//! lanes), AVX2 (32), otherwise the scalar code.

use crate::scoring::{Gaps, Matrix};
use crate::sw_scalar;

/// The instruction sets the aligner is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// AVX-512BW: 64 lanes of 8 bits, 32 of 16.
    Avx512Bw,
    /// AVX2: 32 lanes of 8 bits, 16 of 16.
    Avx2,
    /// One cell at a time (CPUs without either).
    Scalar,
}

impl Isa {
    /// The widest this CPU runs.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512bw") {
                return Isa::Avx512Bw;
            }
            if std::is_x86_feature_detected!("avx2") {
                return Isa::Avx2;
            }
        }
        Isa::Scalar
    }

    /// Whether this CPU runs it.
    pub fn available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Bw => std::is_x86_feature_detected!("avx512bw"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => std::is_x86_feature_detected!("avx2"),
            #[cfg(not(target_arch = "x86_64"))]
            Isa::Avx512Bw | Isa::Avx2 => false,
            Isa::Scalar => true,
        }
    }

    /// Its name, as results report it.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512Bw => "avx512bw",
            Isa::Avx2 => "avx2",
            Isa::Scalar => "scalar",
        }
    }

    /// 8-bit lanes per vector.
    pub(crate) fn lanes8(self) -> usize {
        match self {
            Isa::Avx512Bw => 64,
            Isa::Avx2 => 32,
            Isa::Scalar => 1,
        }
    }
}

/// The precision a score was finally computed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// Saturating unsigned 8-bit lanes.
    U8,
    /// Saturating signed 16-bit lanes, after the 8-bit pass saturated.
    I16,
    /// The scalar `i32` reference, after 16 bits saturated too (or on a
    /// CPU without SIMD).
    I32,
}

/// A query prepared for many targets: its striped profiles for both widths.
pub struct Aligner<'m> {
    isa: Isa,
    matrix: &'m Matrix,
    gaps: Gaps,
    query: Vec<u8>,
    /// `-min score`: added to every 8-bit profile entry.
    bias: u8,
    /// The highest score a cell can add (for the 16-bit overflow margin).
    max_score: i32,
    seg8: usize,
    seg16: usize,
    /// `[residue][seg8][lanes8]`, score + bias.
    profile8: Vec<u8>,
    /// `[residue][seg16][lanes8 / 2]`.
    profile16: Vec<i16>,
    /// Where E comes from: derived at each column's start from the previous
    /// column's final scores (true), or kept up to date by the lazy-F pass
    /// (false). Nucleotide alphabets spend more iterations in lazy F than
    /// in the main pass (1.8 per main vector on random DNA with dnafull
    /// and gaps 10/1, against 0.8 for BLOSUM62 on protein), so they
    /// gain from a lighter lazy-F pass more than the extra main-pass
    /// step costs; protein loses (measured: 7% faster DNA, 7% slower
    /// protein on AVX2). Both are exact.
    e_after: bool,
}

impl<'m> Aligner<'m> {
    /// `query` (encoded by `matrix`) ready to align on `isa`.
    ///
    /// # Panics
    /// If this CPU does not run `isa`, or the gap penalties are not
    /// between 0 and 127.
    pub fn new(isa: Isa, query: &[u8], matrix: &'m Matrix, gaps: Gaps) -> Self {
        assert!(
            isa.available(),
            "{} is not available on this CPU",
            isa.name()
        );
        assert!(
            (0..128).contains(&gaps.open) && (0..128).contains(&gaps.extend),
            "gap penalties 0..=127"
        );
        // The lazy-F pass carries a gap by extension only, which is exact
        // when opening costs at least as much as extending; otherwise
        // (an unusual scoring) the scalar reference aligns.
        let isa = if gaps.open < gaps.extend {
            Isa::Scalar
        } else {
            isa
        };
        let (min, max) = matrix.range();
        let bias = (-min).clamp(0, 127) as u8;
        let lanes8 = isa.lanes8();
        let lanes16 = (lanes8 / 2).max(1);
        let seg8 = query.len().div_ceil(lanes8).max(1);
        let seg16 = query.len().div_ceil(lanes16).max(1);
        let size = matrix.size();
        let mut profile8 = vec![0u8; size * seg8 * lanes8];
        let mut profile16 = vec![0i16; size * seg16 * lanes16];
        for a in 0..size as u8 {
            for i in 0..seg8 {
                for j in 0..lanes8 {
                    // Past the query's end: the lowest score (0 after the bias).
                    let v = query
                        .get(j * seg8 + i)
                        .map_or(0, |&q| (matrix.score(a, q) + bias as i32) as u8);
                    profile8[(a as usize * seg8 + i) * lanes8 + j] = v;
                }
            }
            for i in 0..seg16 {
                for j in 0..lanes16 {
                    let v = query
                        .get(j * seg16 + i)
                        .map_or(min, |&q| matrix.score(a, q));
                    profile16[(a as usize * seg16 + i) * lanes16 + j] = v as i16;
                }
            }
        }
        Aligner {
            isa,
            matrix,
            gaps,
            query: query.to_vec(),
            bias,
            max_score: max,
            seg8,
            seg16,
            profile8,
            profile16,
            e_after: size <= 5,
        }
    }

    /// The best local alignment score against `target` (encoded), and the
    /// width that computed it.
    pub fn score(&self, target: &[u8]) -> (i32, Width) {
        if self.query.is_empty() || target.is_empty() {
            return (0, Width::U8);
        }
        if let Some(s) = self.score8(target) {
            return (s, Width::U8);
        }
        if let Some(s) = self.score16(target) {
            return (s, Width::I16);
        }
        (
            sw_scalar::score(&self.query, target, self.matrix, self.gaps),
            Width::I32,
        )
    }

    /// The score in 8-bit lanes, or `None` if it may have saturated.
    pub fn score8(&self, target: &[u8]) -> Option<i32> {
        #[cfg(target_arch = "x86_64")]
        {
            let (open, ext, bias) = (self.gaps.open as u8, self.gaps.extend as u8, self.bias);
            let (p, seg) = (&self.profile8, self.seg8);
            // SAFETY: `new` checked that this CPU runs the ISA; the profile
            // holds `size × seg × lanes` entries and every target residue
            // is an index below `size`, as the matrix encodes.
            let best = unsafe {
                let args = (open, ext, bias);
                match (self.isa, self.e_after) {
                    (Isa::Avx512Bw, true) => x86::avx512_u8::<true>(p, seg, target, args),
                    (Isa::Avx512Bw, false) => x86::avx512_u8::<false>(p, seg, target, args),
                    (Isa::Avx2, true) => x86::avx2_u8::<true>(p, seg, target, args),
                    (Isa::Avx2, false) => x86::avx2_u8::<false>(p, seg, target, args),
                    (Isa::Scalar, _) => return None,
                }
            } as i32;
            // A cell at the top may have been cut off there.
            (best < 255 - bias as i32).then_some(best)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = target;
            None
        }
    }

    /// The score in 16-bit lanes, or `None` if it may have saturated.
    pub fn score16(&self, target: &[u8]) -> Option<i32> {
        #[cfg(target_arch = "x86_64")]
        {
            let (open, ext) = (self.gaps.open as i16, self.gaps.extend as i16);
            // One below the first score that may have been cut off.
            let stop = (i16::MAX as i32 - self.max_score - 1) as i16;
            let (p, seg) = (&self.profile16, self.seg16);
            // SAFETY: as in `score8`.
            let best = unsafe {
                let args = (open, ext, stop);
                match (self.isa, self.e_after) {
                    (Isa::Avx512Bw, true) => x86::avx512_i16::<true>(p, seg, target, args),
                    (Isa::Avx512Bw, false) => x86::avx512_i16::<false>(p, seg, target, args),
                    (Isa::Avx2, true) => x86::avx2_i16::<true>(p, seg, target, args),
                    (Isa::Avx2, false) => x86::avx2_i16::<false>(p, seg, target, args),
                    (Isa::Scalar, _) => return None,
                }
            } as i32;
            (best < i16::MAX as i32 - self.max_score).then_some(best)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = target;
            None
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The column loop, written once over a small vector trait and
    //! instantiated for each ISA and width inside a `target_feature`
    //! function, so every operation inlines to one instruction.

    use crate::sw_lanes::{Avx2I16, Avx2U8, Avx512I16, Avx512U8, Lanes};

    /// The striped column loop: the best cell of `target` against the
    /// profiled query, or, as soon as a cell exceeds `stop`, a value above
    /// `stop`. `add(h, p)` adds a profile vector to scores (for
    /// 8 bits, with the bias taken off again); scores are floored at zero.
    #[inline(always)]
    unsafe fn striped<V: Lanes, const E_AFTER: bool>(
        profile: &[V::Elem],
        seg: usize,
        target: &[u8],
        open: V::Elem,
        ext: V::Elem,
        stop: V::Elem,
        add: impl Fn(V, V) -> V,
    ) -> i32 {
        // SAFETY: the caller's contract (see `Aligner::score8`): every
        // residue's profile holds `seg` vectors, and the three columns
        // below hold `seg` each.
        unsafe {
            let (v_open, v_ext, zero) = (V::splat(open), V::splat(ext), V::zero());
            let v_stop = V::splat(stop);
            let open_beats_extend = open.into() > ext.into();
            let mut h_store = vec![zero; seg];
            let mut h_load = vec![zero; seg];
            let mut e = vec![zero; seg];
            let mut best = zero;
            for &t in target {
                let p = profile.as_ptr().add(t as usize * seg * V::N);
                let mut f = zero;
                let mut h = V::shift_in_zero(h_store[seg - 1]);
                std::mem::swap(&mut h_store, &mut h_load);
                for i in 0..seg {
                    let left = h_load[i];
                    let ei = if E_AFTER {
                        // E of this column from the previous column's
                        // final H (after its lazy-F pass).
                        let ei = V::max(V::subs(e[i], v_ext), V::subs(left, v_open));
                        e[i] = ei;
                        ei
                    } else {
                        e[i]
                    };
                    h = add(h, V::load(p.add(i * V::N)));
                    h = V::max(V::max(V::max(h, ei), f), zero);
                    best = V::max(best, h);
                    h_store[i] = h;
                    let h_open = V::subs(h, v_open);
                    if !E_AFTER {
                        // E of the next column, raised again by lazy F.
                        e[i] = V::max(V::subs(ei, v_ext), h_open);
                    }
                    f = V::max(V::subs(f, v_ext), h_open);
                    h = left;
                }
                // Lazy F: carry the vertical gap into the next segment,
                // lane by lane, while it can still raise a score.
                f = V::shift_in_zero(f);
                let mut i = 0;
                if open_beats_extend {
                    // Parasail's exit: after raising a cell, go on only while
                    // the extended gap beats both zero (scores' floor) and
                    // the gap the cell itself opens; below that, the first
                    // pass's values dominate. (A raised cell always goes on:
                    // f − extend > f − open.)
                    loop {
                        let h = V::max(h_store[i], f);
                        h_store[i] = h;
                        best = V::max(best, h);
                        let h_open = V::subs(h, v_open);
                        if !E_AFTER {
                            e[i] = V::max(e[i], h_open);
                        }
                        f = V::subs(f, v_ext);
                        if !V::any_gt(f, V::max(h_open, zero)) {
                            break;
                        }
                        i += 1;
                        if i == seg {
                            i = 0;
                            f = V::shift_in_zero(f);
                        }
                    }
                } else {
                    // Opening no dearer than extending: check before each
                    // cell whether the gap still beats what the first pass
                    // derived there.
                    while V::any_gt(f, V::max(V::subs(h_store[i], v_open), zero)) {
                        let h = V::max(h_store[i], f);
                        h_store[i] = h;
                        best = V::max(best, h);
                        if !E_AFTER {
                            e[i] = V::max(e[i], V::subs(h, v_open));
                        }
                        f = V::subs(f, v_ext);
                        i += 1;
                        if i == seg {
                            i = 0;
                            f = V::shift_in_zero(f);
                        }
                    }
                }
                // Past `stop` the width can no longer be trusted: the
                // caller re-aligns wider, so the rest would be wasted.
                if V::any_gt(best, v_stop) {
                    break;
                }
            }
            V::hmax(best)
        }
    }

    /// 8-bit lanes on AVX2.
    ///
    /// # Safety
    /// The CPU has AVX2; `profile` holds `seg × 32` entries per residue of
    /// `target`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2_u8<const E_AFTER: bool>(
        profile: &[u8],
        seg: usize,
        target: &[u8],
        (open, ext, bias): (u8, u8, u8),
    ) -> u8 {
        // SAFETY: the caller's contract.
        unsafe {
            let b = Avx2U8::splat(bias);
            striped::<Avx2U8, E_AFTER>(profile, seg, target, open, ext, 254 - bias, |h, p| {
                Avx2U8::subs(Avx2U8::adds(h, p), b)
            }) as u8
        }
    }

    /// 16-bit lanes on AVX2.
    ///
    /// # Safety
    /// As [`avx2_u8`], `seg × 16` entries.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2_i16<const E_AFTER: bool>(
        profile: &[i16],
        seg: usize,
        target: &[u8],
        (open, ext, stop): (i16, i16, i16),
    ) -> i16 {
        // SAFETY: the caller's contract.
        unsafe {
            striped::<Avx2I16, E_AFTER>(profile, seg, target, open, ext, stop, |h, p| {
                Avx2I16::adds(h, p)
            }) as i16
        }
    }

    /// 8-bit lanes on AVX-512BW.
    ///
    /// # Safety
    /// The CPU has AVX-512BW; `seg × 64` entries per residue.
    #[target_feature(enable = "avx512bw")]
    pub(super) unsafe fn avx512_u8<const E_AFTER: bool>(
        profile: &[u8],
        seg: usize,
        target: &[u8],
        (open, ext, bias): (u8, u8, u8),
    ) -> u8 {
        // SAFETY: the caller's contract.
        unsafe {
            let b = Avx512U8::splat(bias);
            striped::<Avx512U8, E_AFTER>(profile, seg, target, open, ext, 254 - bias, |h, p| {
                Avx512U8::subs(Avx512U8::adds(h, p), b)
            }) as u8
        }
    }

    /// 16-bit lanes on AVX-512BW.
    ///
    /// # Safety
    /// As [`avx512_u8`], `seg × 32` entries.
    #[target_feature(enable = "avx512bw")]
    pub(super) unsafe fn avx512_i16<const E_AFTER: bool>(
        profile: &[i16],
        seg: usize,
        target: &[u8],
        (open, ext, stop): (i16, i16, i16),
    ) -> i16 {
        // SAFETY: the caller's contract.
        unsafe {
            striped::<Avx512I16, E_AFTER>(profile, seg, target, open, ext, stop, |h, p| {
                Avx512I16::adds(h, p)
            }) as i16
        }
    }
}
