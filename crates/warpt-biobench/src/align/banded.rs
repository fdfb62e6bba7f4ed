//! The banded alignment of a read to a window of the reference, filled
//! by anti-diagonals in vector steps (AVX2 where the CPU has it).

use super::{
    AMBIGUOUS, Alignment, E_EXTENDS, F_EXTENDS, FROM_DIAG, FROM_E, FROM_F, GAP_EXTEND, GAP_OPEN,
    MATCH, MISMATCH, NEG, Op, pair_score,
};

/// The best end-to-end alignment of `read` to `reference` whose read
/// start lies within `band` of `diagonal` (the read's first base at
/// reference position `diagonal`), gaps kept within the band. `None` if
/// the band misses the reference.
///
/// Filled by anti-diagonals (ksw2's order): the cells of one, r = i + j,
/// depend only on the two before it, so a whole anti-diagonal is one
/// branch-free vector loop, where a row's cells wait on each other
/// through the gap in the read (and the matches and gaps steer branches
/// no predictor learns: the row-by-row loop took about 17 cycles a cell on
/// Zen 3, two thirds of `read_map`'s time).
pub fn banded(read: &[u8], reference: &[u8], diagonal: i64, band: usize) -> Option<Alignment> {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { banded_avx2(read, reference, diagonal, band) };
    }
    banded_in::<false>(read, reference, diagonal, band)
}

/// [`banded_in`] compiled for AVX2 (eight cells a vector).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn banded_avx2(read: &[u8], reference: &[u8], diagonal: i64, band: usize) -> Option<Alignment> {
    banded_in::<true>(read, reference, diagonal, band)
}

/// Cells of an anti-diagonal a vector step computes (AVX2's i32 lanes).
const LANES: usize = 8;

