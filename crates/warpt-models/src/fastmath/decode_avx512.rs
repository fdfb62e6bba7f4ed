//! A decode step's attention ([`super::attend_one`]) written for AVX-512
//! with heads of 16 to 128 values: the generic body, compiled for
//! AVX-512, vectorized each query-key dot product two lanes wide and
//! summed its lanes one by one, about 180 cycles a key for a group of
//! three queries (5.1 ms a token on one core for the 48 key-value heads
//! of a 12-layer model at 2,048 keys, 10 GB/s of cache read on Zen 4).
//!
//! Here keys and values go in blocks of 16 rows, each block read from
//! memory once and then from L1 for every query of the group: a query's
//! 16 dot products are 16 registers of partial sums, added across lanes
//! as a tree of shuffles into one register of 16 scores (15 additions for
//! the block, not 15 per key); the values are added into the outputs, a
//! register per 16 values, a block at a time. The same 48 heads on the
//! same core: 2.6–3.0 ms at 2,048 keys (17–19 GB/s: one core's share of
//! the memory bus), 0.34 → 0.11 ms at 128 keys (the cache in L2).
//! The cache is read in f32 or, for [`super::attend_one_f16`], in f16
//! widened as it is loaded ([`Cached`]): the same arithmetic on half the
//! bytes.

use std::arch::x86_64::*;

use half::f16;

/// A cached key or value element the blocks read: f32, or f16 widened
/// exactly as it is loaded (half the bytes of a step's read).
pub(super) trait Cached: Copy {
    /// The 16 values at `p`, in f32.
    ///
    /// # Safety
    /// The CPU has AVX-512F; 16 values are readable at `p`.
    unsafe fn load16(p: *const Self) -> __m512;
}

impl Cached for f32 {
    #[inline(always)]
    unsafe fn load16(p: *const f32) -> __m512 {
        // SAFETY: the caller's.
        unsafe { _mm512_loadu_ps(p) }
    }
}

impl Cached for f16 {
    #[inline(always)]
    unsafe fn load16(p: *const f16) -> __m512 {
        // SAFETY: the caller's (AVX-512F has the 16-lane conversion).
        unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(p.cast())) }
    }
}

/// Whether [`attend`] takes heads of `hd` values.
pub(super) fn takes(hd: usize) -> bool {
    hd.is_multiple_of(16) && (16..=128).contains(&hd)
}

/// [`super::attend_one`] for heads of `hd` values ([`takes`]).
///
/// # Safety
/// The CPU has AVX-512F, and the slices are as `attend_one` checked:
/// `q` and `out` `g` rows of `hd`, `k` and `v` the same number (at least
/// one) of rows of `hd`, `scores` `g` rows of one per key.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn attend<E: Cached>(
    q: &[f32],
    k: &[E],
    v: &[E],
    hd: usize,
    scale: f32,
    scores: &mut [f32],
    out: &mut [f32],
) {
    // SAFETY (all arms): the caller's contract, and hd = 16·C.
    unsafe {
        match hd / 16 {
            1 => attend_c::<E, 1>(q, k, v, scale, scores, out),
            2 => attend_c::<E, 2>(q, k, v, scale, scores, out),
            3 => attend_c::<E, 3>(q, k, v, scale, scores, out),
            4 => attend_c::<E, 4>(q, k, v, scale, scores, out),
            5 => attend_c::<E, 5>(q, k, v, scale, scores, out),
            6 => attend_c::<E, 6>(q, k, v, scale, scores, out),
            7 => attend_c::<E, 7>(q, k, v, scale, scores, out),
            _ => attend_c::<E, 8>(q, k, v, scale, scores, out),
        }
    }
}

/// Keys and values a block.
const BLOCK: usize = 16;

