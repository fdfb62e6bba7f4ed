//! Attention's pieces on vectors: a block's softmax weights for the
//! tiles' product, and a decode step's whole attention.

#[cfg(target_arch = "x86_64")]
use super::x86;
use super::{exp, exp_shifted_body, madd, masked_max};

/// Attention's weights for a block of rows of scores, before their
/// normalisation, in bf16 as a product takes them: for each row of
/// `keep.len()` scores, `e^(scale·(x − max))` where `keep` is 1 (0
/// elsewhere), `max` the row's largest kept score, rounded to bf16 into
/// `weights`, and their sum (of the f32 values) into `sums`: one row each.
/// One pass over a row after its maximum's, one call for the block.
///
/// # Panics
/// When `scores` and `weights` are not `sums.len()` rows of `keep.len()`.
pub fn attention_weights(
    scores: &[f32],
    keep: &[f32],
    scale: f32,
    weights: &mut [warpt_gemm::Bf16],
    sums: &mut [f32],
) {
    let rows = sums.len() * keep.len();
    assert!(
        scores.len() == rows && weights.len() == rows,
        "{} rows of {} scores and weights",
        sums.len(),
        keep.len()
    );
    dispatch!(fused weights_body, scores, keep, scale, weights, sums)
}

/// One decode step's attention for the `g` query heads that share a
/// key-value head: `q` their queries (`g` rows of `hd`), `k` and `v` the
/// keys and values up to the step's position (rows of `hd`), scores
/// scaled by `scale`; `scores` (`g` rows of one per key) is the scratch,
/// `out` (`g` rows of `hd`) the softmax-weighted sums of the values. Each
/// key and value row is read once for the whole group, from L1 for all
/// but the first of it: a head at a time read the cache `g` times.
///
/// # Panics
/// When the slices are not those sizes, or there is no key.
pub fn attend_one(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    hd: usize,
    scale: f32,
    scores: &mut [f32],
    out: &mut [f32],
) {
    check_one(q, k.len(), v.len(), hd, scores, out);
    #[cfg(target_arch = "x86_64")]
    {
        use super::{decode_avx2, decode_avx512};
        if decode_avx512::takes(hd) && std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F; the sizes were checked above.
            return unsafe { decode_avx512::attend(q, k, v, hd, scale, scores, out) };
        }
        if decode_avx2::takes(hd)
            && std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA; the sizes were checked above.
            return unsafe { decode_avx2::attend(q, k, v, hd, scale, scores, out) };
        }
    }
    dispatch!(fused attend_one_body, q, k, v, hd, scale, scores, out)
}

/// Whether [`attend_one_f16`] runs here on heads of `hd` values: x86-64
/// with AVX-512F (whose 16-lane conversion widens the f16 values), heads
/// a multiple of 16 up to 128.
pub fn attends_f16(hd: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        super::decode_avx512::takes(hd) && std::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = hd;
        false
    }
}

/// [`attend_one`] over keys and values cached in f16: each widened
/// exactly to f32 as it is loaded, so the result is `attend_one`'s on the
/// widened values, bit for bit, from half the bytes.
///
/// # Panics
/// As [`attend_one`], and where [`attends_f16`] is false.
pub fn attend_one_f16(
    q: &[f32],
    k: &[half::f16],
    v: &[half::f16],
    hd: usize,
    scale: f32,
    scores: &mut [f32],
    out: &mut [f32],
) {
    assert!(
        attends_f16(hd),
        "no f16 decode attention for heads of {hd} here"
    );
    check_one(q, k.len(), v.len(), hd, scores, out);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has AVX-512F (attends_f16); the sizes were checked.
    unsafe {
        super::decode_avx512::attend(q, k, v, hd, scale, scores, out)
    }
}

/// Panics unless `q` and `out` are `g` rows of `hd`, the `k` and `v`
/// lengths the same number (at least one) of rows, `scores` `g` rows of
/// one per key.
fn check_one(q: &[f32], k: usize, v: usize, hd: usize, scores: &[f32], out: &[f32]) {
    assert!(hd > 0 && k > 0, "keys of {hd}");
    let (g, keys) = (q.len() / hd, k / hd);
    assert!(
        q.len() == g * hd
            && k == keys * hd
            && v == k
            && scores.len() == g * keys
            && out.len() == q.len(),
        "{g} queries of {hd} over {keys} keys"
    );
}