/// [`banded`], its anti-diagonals' vector steps in AVX2 intrinsics
/// (`AVX2`: instantiated only by [`banded_avx2`]) or in plain Rust.
#[inline(always)]
fn banded_in<const AVX2: bool>(
    read: &[u8],
    reference: &[u8],
    diagonal: i64,
    band: usize,
) -> Option<Alignment> {
    let m = read.len();
    let n = reference.len() as i64;
    let width = 2 * band as i64 + 1;
    // Cell (i, j) is read prefix i against reference prefix j; in the band
    // when lo <= j - i < lo + width, on anti-diagonal r = i + j.
    let lo = diagonal - band as i64;
    // Anti-diagonal r's cells: read prefixes first(r)..=last(r) (i >= 1:
    // row 0 is the free start; j = r - i in 0..=n; inside the band).
    // first(r) never falls and grows by at most one from r to r + 1.
    let first = |r: i64| 1.max(r - n).max((r - lo - width + 2).div_euclid(2)) as usize;
    let last = |r: i64| (m as i64).min(r).min((r - lo).div_euclid(2));
    // Row 0's cells: j in 0..=n inside the band (anti-diagonal r = j).
    let row0 = |r: i64| (0..=n).contains(&r) && (lo..lo + width).contains(&r);
    let r_first = 1 + (1 + lo).max(0);
    let r_last = m as i64 + n.min(m as i64 + lo + width - 1);
    if r_last < r_first {
        return None;
    }
    // Every anti-diagonal computes `span` cells from first(r), those past
    // last(r) forced to NEG: at least the most the band holds (band + 1),
    // whole vectors, no scalar remainder. So a buffer's cells from
    // first(r) + span up were never written (NEG), and one store at
    // first(r) - 1 hides what anti-diagonals before it left below:
    // every neighbour outside the band, the read or the reference reads
    // NEG, as in the full matrix with the band's outside forbidden.
    let span = (band + 1).div_ceil(LANES) * LANES;
    let len = m + span + 2;
    // The read and the reversed reference as i32 codes (upper-cased), so
    // an anti-diagonal reads both in step: reference base j - 1 = r - i - 1
    // is `rev[n - r + i]`. Past the ends (`rev[n]`, before the reference,
    // is only ever the diagonal of a cell at j = 0, whose H above-left is
    // NEG) zeros: no cell in the band reads them.
    let up = |b: &u8| i32::from(b.to_ascii_uppercase());
    let mut codes: Vec<i32> = read.iter().map(up).collect();
    codes.resize(m + span + 1, 0);
    let mut rev: Vec<i32> = reference.iter().rev().map(up).collect();
    rev.resize(n as usize + span + 2, 0);
    let waves = (r_last - r_first + 1) as usize;
    let mut trace = vec![0u8; waves * span];
    let mut starts = vec![0usize; waves];
    // H of the last three anti-diagonals, E and F of the last two.
    let mut h = [vec![NEG; len], vec![NEG; len], vec![NEG; len]];
    let mut e = [vec![NEG; len], vec![NEG; len]];
    let mut f = [vec![NEG; len], vec![NEG; len]];
    // Anti-diagonals r_first - 2 and r_first - 1 hold row 0's cells only
    // (above-left and above of the first cells).
    for r in [r_first - 2, r_first - 1] {
        if row0(r) {
            h[r.rem_euclid(3) as usize][0] = 0;
        }
    }
    let (mut best, mut best_j) = (NEG, -1i64);
    for r in r_first..=r_last {
        let (a, b) = (first(r), last(r));
        let k = (r - r_first) as usize;
        starts[k] = a;
        let [h0, h1, h2] = &mut h;
        let (h_new, h_prev, h_diag) = match r % 3 {
            0 => (h0, &*h2, &*h1),
            1 => (h1, &*h0, &*h2),
            _ => (h2, &*h1, &*h0),
        };
        let [e0, e1] = &mut e;
        let (e_new, e_prev) = if r % 2 == 0 { (e0, &*e1) } else { (e1, &*e0) };
        let [f0, f1] = &mut f;
        let (f_new, f_prev) = if r % 2 == 0 { (f0, &*f1) } else { (f1, &*f0) };
        h_new[a - 1] = NEG;
        e_new[a - 1] = NEG;
        f_new[a - 1] = NEG;
        if row0(r) {
            h_new[0] = 0; // free start in the reference
        }
        let ref_at = (n - r + a as i64) as usize;
        let prev = Prev {
            diag: &h_diag[a - 1..],
            h: &h_prev[a - 1..],
            e: &e_prev[a..],
            f: &f_prev[a - 1..],
        };
        let valid = (b + 1 - a as i64).max(0) as usize;
        let next = Next {
            h: &mut h_new[a..a + span],
            e: &mut e_new[a..a + span],
            f: &mut f_new[a..a + span],
            bits: &mut trace[k * span..(k + 1) * span],
        };
        let (read, reference) = (&codes[a - 1..], &rev[ref_at.min(rev.len())..]);
        if valid == 0 {
            // No cell (the band's corners past the read or the reference).
            next.h.fill(NEG);
            next.e.fill(NEG);
            next.f.fill(NEG);
        } else if cfg!(target_arch = "x86_64") && AVX2 {
            // SAFETY: AVX2 is true only in `banded_avx2`, called where the
            // CPU has AVX2.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                x86::cells(prev, read, reference, valid, next)
            };
        } else {
            cells(prev, read, reference, valid, next);
        }
        // Free end in the reference: the best cell of the last row
        // (j >= 1; the leftmost of equals).
        if b == m as i64 && r - b >= 1 && h_new[m] > best {
            (best, best_j) = (h_new[m], r - b);
        }
    }
    if best <= NEG / 2 {
        return None;
    }
    // Trace back.
    let bits_at = |i: usize, j: usize| {
        let k = (i as i64 + j as i64 - r_first) as usize;
        trace[k * span + i - starts[k]]
    };
    let mut ops: Vec<Op> = Vec::with_capacity(m + 8);
    let (mut i, mut j) = (m, best_j as usize);
    let mut state = 0u8; // 0 = H, 1 = E, 2 = F
    let mut mismatches = 0;
    while i > 0 {
        let bits = bits_at(i, j);
        match state {
            0 => match bits & 3 {
                FROM_DIAG => {
                    mismatches += u32::from(pair_score(read[i - 1], reference[j - 1]) != MATCH);
                    ops.push(Op::Match);
                    i -= 1;
                    j -= 1;
                }
                FROM_E => state = 1,
                _ => state = 2,
            },
            1 => {
                ops.push(Op::Deletion);
                mismatches += 1;
                state = if bits & E_EXTENDS != 0 { 1 } else { 0 };
                j -= 1;
            }
            _ => {
                ops.push(Op::Insertion);
                mismatches += 1;
                state = if bits & F_EXTENDS != 0 { 2 } else { 0 };
                i -= 1;
            }
        }
    }
    ops.reverse();
    // A leading deletion is never optimal (the start is free), so the
    // read starts where the first operation consumes the reference.
    let mut cigar: Vec<(u32, Op)> = Vec::new();
    for op in ops {
        match cigar.last_mut() {
            Some((n, last)) if *last == op => *n += 1,
            _ => cigar.push((1, op)),
        }
    }
    Some(Alignment {
        start: j,
        cigar,
        score: best,
        mismatches,
    })
}

