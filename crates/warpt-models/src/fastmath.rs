//! The elementwise functions of a transformer's forward pass in f32, written
//! branch-free so the compiler vectorizes them, and compiled for the widest
//! vectors the CPU has (AVX-512, AVX2, else the baseline): GELU with erf,
//! as BERT defines it, a masked softmax, LayerNorm, and Llama's RMSNorm and
//! gated SiLU.
//!
//! libm's `erff` and `expf` are exact to the last bit but one call per
//! element; in an encoder's feed-forward layer that was a seventh of the
//! time. These are accurate to a few units in the last place (the tests
//! bound them against f64), far inside every tolerance the benchmarks check.

use std::mem::MaybeUninit;

use crate::uninit::assume_init;

/// Runs `$body` compiled for the best vector extension this CPU has; a
/// `fused` body takes `F = true` there (its multiply-adds fused: every CPU
/// with AVX2 or AVX-512 this runs on has FMA) and `false` on the baseline.
macro_rules! dispatch {
    (fused $body:ident, $($arg:expr),*) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("fma") {
                // SAFETY: the CPU has AVX-512F and FMA.
                return unsafe { x86::$body::avx512($($arg),*) };
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                // SAFETY: the CPU has AVX2 and FMA.
                return unsafe { x86::$body::avx2($($arg),*) };
            }
        }
        $body::<false>($($arg),*)
    }};
    ($body:ident, $($arg:expr),*) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F.
                return unsafe { x86::$body::avx512($($arg),*) };
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                // SAFETY: the CPU has AVX2 and FMA.
                return unsafe { x86::$body::avx2($($arg),*) };
            }
        }
        $body($($arg),*)
    }};
}

/// `gelu(x) = x / 2 · (1 + erf(x / √2))` of every element, in place.
pub fn gelu_erf(xs: &mut [f32]) {
    dispatch!(fused gelu_body, xs)
}

/// [`gelu_erf`] of `xs` rounded to bf16 into `out` (as long): one pass
/// that reads the f32 values and writes only the bf16 ones, a few
/// kilobytes at a time through a buffer in L1, for a product that
/// multiplies bf16 (an encoder's feed-forward output: GELU in place and
/// then a conversion read and wrote its 25 MB a layer twice more).
///
/// # Panics
/// When the lengths differ.
pub fn gelu_erf_to_bf16(xs: &[f32], out: &mut [warpt_gemm::Bf16]) {
    assert_eq!(xs.len(), out.len(), "one bf16 per value");
    let mut buf = [0f32; 1024];
    for (x, o) in xs.chunks(buf.len()).zip(out.chunks_mut(buf.len())) {
        let buf = &mut buf[..x.len()];
        gelu_erf_into(x, buf);
        warpt_gemm::simd::bf16_from_f32(buf, o);
    }
}

/// [`gelu_erf`] of `xs` into `out` (as long).
fn gelu_erf_into(xs: &[f32], out: &mut [f32]) {
    debug_assert_eq!(xs.len(), out.len());
    dispatch!(fused gelu_into_body, xs, out)
}

/// The softmax of `xs` over the positions where `keep` is 1 (0 elsewhere),
/// in place; `keep` holds 0.0 or 1.0 per position, at least one 1.0.
pub fn softmax_masked(xs: &mut [f32], keep: &[f32]) {
    debug_assert_eq!(xs.len(), keep.len());
    dispatch!(fused softmax_body, xs, keep)
}

/// e^x of one value, as [`exp_shifted`] computes it (an online softmax's
/// rescaling factor).
pub fn exp_of(x: f32) -> f32 {
    exp::<false>(x)
}

/// Every element replaced by `e^(x - shift)`; returns their sum (an
/// online softmax's step, `shift` the running maximum).
pub fn exp_shifted(xs: &mut [f32], shift: f32) -> f32 {
    dispatch!(fused exp_shifted_body, xs, shift)
}

