//! [`super::decode_avx512`]'s blocks for CPUs with AVX2 and FMA but not
//! AVX-512 (Zen 3 and older Intel cores): keys and values in blocks of 8
//! rows, a query's 8 dot products 8 registers of partial sums added
//! across lanes as one tree (`vhaddps` twice, then the halves), heads of
//! 8 to 128 values. A group of three queries over 2,048 keys of 64
//! values in L2, on a Zen 4 core forced onto these paths: 35–37 µs
//! against the generic body's 89–91 µs for AVX2 (the AVX-512 blocks:
//! 31 µs); over 128 keys 1.8 against 5.5 µs.

use std::arch::x86_64::*;

/// Whether [`attend`] takes heads of `hd` values.
pub(super) fn takes(hd: usize) -> bool {
    hd.is_multiple_of(8) && (8..=128).contains(&hd)
}

/// Keys and values a block.
const BLOCK: usize = 8;

/// Output registers held at once while adding the weighted values: a
/// head wider than this goes over each block of values in parts.
const PART: usize = 8;

/// [`super::attend_one`] for heads of `hd` values ([`takes`]).
///
/// # Safety
/// The CPU has AVX2 and FMA, and the slices are as `attend_one` checked:
/// `q` and `out` `g` rows of `hd`, `k` and `v` the same number (at least
/// one) of rows of `hd`, `scores` `g` rows of one per key.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn attend(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    hd: usize,
    scale: f32,
    scores: &mut [f32],
    out: &mut [f32],
) {
    // SAFETY (all arms): the caller's contract, and hd = 8·C.
    unsafe {
        match hd / 8 {
            1 => attend_c::<1>(q, k, v, scale, scores, out),
            2 => attend_c::<2>(q, k, v, scale, scores, out),
            3 => attend_c::<3>(q, k, v, scale, scores, out),
            4 => attend_c::<4>(q, k, v, scale, scores, out),
            5 => attend_c::<5>(q, k, v, scale, scores, out),
            6 => attend_c::<6>(q, k, v, scale, scores, out),
            7 => attend_c::<7>(q, k, v, scale, scores, out),
            8 => attend_c::<8>(q, k, v, scale, scores, out),
            9 => attend_c::<9>(q, k, v, scale, scores, out),
            10 => attend_c::<10>(q, k, v, scale, scores, out),
            11 => attend_c::<11>(q, k, v, scale, scores, out),
            12 => attend_c::<12>(q, k, v, scale, scores, out),
            13 => attend_c::<13>(q, k, v, scale, scores, out),
            14 => attend_c::<14>(q, k, v, scale, scores, out),
            15 => attend_c::<15>(q, k, v, scale, scores, out),
            _ => attend_c::<16>(q, k, v, scale, scores, out),
        }
    }
}

/// [`attend`] for heads of `8·C` values.
#[target_feature(enable = "avx2,fma")]
unsafe fn attend_c<const C: usize>(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    scale: f32,
    scores: &mut [f32],
    out: &mut [f32],
) {
    let hd = 8 * C;
    let (g, keys) = (q.len() / hd, k.len() / hd);
    let full = keys / BLOCK * BLOCK;
    let scale_v = _mm256_set1_ps(scale);
    // SAFETY: every pointer below stays within its slice: rows r < g of q,
    // scores and out; key and value rows j < keys; C registers a row.
    unsafe {
        let (qp, kp, sp) = (q.as_ptr(), k.as_ptr(), scores.as_mut_ptr());
        // The scores, a block of keys at a time, for every query (the
        // query's values read from L1 with each key's).
        for j0 in (0..full).step_by(BLOCK) {
            for r in 0..g {
                let qr = qp.add(r * hd);
                let mut sums = [_mm256_setzero_ps(); BLOCK];
                for (t, s) in sums.iter_mut().enumerate() {
                    *s = dot::<C>(qr, kp.add((j0 + t) * hd));
                }
                let s = _mm256_mul_ps(across8(&sums), scale_v);
                _mm256_storeu_ps(sp.add(r * keys + j0), s);
            }
        }
        for j in full..keys {
            for r in 0..g {
                *sp.add(r * keys + j) = lanes_sum(dot::<C>(qp.add(r * hd), kp.add(j * hd))) * scale;
            }
        }
        // Each row's softmax.
        super::attention::softmax_rows::<true>(scores, keys);
        // The weighted values, a block of them at a time into every
        // query's output, PART registers of it at most kept across the
        // block.
        let (vp, op, sp) = (v.as_ptr(), out.as_mut_ptr(), scores.as_ptr());
        out.fill(0.0);
        let mut j0 = 0;
        while j0 < keys {
            let end = (j0 + BLOCK).min(keys);
            for r in 0..g {
                let o = op.add(r * hd);
                let w = sp.add(r * keys);
                add_values::<C, 0>(o, vp, w, j0..end, hd);
                if C > PART {
                    add_values::<C, PART>(o, vp, w, j0..end, hd);
                }
            }
            j0 = end;
        }
    }
}