/// What an anti-diagonal's cells read of the two before it, from its
/// first cell's neighbours on: H above-left (`diag[c]`), H and F above
/// (`h[c]`, `f[c]`), H and E to the left (`h[c + 1]`, `e[c]`).
struct Prev<'a> {
    diag: &'a [i32],
    h: &'a [i32],
    e: &'a [i32],
    f: &'a [i32],
}

/// An anti-diagonal's H, E, F and traceback bits, `span` (a multiple of
/// [`LANES`]) cells from its first.
struct Next<'a> {
    h: &'a mut [i32],
    e: &'a mut [i32],
    f: &'a mut [i32],
    bits: &'a mut [u8],
}

/// One anti-diagonal: `valid` cells, the rest of `out`'s span NEG. Whole
/// vectors of [`LANES`] cells without a branch, so the compiler turns each
/// step into a few vector instructions.
#[inline(always)]
fn cells(prev: Prev<'_>, read: &[i32], reference: &[i32], valid: usize, out: Next<'_>) {
    let n = i32::from(b'N');
    for step in 0..out.h.len() / LANES {
        let at = step * LANES;
        let (diag, above, left) = (
            lanes(prev.diag, at),
            lanes(prev.h, at),
            lanes(prev.h, at + 1),
        );
        let (e_left, f_above) = (lanes(prev.e, at), lanes(prev.f, at));
        let (read, reference) = (lanes(read, at), lanes(reference, at));
        let (mut h, mut e, mut f, mut bits) = ([0; LANES], [0; LANES], [0; LANES], [0i32; LANES]);
        for c in 0..LANES {
            let (a, b) = (read[c], reference[c]);
            let s = if a == b { MATCH } else { -MISMATCH };
            let s = if (a == n) | (b == n) { -AMBIGUOUS } else { s };
            let diag = diag[c] + s;
            // F: a gap in the reference (insertion), from above;
            // E: a gap in the read (deletion), from the left.
            let (f_open, f_ext) = (above[c] - GAP_OPEN - GAP_EXTEND, f_above[c] - GAP_EXTEND);
            let (e_open, e_ext) = (left[c] - GAP_OPEN - GAP_EXTEND, e_left[c] - GAP_EXTEND);
            let fv = f_open.max(f_ext);
            let ev = e_open.max(e_ext);
            let e_wins = ev > diag;
            let hv = diag.max(ev);
            let f_wins = fv > hv;
            let hv = hv.max(fv);
            // Past the anti-diagonal's last cell: outside the band.
            let inside = at + c < valid;
            h[c] = if inside { hv } else { NEG };
            e[c] = if inside { ev } else { NEG };
            f[c] = if inside { fv } else { NEG };
            // The way in and whether each gap extends, as 0/1 sums (no
            // control flow for the vectoriser to give up on).
            let from = i32::from(f_wins) * i32::from(FROM_F)
                + i32::from(!f_wins & e_wins) * i32::from(FROM_E);
            bits[c] = from
                + i32::from(f_ext > f_open) * i32::from(F_EXTENDS)
                + i32::from(e_ext > e_open) * i32::from(E_EXTENDS);
        }
        out.h[at..at + LANES].copy_from_slice(&h);
        out.e[at..at + LANES].copy_from_slice(&e);
        out.f[at..at + LANES].copy_from_slice(&f);
        for (out, bits) in out.bits[at..at + LANES].iter_mut().zip(bits) {
            *out = bits as u8;
        }
    }
}

