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

/// `Σ a·b` of two equally long slices, in 16 lanes so it vectorizes.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    dispatch!(dot_body, a, b)
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

/// See [`dot`].
#[inline(always)]
fn dot_body(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for ((l, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *l += x * y;
        }
    }
    lanes.iter().sum::<f32>() + tail
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

/// See [`softmax_masked`].
#[inline(always)]
fn softmax_body<const F: bool>(xs: &mut [f32], keep: &[f32]) {
    // The maximum in 16 lanes, each a select and a compare (f32::max's
    // NaN rule and a branch per element kept it scalar).
    let kept = |x: f32, k: f32| if k != 0.0 { x } else { f32::NEG_INFINITY };
    let larger = |a: f32, b: f32| if b > a { b } else { a };
    let mut lanes = [f32::NEG_INFINITY; 16];
    let (cx, ck) = (xs.chunks_exact(16), keep.chunks_exact(16));
    let mut max = cx
        .remainder()
        .iter()
        .zip(ck.remainder())
        .fold(f32::NEG_INFINITY, |m, (x, k)| larger(m, kept(*x, *k)));
    for (x, k) in cx.zip(ck) {
        for ((l, x), k) in lanes.iter_mut().zip(x).zip(k) {
            *l = larger(*l, kept(*x, *k));
        }
    }
    max = lanes.into_iter().fold(max, larger);
    for (x, k) in xs.iter_mut().zip(keep) {
        *x = exp::<F>(*x - max) * k;
    }
    let sum = sum(xs);
    let inv = 1.0 / sum;
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
    versions!(fused exp_shifted_body(xs: &mut [f32], shift: f32) -> f32);
    versions!(dot_body(a: &[f32], b: &[f32]) -> f32);
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
mod tests {
    use super::*;

    /// erf in f64 by its Taylor series (|x| < 3) or its asymptotic
    /// continued fraction's limit, 1 (beyond, where f32 cannot tell).
    fn erf64(x: f64) -> f64 {
        if x.abs() >= 3.5 {
            return x.signum();
        }
        let (mut term, mut sum) = (x, x);
        for n in 1..200 {
            term *= -x * x / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn erf_and_exp_are_within_a_few_ulps_of_f64() {
        let mut worst_erf = 0f64;
        let mut worst_exp = 0f64;
        for i in -6000..=6000 {
            let x = i as f32 / 1000.0;
            worst_erf = worst_erf.max((erf::<false>(x) as f64 - erf64(x as f64)).abs());
            let a = x * 14.0;
            let (want, got) = ((a as f64).exp(), exp::<false>(a) as f64);
            worst_exp = worst_exp.max(((got - want) / want).abs());
        }
        assert!(worst_erf < 1e-6, "erf off by {worst_erf:e}");
        assert!(worst_exp < 1e-6, "exp off by {worst_exp:e} (relative)");
    }

    #[test]
    fn dot_and_axpy_are_the_plain_sums() {
        // 37 elements: a tail past every vector width; small integers, so
        // every order of summation gives the same float.
        let a: Vec<f32> = (0..37).map(|i| (i % 7) as f32 - 3.0).collect();
        let b: Vec<f32> = (0..37).map(|i| (i % 5) as f32 - 2.0).collect();
        let want: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert_eq!(dot(&a, &b), want);
        let mut y = b.clone();
        axpy(2.0, &a, &mut y);
        for ((y, a), b) in y.iter().zip(&a).zip(&b) {
            assert_eq!(*y, b + 2.0 * a);
        }
    }

    #[test]
    fn exp_shifted_is_exp_and_its_sum() {
        // 37 elements: a tail past every vector width.
        let xs: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 0.53).collect();
        let mut e = xs.clone();
        let sum = exp_shifted(&mut e, 2.5);
        let mut want_sum = 0f64;
        for (x, got) in xs.iter().zip(&e) {
            let want = (f64::from(*x) - 2.5).exp();
            want_sum += want;
            assert!(
                ((f64::from(*got) - want) / want).abs() < 1e-6,
                "e^({x} - 2.5) = {got}"
            );
        }
        assert!(
            (f64::from(sum) - want_sum).abs() < 1e-5 * want_sum,
            "{sum} vs {want_sum}"
        );
        assert!((f64::from(exp_of(-1.5)) - (-1.5f64).exp()).abs() < 1e-7);
    }

    #[test]
    fn silu_mul_matches_f64_on_every_path() {
        // 37 elements (a tail past every vector width), from far below 0
        // (where e^-g overflows f32) to far above.
        let gate: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 6.1).collect();
        let up: Vec<f32> = (0..37).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.3).collect();
        let mut slots = vec![MaybeUninit::uninit(); 37];
        let got = silu_mul(&gate, &up, &mut slots).to_vec();
        let mut slots = vec![MaybeUninit::uninit(); 37];
        silu_mul_body::<false>(&gate, &up, &mut slots);
        // SAFETY: the body wrote all 37.
        let plain = unsafe { assume_init(&mut slots) }.to_vec();
        for i in 0..37 {
            let g = f64::from(gate[i]);
            let want = g / (1.0 + (-g).exp()) * f64::from(up[i]);
            let tol = 1e-6 * want.abs().max(1e-3);
            assert!(
                (f64::from(got[i]) - want).abs() <= tol,
                "silu({}) * {} = {}, not {want}",
                gate[i],
                up[i],
                got[i]
            );
            assert!(
                (got[i] - plain[i]).abs() <= 1e-6 * got[i].abs(),
                "vector and baseline differ at {i}"
            );
        }
    }

    #[test]
    fn rope_pairs_turn_each_pair_by_its_angle() {
        let x: Vec<f32> = (0..8).map(|i| i as f32 - 3.5).collect();
        let angles = [0.0f64, 0.5, 1.5, -2.0];
        let cos: Vec<f32> = angles.iter().map(|a| a.cos() as f32).collect();
        let sin: Vec<f32> = angles.iter().map(|a| a.sin() as f32).collect();
        let mut slots = vec![MaybeUninit::uninit(); 8];
        let got = rope_pairs(&x, &cos, &sin, &mut slots);
        for (j, a) in angles.iter().enumerate() {
            let (x0, x1) = (f64::from(x[2 * j]), f64::from(x[2 * j + 1]));
            let want = [x0 * a.cos() - x1 * a.sin(), x0 * a.sin() + x1 * a.cos()];
            for (g, w) in got[2 * j..2 * j + 2].iter().zip(want) {
                assert!((f64::from(*g) - w).abs() < 1e-6, "pair {j}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn rms_norm_matches_f64_on_every_path() {
        // 397 elements: a tail past every vector width.
        let h = 397;
        let xs: Vec<f32> = (0..h)
            .map(|i| 0.4 + ((i * 37 % 101) as f32 - 50.0) * 0.03)
            .collect();
        let weight: Vec<f32> = (0..h).map(|i| 0.5 + (i % 7) as f32 * 0.1).collect();
        let eps = 1e-5f32;
        let ms = xs.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / h as f64;
        let inv = 1.0 / (ms + f64::from(eps)).sqrt();
        let mut slots = vec![MaybeUninit::uninit(); h];
        let got = rms_norm(&xs, &weight, eps, &mut slots).to_vec();
        let mut slots = vec![MaybeUninit::uninit(); h];
        rms_norm_body(&xs, &weight, eps, &mut slots);
        // SAFETY: the body wrote all h.
        let plain = unsafe { assume_init(&mut slots) }.to_vec();
        for i in 0..h {
            let want = f64::from(xs[i]) * inv * f64::from(weight[i]);
            assert!(
                (f64::from(got[i]) - want).abs() < 1e-6,
                "element {i}: {}, not {want}",
                got[i]
            );
            assert!((got[i] - plain[i]).abs() < 1e-6, "paths differ at {i}");
        }
    }

    #[test]
    fn gelu_and_softmax_match_f64_on_every_path() {
        // 37 elements: a tail past every vector width.
        let xs: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 0.37).collect();
        let mut g = xs.clone();
        gelu_erf(&mut g);
        let mut plain = xs.clone();
        gelu_body::<false>(&mut plain);
        for ((x, a), b) in xs.iter().zip(&g).zip(&plain) {
            let want = 0.5 * *x as f64 * (1.0 + erf64(*x as f64 / std::f64::consts::SQRT_2));
            assert!(
                (*a as f64 - want).abs() < 1e-5,
                "gelu({x}) = {a}, not {want}"
            );
            assert!((a - b).abs() < 1e-6, "vector and baseline gelu({x}) differ");
        }
        let keep: Vec<f32> = (0..37)
            .map(|i| if i % 5 == 3 { 0.0 } else { 1.0 })
            .collect();
        let mut s = xs.clone();
        softmax_masked(&mut s, &keep);
        let max = xs.iter().copied().fold(f32::MIN, f32::max) as f64;
        let denom: f64 = xs
            .iter()
            .zip(&keep)
            .map(|(x, k)| (*x as f64 - max).exp() * *k as f64)
            .sum();
        for ((x, k), got) in xs.iter().zip(&keep).zip(&s) {
            let want = (*x as f64 - max).exp() * *k as f64 / denom;
            assert!(
                (*got as f64 - want).abs() < 1e-6,
                "softmax at {x}: {got}, not {want}"
            );
            if *k == 0.0 {
                assert_eq!(*got, 0.0, "a masked position has weight");
            }
        }
        // Masked positions far above the rest (in a vector's lanes and
        // the tail) are not the shift: e^(x - 200) of the kept ones would
        // vanish.
        let mut high = xs.clone();
        for (x, k) in high.iter_mut().zip(&keep) {
            if *k == 0.0 {
                *x = 200.0;
            }
        }
        softmax_masked(&mut high, &keep);
        for (a, b) in high.iter().zip(&s) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b} with high masked values");
        }
    }

    #[test]
    fn gelu_to_bf16_is_gelu_then_the_rounding() {
        // 2500 values: chunks of the buffer and a tail.
        let xs: Vec<f32> = (0..2500).map(|i| (i as f32 - 1250.0) * 0.0043).collect();
        let mut want = xs.clone();
        gelu_erf(&mut want);
        let want: Vec<u16> = want
            .iter()
            .map(|v| warpt_gemm::Bf16::from_f32(*v).0)
            .collect();
        let mut got = vec![warpt_gemm::Bf16(0); xs.len()];
        gelu_erf_to_bf16(&xs, &mut got);
        let got: Vec<u16> = got.iter().map(|v| v.0).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn layer_norm_matches_f64_on_every_path() {
        // 397 elements (a tail past every vector width), off-centre and
        // spread as a hidden state is, with a residual.
        let h = 397;
        let xs: Vec<f32> = (0..h)
            .map(|i| 3.0 + ((i * 37 % 101) as f32 - 50.0) * 0.21)
            .collect();
        let res: Vec<f32> = (0..h).map(|i| ((i * 11 % 13) as f32 - 6.0) * 0.5).collect();
        let weight: Vec<f32> = (0..h).map(|i| 0.5 + (i % 7) as f32 * 0.1).collect();
        let bias: Vec<f32> = (0..h).map(|i| (i % 5) as f32 * 0.01 - 0.02).collect();
        let eps = 1e-12f32;
        let summed: Vec<f64> = xs.iter().zip(&res).map(|(x, r)| f64::from(x + r)).collect();
        let mean = summed.iter().sum::<f64>() / h as f64;
        let var = summed.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / h as f64;
        let mut got = xs.clone();
        layer_norm(&mut got, Some(&res), &weight, &bias, eps);
        let mut plain = xs.clone();
        layer_norm_body(&mut plain, Some(&res), &weight, &bias, eps);
        for i in 0..h {
            let want = (summed[i] - mean) / (var + f64::from(eps)).sqrt() * f64::from(weight[i])
                + f64::from(bias[i]);
            assert!(
                (f64::from(got[i]) - want).abs() < 1e-5,
                "element {i}: {}, not {want}",
                got[i]
            );
            assert!(
                (got[i] - plain[i]).abs() < 1e-5,
                "vector and baseline differ at {i}"
            );
        }
        // Without a residual: the row alone.
        let mut alone = xs.clone();
        layer_norm(&mut alone, None, &weight, &bias, eps);
        let mean = xs.iter().map(|&v| f64::from(v)).sum::<f64>() / h as f64;
        let var = xs
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / h as f64;
        let want = (f64::from(xs[5]) - mean) / (var + f64::from(eps)).sqrt() * f64::from(weight[5])
            + f64::from(bias[5]);
        assert!(
            (f64::from(alone[5]) - want).abs() < 1e-5,
            "{} vs {want}",
            alone[5]
        );
    }
}