/// `row = LayerNorm(row + residual)`: the row (plus the residual, when
/// given) less its mean, over its standard deviation (`eps` added to the
/// variance), times `weight` plus `bias`. The sums run in 16 lanes of f32
/// (two passes: the mean, then the squared deviations from it), as
/// PyTorch's CPU LayerNorm sums in f32; an f64 sum is one long chain of
/// dependent additions per row.
pub fn layer_norm(
    row: &mut [f32],
    residual: Option<&[f32]>,
    weight: &[f32],
    bias: &[f32],
    eps: f32,
) {
    debug_assert_eq!(row.len(), weight.len());
    debug_assert_eq!(row.len(), bias.len());
    debug_assert!(residual.is_none_or(|r| r.len() == row.len()));
    dispatch!(layer_norm_body, row, residual, weight, bias, eps)
}

/// `out = silu(gate) · up` elementwise (SwiGLU, a Llama MLP's
/// activation), `silu(g) = g / (1 + e^-g)`: every slot of `out` written,
/// and returned as the values.
///
/// # Panics
/// When the three lengths differ.
pub fn silu_mul<'a>(gate: &[f32], up: &[f32], out: &'a mut [MaybeUninit<f32>]) -> &'a mut [f32] {
    assert!(
        gate.len() == out.len() && up.len() == out.len(),
        "silu_mul of {} and {} into {}",
        gate.len(),
        up.len(),
        out.len()
    );
    silu_mul_into(gate, up, out);
    // SAFETY: the body writes each slot, zipped with gate and up, which
    // are as long (asserted).
    unsafe { assume_init(out) }
}

/// See [`silu_mul`].
fn silu_mul_into(gate: &[f32], up: &[f32], out: &mut [MaybeUninit<f32>]) {
    dispatch!(fused silu_mul_body, gate, up, out)
}

/// Rotary position embedding of one head's `x` at one position, pairs
/// interleaved (as candle's `rope_i`): `(x₂ⱼ, x₂ⱼ₊₁)` turned by the angle
/// whose cosine and sine are `cos[j]`, `sin[j]`. Every slot of `out`
/// written, and returned as the values.
///
/// # Panics
/// When `x` and `out` are not twice as long as `cos` and `sin`.
pub fn rope_pairs<'a>(
    x: &[f32],
    cos: &[f32],
    sin: &[f32],
    out: &'a mut [MaybeUninit<f32>],
) -> &'a mut [f32] {
    assert!(
        x.len() == out.len() && x.len() == 2 * cos.len() && cos.len() == sin.len(),
        "RoPE of {} values by {} and {} angles into {}",
        x.len(),
        cos.len(),
        sin.len(),
        out.len()
    );
    for (((o, x), c), s) in out
        .chunks_exact_mut(2)
        .zip(x.chunks_exact(2))
        .zip(cos)
        .zip(sin)
    {
        o[0].write(x[0] * c - x[1] * s);
        o[1].write(x[0] * s + x[1] * c);
    }
    // SAFETY: out is even (twice cos's length, asserted) and each of its
    // pairs was written, zipped with cos, as many.
    unsafe { assume_init(out) }
}

/// `out = x / √(mean(x²) + eps) · weight` (RMSNorm, as Llama normalizes
/// its hidden states; the sum of squares in 16 lanes of f32): every slot
/// of `out` written, and returned as the values.
///
/// # Panics
/// When the three lengths differ.
pub fn rms_norm<'a>(
    x: &[f32],
    weight: &[f32],
    eps: f32,
    out: &'a mut [MaybeUninit<f32>],
) -> &'a mut [f32] {
    assert!(
        weight.len() == x.len() && out.len() == x.len(),
        "rms_norm of {} by {} into {}",
        x.len(),
        weight.len(),
        out.len()
    );
    rms_norm_into(x, weight, eps, out);
    // SAFETY: the body writes each slot, zipped with x and weight, which
    // are as long (asserted).
    unsafe { assume_init(out) }
}