/// [`attend`] for heads of `16·C` values.
#[target_feature(enable = "avx512f")]
unsafe fn attend_c<E: Cached, const C: usize>(
    q: &[f32],
    k: &[E],
    v: &[E],
    scale: f32,
    scores: &mut [f32],
    out: &mut [f32],
) {
    let hd = 16 * C;
    let (g, keys) = (q.len() / hd, k.len() / hd);
    let full = keys / BLOCK * BLOCK;
    let scale_v = _mm512_set1_ps(scale);
    // SAFETY: every pointer below stays within its slice: rows r < g of q,
    // scores and out; key and value rows j < keys; C registers a row.
    unsafe {
        let (qp, kp, sp) = (q.as_ptr(), k.as_ptr(), scores.as_mut_ptr());
        // The scores, a block of keys at a time, for every query.
        for j0 in (0..full).step_by(BLOCK) {
            for r in 0..g {
                let qr: [__m512; C] =
                    std::array::from_fn(|c| _mm512_loadu_ps(qp.add(r * hd + 16 * c)));
                let sums: [__m512; BLOCK] =
                    std::array::from_fn(|t| dot::<E, C>(&qr, kp.add((j0 + t) * hd)));
                let s = _mm512_mul_ps(across16(sums), scale_v);
                _mm512_storeu_ps(sp.add(r * keys + j0), s);
            }
        }
        for j in full..keys {
            for r in 0..g {
                let qr: [__m512; C] =
                    std::array::from_fn(|c| _mm512_loadu_ps(qp.add(r * hd + 16 * c)));
                *sp.add(r * keys + j) =
                    _mm512_reduce_add_ps(dot::<E, C>(&qr, kp.add(j * hd))) * scale;
            }
        }
        // Each row's softmax.
        super::attention::softmax_rows::<true>(scores, keys);
        // The weighted values, a block of them at a time into every
        // query's output, its C registers kept across the block.
        let (vp, op, sp) = (v.as_ptr(), out.as_mut_ptr(), scores.as_ptr());
        out.fill(0.0);
        let mut j0 = 0;
        while j0 < keys {
            let end = (j0 + BLOCK).min(keys);
            for r in 0..g {
                let o = op.add(r * hd);
                let mut acc: [__m512; C] = std::array::from_fn(|c| _mm512_loadu_ps(o.add(16 * c)));
                for j in j0..end {
                    let w = _mm512_set1_ps(*sp.add(r * keys + j));
                    let vj = vp.add(j * hd);
                    for (c, a) in acc.iter_mut().enumerate() {
                        *a = _mm512_fmadd_ps(w, E::load16(vj.add(16 * c)), *a);
                    }
                }
                for (c, a) in acc.iter().enumerate() {
                    _mm512_storeu_ps(o.add(16 * c), *a);
                }
            }
            j0 = end;
        }
    }
}

/// The 16 lanes of partial sums of `q` (C registers) times the key at
/// `kp` (`16·C` values).
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn dot<E: Cached, const C: usize>(q: &[__m512; C], kp: *const E) -> __m512 {
    // SAFETY: the caller's key row holds 16·C values.
    unsafe {
        let mut a = _mm512_mul_ps(q[0], E::load16(kp));
        for (c, qc) in q.iter().enumerate().skip(1) {
            a = _mm512_fmadd_ps(*qc, E::load16(kp.add(16 * c)), a);
        }
        a
    }
}

/// The sums of 16 registers' lanes: lane `t` of the result is the sum of
/// register `t`'s 16 lanes. Four rounds, each adding halves of pairs of
/// registers (128-bit quarters, then pairs of values, then values), leave
/// register `4e + l`'s sum in lane `4l + e`; a last permutation puts it in
/// lane `4e + l`.
#[target_feature(enable = "avx512f")]
#[inline]
fn across16(x: [__m512; 16]) -> __m512 {
    // Round 1: registers 2m, 2m+1 into one, quarters 0+2 and 1+3 of each:
    // quarters 0, 1 hold 2m's partial sums, 2, 3 those of 2m+1.
    let r1: [__m512; 8] = std::array::from_fn(|m| {
        let (a, b) = (x[2 * m], x[2 * m + 1]);
        _mm512_add_ps(
            _mm512_shuffle_f32x4::<0b01_00_01_00>(a, b),
            _mm512_shuffle_f32x4::<0b11_10_11_10>(a, b),
        )
    });
    // Round 2: quarter l of register n holds register 4n + l's four
    // partial sums.
    let r2: [__m512; 4] = std::array::from_fn(|n| {
        let (a, b) = (r1[2 * n], r1[2 * n + 1]);
        _mm512_add_ps(
            _mm512_shuffle_f32x4::<0b10_00_10_00>(a, b),
            _mm512_shuffle_f32x4::<0b11_01_11_01>(a, b),
        )
    });
    // Round 3: in quarter l of register p, values 0, 1 hold register
    // 8p + l's two partial sums, values 2, 3 those of 8p + 4 + l.
    let r3: [__m512; 2] = std::array::from_fn(|p| {
        let (a, b) = (r2[2 * p], r2[2 * p + 1]);
        _mm512_add_ps(
            _mm512_shuffle_ps::<0b01_00_01_00>(a, b),
            _mm512_shuffle_ps::<0b11_10_11_10>(a, b),
        )
    });
    // Round 4: value e of quarter l holds register 4e + l's sum.
    let s = _mm512_add_ps(
        _mm512_shuffle_ps::<0b10_00_10_00>(r3[0], r3[1]),
        _mm512_shuffle_ps::<0b11_01_11_01>(r3[0], r3[1]),
    );
    // Lane t = 4e + l takes lane 4l + e.
    let order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_permutexvar_ps(order, s)
}