/// Registers `FROM..` (at most [`PART`], up to C) of the output at `o`
/// plus the values of rows `rows` (of `hd`, from `vp`) weighted by the
/// scores at `w`.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn add_values<const C: usize, const FROM: usize>(
    o: *mut f32,
    vp: *const f32,
    w: *const f32,
    rows: std::ops::Range<usize>,
    hd: usize,
) {
    // SAFETY: the caller's output row holds 8·C values, each value row
    // hd = 8·C, and w one score per row.
    unsafe {
        let mut acc = [_mm256_setzero_ps(); PART];
        for (i, a) in acc.iter_mut().enumerate() {
            if FROM + i < C {
                *a = _mm256_loadu_ps(o.add(8 * (FROM + i)));
            }
        }
        for j in rows {
            let wj = _mm256_set1_ps(*w.add(j));
            let vj = vp.add(j * hd);
            for (i, a) in acc.iter_mut().enumerate() {
                if FROM + i < C {
                    *a = _mm256_fmadd_ps(wj, _mm256_loadu_ps(vj.add(8 * (FROM + i))), *a);
                }
            }
        }
        for (i, a) in acc.iter().enumerate() {
            if FROM + i < C {
                _mm256_storeu_ps(o.add(8 * (FROM + i)), *a);
            }
        }
    }
}

/// The 8 lanes of partial sums of the query at `qp` times the key at
/// `kp` (each `8·C` values).
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn dot<const C: usize>(qp: *const f32, kp: *const f32) -> __m256 {
    // SAFETY: the caller's rows hold 8·C values.
    unsafe {
        let mut a = _mm256_mul_ps(_mm256_loadu_ps(qp), _mm256_loadu_ps(kp));
        for i in 1..C {
            a = _mm256_fmadd_ps(
                _mm256_loadu_ps(qp.add(8 * i)),
                _mm256_loadu_ps(kp.add(8 * i)),
                a,
            );
        }
        a
    }
}

/// The sums of 8 registers' lanes, lane `t` of the result register `t`'s.
/// `vhaddps` adds neighbouring pairs within each 128-bit half, twice,
/// leaving each register's two half sums in the same lane of the two
/// halves; adding the halves finishes them.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn across8(x: &[__m256; 8]) -> __m256 {
    let a = _mm256_hadd_ps(_mm256_hadd_ps(x[0], x[1]), _mm256_hadd_ps(x[2], x[3]));
    let b = _mm256_hadd_ps(_mm256_hadd_ps(x[4], x[5]), _mm256_hadd_ps(x[6], x[7]));
    // a holds registers 0–3's low-half sums in its low half, their
    // high-half sums in its high half; b the same for 4–7.
    _mm256_add_ps(
        _mm256_permute2f128_ps::<0x20>(a, b),
        _mm256_permute2f128_ps::<0x31>(a, b),
    )
}

/// The sum of one register's 8 lanes.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn lanes_sum(x: __m256) -> f32 {
    let h = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps::<1>(x));
    let h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    let h = _mm_add_ss(h, _mm_movehdup_ps(h));
    _mm_cvtss_f32(h)
}