/// See [`rms_norm`].
fn rms_norm_into(x: &[f32], weight: &[f32], eps: f32, out: &mut [MaybeUninit<f32>]) {
    dispatch!(rms_norm_body, x, weight, eps, out)
}

/// `y += alpha · x`, elementwise.
pub fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    debug_assert_eq!(x.len(), y.len());
    dispatch!(axpy_body, alpha, x, y)
}

/// See [`silu_mul`].
#[inline(always)]
fn silu_mul_body<const F: bool>(gate: &[f32], up: &[f32], out: &mut [MaybeUninit<f32>]) {
    for ((o, g), u) in out.iter_mut().zip(gate).zip(up) {
        // e^-g clamps at e^87 for g far below 0: silu is then g / 6e37,
        // a -0 or a denormal's worth, as exactly as f32 holds it.
        o.write(*g / (1.0 + exp::<F>(-*g)) * *u);
    }
}

/// See [`rms_norm`].
#[inline(always)]
fn rms_norm_body(x: &[f32], weight: &[f32], eps: f32, out: &mut [MaybeUninit<f32>]) {
    let mut lanes = [0f32; 16];
    let chunks = x.chunks_exact(16);
    let tail: f32 = chunks.remainder().iter().map(|v| v * v).sum();
    for c in chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l += v * v;
        }
    }
    let mean = (lanes.iter().sum::<f32>() + tail) / x.len() as f32;
    let inv = 1.0 / (mean + eps).sqrt();
    for ((o, v), w) in out.iter_mut().zip(x).zip(weight) {
        o.write(v * inv * w);
    }
}

/// See [`axpy`].
#[inline(always)]
fn axpy_body(alpha: f32, x: &[f32], y: &mut [f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += alpha * x;
    }
}

/// See [`layer_norm`].
#[inline(always)]
fn layer_norm_body(
    row: &mut [f32],
    residual: Option<&[f32]>,
    weight: &[f32],
    bias: &[f32],
    eps: f32,
) {
    if let Some(residual) = residual {
        for (v, r) in row.iter_mut().zip(residual) {
            *v += r;
        }
    }
    let n = row.len() as f32;
    let mean = sum(row) / n;
    let mut lanes = [0f32; 16];
    let chunks = row.chunks_exact(16);
    let tail: f32 = chunks
        .remainder()
        .iter()
        .map(|v| (v - mean) * (v - mean))
        .sum();
    for c in chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l += (v - mean) * (v - mean);
        }
    }
    let var = (lanes.iter().sum::<f32>() + tail) / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, g), b) in row.iter_mut().zip(weight).zip(bias) {
        *v = (*v - mean) * inv * g + b;
    }
}

/// See [`exp_shifted`].
#[inline(always)]
fn exp_shifted_body<const F: bool>(xs: &mut [f32], shift: f32) -> f32 {
    for x in xs.iter_mut() {
        *x = exp::<F>(*x - shift);
    }
    sum(xs)
}

/// See [`gelu_erf`].
#[inline(always)]
fn gelu_body<const F: bool>(xs: &mut [f32]) {
    for x in xs {
        *x = gelu::<F>(*x);
    }
}

/// See [`gelu_erf_into`].
#[inline(always)]
fn gelu_into_body<const F: bool>(xs: &[f32], out: &mut [f32]) {
    for (o, x) in out.iter_mut().zip(xs) {
        *o = gelu::<F>(*x);
    }
}