/// The [`LANES`] values of `values` from `at`: a fixed-size array, so the
/// step's loop has no bounds to check (every slice [`cells`] is given
/// reaches a span past its anti-diagonal's first cell).
#[inline(always)]
fn lanes(values: &[i32], at: usize) -> &[i32; LANES] {
    values[at..at + LANES]
        .try_into()
        .expect("a slice of LANES values is an array of LANES")
}

/// [`cells`] in AVX2 intrinsics: the compiler leaves the plain loop
/// scalar.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{
        AMBIGUOUS, E_EXTENDS, F_EXTENDS, FROM_E, FROM_F, GAP_EXTEND, GAP_OPEN, LANES, MATCH,
        MISMATCH, NEG, Next, Prev,
    };

    /// [`super::cells`], eight cells a step, the same values and bits.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[inline(always)]
    pub(super) unsafe fn cells(
        prev: Prev<'_>,
        read: &[i32],
        reference: &[i32],
        valid: usize,
        out: Next<'_>,
    ) {
        let span = out.h.len();
        // Every load reads LANES values from at most `span - LANES` (one
        // more for `prev.h`), every store writes there: inside these.
        assert!(
            prev.diag.len() >= span
                && prev.h.len() > span
                && prev.e.len() >= span
                && prev.f.len() >= span
                && read.len() >= span
                && reference.len() >= span
                && out.bits.len() >= span
                && out.e.len() >= span
                && out.f.len() >= span
                && span.is_multiple_of(LANES)
        );
        // SAFETY: AVX2 is the caller's promise; every load and store is
        // inside its slice (asserted above).
        unsafe {
            let splat = _mm256_set1_epi32;
            let (matched, mismatched, ambiguous) =
                (splat(MATCH), splat(-MISMATCH), splat(-AMBIGUOUS));
            let (open, extend, neg, n) = (
                splat(GAP_OPEN + GAP_EXTEND),
                splat(GAP_EXTEND),
                splat(NEG),
                splat(i32::from(b'N')),
            );
            let (from_f, from_e) = (splat(i32::from(FROM_F)), splat(i32::from(FROM_E)));
            let (f_extends, e_extends) = (splat(i32::from(F_EXTENDS)), splat(i32::from(E_EXTENDS)));
            let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            let load = |s: &[i32], at: usize| _mm256_loadu_si256(s.as_ptr().add(at).cast());
            for at in (0..span).step_by(LANES) {
                let (a, b) = (load(read, at), load(reference, at));
                let s = _mm256_blendv_epi8(mismatched, matched, _mm256_cmpeq_epi32(a, b));
                let either_n = _mm256_or_si256(_mm256_cmpeq_epi32(a, n), _mm256_cmpeq_epi32(b, n));
                let s = _mm256_blendv_epi8(s, ambiguous, either_n);
                let diag = _mm256_add_epi32(load(prev.diag, at), s);
                let f_open = _mm256_sub_epi32(load(prev.h, at), open);
                let f_ext = _mm256_sub_epi32(load(prev.f, at), extend);
                let e_open = _mm256_sub_epi32(load(prev.h, at + 1), open);
                let e_ext = _mm256_sub_epi32(load(prev.e, at), extend);
                let fv = _mm256_max_epi32(f_open, f_ext);
                let ev = _mm256_max_epi32(e_open, e_ext);
                let e_wins = _mm256_cmpgt_epi32(ev, diag);
                let hv = _mm256_max_epi32(diag, ev);
                let f_wins = _mm256_cmpgt_epi32(fv, hv);
                let hv = _mm256_max_epi32(hv, fv);
                // Lanes past the anti-diagonal's last cell: outside the band.
                let left = splat(valid as i32 - at as i32);
                let inside = _mm256_cmpgt_epi32(left, lane);
                let store = |s: &mut [i32], v| {
                    _mm256_storeu_si256(
                        s.as_mut_ptr().add(at).cast(),
                        _mm256_blendv_epi8(neg, v, inside),
                    )
                };
                store(out.h, hv);
                store(out.e, ev);
                store(out.f, fv);
                let bits = _mm256_or_si256(
                    _mm256_or_si256(
                        _mm256_and_si256(f_wins, from_f),
                        _mm256_andnot_si256(f_wins, _mm256_and_si256(e_wins, from_e)),
                    ),
                    _mm256_or_si256(
                        _mm256_and_si256(_mm256_cmpgt_epi32(f_ext, f_open), f_extends),
                        _mm256_and_si256(_mm256_cmpgt_epi32(e_ext, e_open), e_extends),
                    ),
                );
                // Eight i32 lanes of 0..=15 to eight bytes: each 128-bit
                // half's four land in its first four bytes.
                let words = _mm256_packs_epi32(bits, bits);
                let bytes = _mm256_packus_epi16(words, words);
                let low = _mm_cvtsi128_si32(_mm256_castsi256_si128(bytes)) as u32;
                let high = _mm_cvtsi128_si32(_mm256_extracti128_si256::<1>(bytes)) as u32;
                let eight = (u64::from(high) << 32 | u64::from(low)).to_le_bytes();
                out.bits[at..at + LANES].copy_from_slice(&eight);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::align::rescore;
    use crate::align::tests::matrix;

    #[test]
    fn every_band_width_and_place_equals_the_full_matrix_in_both_kernels() {
        let reference = crate::genome::reference(13, 900);
        let mut state = 11u64;
        let mut next = |below: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize % below
        };
        let mut aligned = 0;
        // Bands from none to a mate rescue's, the diagonal off by up to the
        // band, and bands hanging over either end of the reference.
        for (case, band) in [0usize, 1, 3, 7, 8, 15, 16, 17, 40, 300]
            .iter()
            .cycle()
            .take(80)
            .enumerate()
        {
            let len = 30 + next(120);
            let start = next(reference.len() - len);
            let mut read = reference[start..start + len].to_vec();
            for _ in 0..next(5) {
                let at = next(read.len());
                match next(3) {
                    0 => read[at] = b"ACGTN"[next(5)],
                    1 => {
                        read.remove(at);
                    }
                    _ => read.insert(at, b"ACGT"[next(4)]),
                }
            }
            let off = next(2 * band + 1) as i64 - *band as i64;
            let diagonal = match case % 4 {
                0 => -(next(band + 3) as i64),
                1 => (reference.len() - next(len)) as i64,
                _ => start as i64 + off,
            };
            let got = banded(&read, &reference, diagonal, *band);
            assert_eq!(
                banded_in::<false>(&read, &reference, diagonal, *band),
                got,
                "case {case}: band {band}, diagonal {diagonal}"
            );
            let Some(got) = got else { continue };
            aligned += 1;
            let (score, edits) = rescore(&read, &reference, &got).unwrap();
            assert_eq!((score, edits), (got.score, got.mismatches), "case {case}");
            // The full matrix restricted to the band: the same score.
            let inside =
                |i: usize, j: usize| (j as i64 - i as i64 - diagonal).abs() <= *band as i64;
            assert_eq!(got.score, matrix(&read, &reference, inside), "case {case}");
        }
        assert!(aligned >= 60, "{aligned} of 80 aligned");
    }
}