/// See [`attention_weights`].
#[inline(always)]
pub(super) fn weights_body<const F: bool>(
    scores: &[f32],
    keep: &[f32],
    scale: f32,
    weights: &mut [warpt_gemm::Bf16],
    sums: &mut [f32],
) {
    // Round to nearest, ties to even, as `Bf16::from_f32` (not inlined
    // from another crate, and one conversion call per row cost more than
    // its vectors).
    let bf16 = |x: f32| {
        let bits = x.to_bits();
        warpt_gemm::Bf16((bits.wrapping_add(0x7FFF + ((bits >> 16) & 1)) >> 16) as u16)
    };
    let len = keep.len();
    for ((row, out), sum) in scores
        .chunks_exact(len)
        .zip(weights.chunks_exact_mut(len))
        .zip(sums)
    {
        let shift = masked_max(row, keep) * scale;
        let weight = |x: f32, k: f32| exp::<F>(madd::<F>(x, scale, -shift)) * k;
        let mut lanes = [0f32; 16];
        let (cx, ck) = (row.chunks_exact(16), keep.chunks_exact(16));
        let mut tail = 0.0;
        let rest = out.len() - cx.remainder().len();
        for ((x, k), o) in cx
            .remainder()
            .iter()
            .zip(ck.remainder())
            .zip(&mut out[rest..])
        {
            let w = weight(*x, *k);
            tail += w;
            *o = bf16(w);
        }
        for ((x, k), o) in cx.zip(ck).zip(out.chunks_exact_mut(16)) {
            for (((l, x), k), o) in lanes.iter_mut().zip(x).zip(k).zip(o) {
                let w = weight(*x, *k);
                *l += w;
                *o = bf16(w);
            }
        }
        *sum = lanes.iter().sum::<f32>() + tail;
    }
}

/// `x·y` in 16 lanes, the lanes summed as a tree (16 to 8 to 4, then
/// two pairs), not as one chain of fifteen dependent additions a key.
#[inline(always)]
fn dot<const F: bool>(x: &[f32], y: &[f32]) -> f32 {
    let mut lanes = [0f32; 16];
    let ((cx, rx), (cy, ry)) = (x.as_chunks::<16>(), y.as_chunks::<16>());
    let tail = rx
        .iter()
        .zip(ry)
        .fold(0.0, |s, (a, b)| madd::<F>(*a, *b, s));
    for (a, b) in cx.iter().zip(cy) {
        for i in 0..16 {
            lanes[i] = madd::<F>(a[i], b[i], lanes[i]);
        }
    }
    let mut half = [0f32; 8];
    for i in 0..8 {
        half[i] = lanes[i] + lanes[i + 8];
    }
    let mut quarter = [0f32; 4];
    for i in 0..4 {
        quarter[i] = half[i] + half[i + 4];
    }
    (quarter[0] + quarter[2]) + (quarter[1] + quarter[3]) + tail
}

/// See [`attend_one`].
#[inline(always)]
pub(super) fn attend_one_body<const F: bool>(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    hd: usize,
    scale: f32,
    scores: &mut [f32],
    out: &mut [f32],
) {
    let keys = k.len() / hd;
    for (j, kj) in k.chunks_exact(hd).enumerate() {
        for (r, qr) in q.chunks_exact(hd).enumerate() {
            scores[r * keys + j] = dot::<F>(qr, kj) * scale;
        }
    }
    softmax_rows::<F>(scores, keys);
    out.fill(0.0);
    for (j, vj) in v.chunks_exact(hd).enumerate() {
        for (r, o) in out.chunks_exact_mut(hd).enumerate() {
            let w = scores[r * keys + j];
            for (o, x) in o.iter_mut().zip(vj) {
                *o = madd::<F>(w, *x, *o);
            }
        }
    }
}

/// The softmax of each row of `keys` scores, in place: a decode step's
/// attention weights (the generic body's and the block kernels', each
/// compiled at its caller's vector width).
#[inline(always)]
pub(super) fn softmax_rows<const F: bool>(scores: &mut [f32], keys: usize) {
    // The maximum in 16 lanes, a compare and a select each (a fold over
    // the row stays scalar).
    let larger = |a: f32, b: f32| if b > a { b } else { a };
    for row in scores.chunks_exact_mut(keys) {
        let mut lanes = [f32::NEG_INFINITY; 16];
        let chunks = row.chunks_exact(16);
        let tail = chunks
            .remainder()
            .iter()
            .fold(f32::NEG_INFINITY, |m, &x| larger(m, x));
        for c in chunks {
            for (l, x) in lanes.iter_mut().zip(c) {
                *l = larger(*l, *x);
            }
        }
        let max = lanes.iter().fold(tail, |m, &x| larger(m, x));
        let inv = 1.0 / exp_shifted_body::<F>(row, max);
        row.iter_mut().for_each(|x| *x *= inv);
    }
}