/// GELU of one value.
#[inline(always)]
fn gelu<const F: bool>(x: f32) -> f32 {
    0.5 * x * (1.0 + erf::<F>(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// The largest of `xs` where `keep` is 1 (minus infinity if none).
#[inline(always)]
fn masked_max(xs: &[f32], keep: &[f32]) -> f32 {
    // The maximum in 16 lanes, each a select and a compare (f32::max's
    // NaN rule and a branch per element kept it scalar).
    let kept = |x: f32, k: f32| if k != 0.0 { x } else { f32::NEG_INFINITY };
    let larger = |a: f32, b: f32| if b > a { b } else { a };
    let mut lanes = [f32::NEG_INFINITY; 16];
    let (cx, ck) = (xs.chunks_exact(16), keep.chunks_exact(16));
    let max = cx
        .remainder()
        .iter()
        .zip(ck.remainder())
        .fold(f32::NEG_INFINITY, |m, (x, k)| larger(m, kept(*x, *k)));
    for (x, k) in cx.zip(ck) {
        for ((l, x), k) in lanes.iter_mut().zip(x).zip(k) {
            *l = larger(*l, kept(*x, *k));
        }
    }
    lanes.into_iter().fold(max, larger)
}

/// Every element replaced by `e^(x - max)` where `keep` is 1 (0
/// elsewhere), `max` the largest kept; returns their sum.
#[inline(always)]
fn exp_masked_body<const F: bool>(xs: &mut [f32], keep: &[f32]) -> f32 {
    let max = masked_max(xs, keep);
    for (x, k) in xs.iter_mut().zip(keep) {
        *x = exp::<F>(*x - max) * k;
    }
    sum(xs)
}

/// See [`softmax_masked`].
#[inline(always)]
fn softmax_body<const F: bool>(xs: &mut [f32], keep: &[f32]) {
    let inv = 1.0 / exp_masked_body::<F>(xs, keep);
    for x in xs {
        *x *= inv;
    }
}

/// The sum in 16 lanes (a vector's worth), so it vectorizes.
#[inline(always)]
fn sum(xs: &[f32]) -> f32 {
    let mut lanes = [0f32; 16];
    let chunks = xs.chunks_exact(16);
    let tail: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l += v;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// `a·b + c`, rounded once where the body is compiled for FMA (`F`),
/// else a product and a sum (without FMA, `mul_add` is a libm call): the
/// polynomials below in half the instructions.
#[inline(always)]
fn madd<const F: bool>(a: f32, b: f32, c: f32) -> f32 {
    if F { a.mul_add(b, c) } else { a * b + c }
}

/// erf by the rational approximation Eigen and XLA use for f32 (odd
/// degree-13 numerator over even degree-8 denominator on [-4, 4], ±1
/// beyond, where f32 rounds to it anyway).
#[inline(always)]
fn erf<const F: bool>(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = madd::<F>(x2, -2.726_142_3e-10, 2.770_681_4e-8);
    p = madd::<F>(x2, p, -2.101_024e-6);
    p = madd::<F>(x2, p, -5.692_506_4e-5);
    p = madd::<F>(x2, p, -7.349_906_3e-4);
    p = madd::<F>(x2, p, -2.954_600_1e-3);
    p = madd::<F>(x2, p, -1.609_603_3e-2);
    let mut q = madd::<F>(x2, -1.456_607_2e-5, -2.133_740_6e-4);
    q = madd::<F>(x2, q, -1.682_827e-3);
    q = madd::<F>(x2, q, -7.373_329e-3);
    q = madd::<F>(x2, q, -1.426_474e-2);
    x * p / q
}

/// e^x: x = n ln 2 + r with |r| <= ln 2 / 2, e^r by its degree-6 Taylor
/// polynomial, 2^n put in the exponent bits. Inputs below -87 give about
/// 1e-38 (callers mask what must be 0), above 88 about 1.6e38.
#[inline(always)]
fn exp<const F: bool>(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split so n · LN2_HI is exact for the n that occur.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding then subtracting 1.5 · 2^23 rounds to an integer without a
    // rounding instruction the baseline lacks.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let t = madd::<F>(x, LOG2E, ROUND);
    let n = t - ROUND;
    let r = madd::<F>(-n, LN2_LO, madd::<F>(-n, LN2_HI, x));
    let mut p = 1.0 / 720.0;
    p = madd::<F>(p, r, 1.0 / 120.0);
    p = madd::<F>(p, r, 1.0 / 24.0);
    p = madd::<F>(p, r, 1.0 / 6.0);
    p = madd::<F>(p, r, 0.5);
    p = madd::<F>(p, r, 1.0);
    p = madd::<F>(p, r, 1.0);
    // n, an integer in [-126, 127], sits in t's low mantissa bits: n + 127
    // is a normal float's biased exponent.
    let biased = t.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(127);
    let scale = f32::from_bits(biased << 23);
    p * scale
}

mod attention;
#[cfg(target_arch = "x86_64")]
mod decode_avx2;
#[cfg(target_arch = "x86_64")]
mod decode_avx512;

pub use attention::{attend_one, attend_one_f16, attends_f16, attention_weights};
#[cfg(target_arch = "x86_64")]
use attention::{attend_one_body, weights_body};

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The bodies compiled with wider vectors. `#[inline(always)]` bodies
    //! take on the features of the function they are inlined into.

    /// Generates `avx512` and `avx2` versions of a body in a module of its
    /// name (of a `fused` body, its `F = true` instance).
    macro_rules! versions {
        (fused $body:ident ($($arg:ident: $ty:ty),*) $(-> $ret:ty)?) => {
            pub(super) mod $body {
                /// # Safety
                /// The CPU has AVX-512F and FMA.
                #[target_feature(enable = "avx512f,fma")]
                pub unsafe fn avx512($($arg: $ty),*) $(-> $ret)? {
                    super::super::$body::<true>($($arg),*)
                }

                /// # Safety
                /// The CPU has AVX2 and FMA.
                #[target_feature(enable = "avx2,fma")]
                pub unsafe fn avx2($($arg: $ty),*) $(-> $ret)? {
                    super::super::$body::<true>($($arg),*)
                }
            }
        };
        ($body:ident ($($arg:ident: $ty:ty),*) $(-> $ret:ty)?) => {
            pub(super) mod $body {
                /// # Safety
                /// The CPU has AVX-512F.
                #[target_feature(enable = "avx512f")]
                pub unsafe fn avx512($($arg: $ty),*) $(-> $ret)? {
                    super::super::$body($($arg),*)
                }

                /// # Safety
                /// The CPU has AVX2 and FMA.
                #[target_feature(enable = "avx2,fma")]
                pub unsafe fn avx2($($arg: $ty),*) $(-> $ret)? {
                    super::super::$body($($arg),*)
                }
            }
        };
    }

    versions!(fused gelu_body(xs: &mut [f32]));
    versions!(fused gelu_into_body(xs: &[f32], out: &mut [f32]));
    versions!(fused softmax_body(xs: &mut [f32], keep: &[f32]));
    versions!(fused weights_body(
        scores: &[f32],
        keep: &[f32],
        scale: f32,
        weights: &mut [warpt_gemm::Bf16],
        sums: &mut [f32]
    ));
    versions!(fused attend_one_body(
        q: &[f32],
        k: &[f32],
        v: &[f32],
        hd: usize,
        scale: f32,
        scores: &mut [f32],
        out: &mut [f32]
    ));
    versions!(fused exp_shifted_body(xs: &mut [f32], shift: f32) -> f32);
    versions!(axpy_body(alpha: f32, x: &[f32], y: &mut [f32]));
    versions!(fused silu_mul_body(
        gate: &[f32],
        up: &[f32],
        out: &mut [std::mem::MaybeUninit<f32>]
    ));
    versions!(rms_norm_body(
        x: &[f32],
        weight: &[f32],
        eps: f32,
        out: &mut [std::mem::MaybeUninit<f32>]
    ));
    versions!(layer_norm_body(
        row: &mut [f32],
        residual: Option<&[f32]>,
        weight: &[f32],
        bias: &[f32],
        eps: f32
    ));
}

#[cfg(test)]
mod tests;
