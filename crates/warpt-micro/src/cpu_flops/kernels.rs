//! FMA throughput kernels, one per instruction set, chosen at run time.
//!
//! Every kernel runs `ACC` independent dependency chains (enough to cover
//! FMA latency times the number of FMA pipes on current cores) of
//! `x = x * mul + add` for `iters` iterations, starting at `x = 1`. With
//! `mul = 1` and `add = 0.5` passed in at run time (the compiler cannot fold
//! them), every intermediate is exactly representable as long as
//! `1 + iters / 2` stays below 2^23 (fp32, halves need a mantissa bit) or 2^52 (fp64), so the result of
//! every lane must equal `1 + iters * 0.5` exactly: the validation.
//!
//! Each kernel returns the (min, max) over all lanes of all accumulators.

pub use warpt_system::isa::Isa;

/// The largest per-sample iteration count that keeps fp32 exact.
pub const MAX_ITERS: u64 = 1 << 23;

/// The FMA kernels of each instruction set.
pub trait IsaKernels {
    /// Runs the fp64 kernel.
    fn fma_f64(self, iters: u64, mul: f64, add: f64) -> (f64, f64);
    /// Runs the fp32 kernel.
    fn fma_f32(self, iters: u64, mul: f32, add: f32) -> (f32, f32);
}

impl IsaKernels for Isa {
    fn fma_f64(self, iters: u64, mul: f64, add: f64) -> (f64, f64) {
        match self {
            // SAFETY: `detect` chose this variant only after checking the CPU
            // supports the features the kernel is compiled for.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { x86::f64_avx512(iters, mul, add) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma => unsafe { x86::f64_avx2(iters, mul, add) },
            #[cfg(target_arch = "x86_64")]
            Isa::Sse2 => x86::f64_sse2(iters, mul, add),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => arm::f64_neon(iters, mul, add),
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            Isa::Scalar => scalar::run::<f64>(iters, mul, add),
        }
    }

    fn fma_f32(self, iters: u64, mul: f32, add: f32) -> (f32, f32) {
        match self {
            // SAFETY: as in `fma_f64`.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { x86::f32_avx512(iters, mul, add) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma => unsafe { x86::f32_avx2(iters, mul, add) },
            #[cfg(target_arch = "x86_64")]
            Isa::Sse2 => x86::f32_sse2(iters, mul, add),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => arm::f32_neon(iters, mul, add),
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            Isa::Scalar => scalar::run::<f32>(iters, mul, add),
        }
    }
}

/// Expands to a kernel body: `$n` accumulators of vector type built by
/// `$splat`, stepped by `$step(acc, m, a)`, reduced through a store into an
/// array of `$lanes` scalars.
macro_rules! fma_kernel {
    ($iters:expr, $mul:expr, $add:expr, $n:literal, $elem:ty, $lanes:literal, $splat:path, $step:path, $store:path) => {{
        let m = $splat($mul);
        let a = $splat($add);
        let mut acc = [$splat(1.0); $n];
        for _ in 0..$iters {
            for x in acc.iter_mut() {
                *x = $step(*x, m, a);
            }
        }
        let mut lo = <$elem>::INFINITY;
        let mut hi = <$elem>::NEG_INFINITY;
        let mut buf = [0.0 as $elem; $lanes];
        for x in acc {
            $store(buf.as_mut_ptr(), x);
            for v in buf {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        (lo, hi)
    }};
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    #[inline(always)]
    unsafe fn fma512d(x: __m512d, m: __m512d, a: __m512d) -> __m512d {
        // SAFETY: only called from functions compiled with avx512f.
        unsafe { _mm512_fmadd_pd(x, m, a) }
    }
    #[inline(always)]
    unsafe fn fma512s(x: __m512, m: __m512, a: __m512) -> __m512 {
        // SAFETY: as above.
        unsafe { _mm512_fmadd_ps(x, m, a) }
    }
    #[inline(always)]
    unsafe fn fma256d(x: __m256d, m: __m256d, a: __m256d) -> __m256d {
        // SAFETY: only called from functions compiled with avx2 and fma.
        unsafe { _mm256_fmadd_pd(x, m, a) }
    }
    #[inline(always)]
    unsafe fn fma256s(x: __m256, m: __m256, a: __m256) -> __m256 {
        // SAFETY: as above.
        unsafe { _mm256_fmadd_ps(x, m, a) }
    }
    #[inline(always)]
    fn muladd128d(x: __m128d, m: __m128d, a: __m128d) -> __m128d {
        // SAFETY: SSE2 is part of the x86-64 baseline.
        unsafe { _mm_add_pd(_mm_mul_pd(x, m), a) }
    }
    #[inline(always)]
    fn muladd128s(x: __m128, m: __m128, a: __m128) -> __m128 {
        // SAFETY: as above.
        unsafe { _mm_add_ps(_mm_mul_ps(x, m), a) }
    }

    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn f64_avx512(iters: u64, mul: f64, add: f64) -> (f64, f64) {
        // SAFETY: stores write 8 doubles into an 8-double buffer; the
        // feature requirement is the caller's.
        unsafe {
            fma_kernel!(
                iters,
                mul,
                add,
                16,
                f64,
                8,
                _mm512_set1_pd,
                fma512d,
                _mm512_storeu_pd
            )
        }
    }

    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn f32_avx512(iters: u64, mul: f32, add: f32) -> (f32, f32) {
        // SAFETY: as above, 16 floats.
        unsafe {
            fma_kernel!(
                iters,
                mul,
                add,
                16,
                f32,
                16,
                _mm512_set1_ps,
                fma512s,
                _mm512_storeu_ps
            )
        }
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn f64_avx2(iters: u64, mul: f64, add: f64) -> (f64, f64) {
        // SAFETY: as above, 4 doubles.
        unsafe {
            fma_kernel!(
                iters,
                mul,
                add,
                12,
                f64,
                4,
                _mm256_set1_pd,
                fma256d,
                _mm256_storeu_pd
            )
        }
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn f32_avx2(iters: u64, mul: f32, add: f32) -> (f32, f32) {
        // SAFETY: as above, 8 floats.
        unsafe {
            fma_kernel!(
                iters,
                mul,
                add,
                12,
                f32,
                8,
                _mm256_set1_ps,
                fma256s,
                _mm256_storeu_ps
            )
        }
    }

    pub fn f64_sse2(iters: u64, mul: f64, add: f64) -> (f64, f64) {
        // SAFETY: SSE2 is part of the x86-64 baseline; 2 doubles per store.
        unsafe {
            fma_kernel!(
                iters,
                mul,
                add,
                12,
                f64,
                2,
                _mm_set1_pd,
                muladd128d,
                _mm_storeu_pd
            )
        }
    }

    pub fn f32_sse2(iters: u64, mul: f32, add: f32) -> (f32, f32) {
        // SAFETY: as above, 4 floats.
        unsafe {
            fma_kernel!(
                iters,
                mul,
                add,
                12,
                f32,
                4,
                _mm_set1_ps,
                muladd128s,
                _mm_storeu_ps
            )
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use std::arch::aarch64::*;

    #[inline(always)]
    fn fmad(x: float64x2_t, m: float64x2_t, a: float64x2_t) -> float64x2_t {
        // SAFETY: NEON is mandatory on AArch64.
        unsafe { vfmaq_f64(a, x, m) }
    }
    #[inline(always)]
    fn fmas(x: float32x4_t, m: float32x4_t, a: float32x4_t) -> float32x4_t {
        // SAFETY: as above.
        unsafe { vfmaq_f32(a, x, m) }
    }

    pub fn f64_neon(iters: u64, mul: f64, add: f64) -> (f64, f64) {
        // SAFETY: NEON is mandatory on AArch64; 2 doubles per store.
        unsafe { fma_kernel!(iters, mul, add, 16, f64, 2, vdupq_n_f64, fmad, vst1q_f64) }
    }

    pub fn f32_neon(iters: u64, mul: f32, add: f32) -> (f32, f32) {
        // SAFETY: as above, 4 floats.
        unsafe { fma_kernel!(iters, mul, add, 16, f32, 4, vdupq_n_f32, fmas, vst1q_f32) }
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod scalar {
    pub trait Float:
        Copy + std::ops::Mul<Output = Self> + std::ops::Add<Output = Self> + PartialOrd
    {
        const ONE: Self;
    }
    impl Float for f64 {
        const ONE: Self = 1.0;
    }
    impl Float for f32 {
        const ONE: Self = 1.0;
    }

    pub fn run<T: Float>(iters: u64, mul: T, add: T) -> (T, T) {
        let mut acc = [T::ONE; 8];
        for _ in 0..iters {
            for x in acc.iter_mut() {
                *x = *x * mul + add;
            }
        }
        let (mut lo, mut hi) = (acc[0], acc[0]);
        for x in acc {
            if x < lo {
                lo = x;
            }
            if x > hi {
                hi = x;
            }
        }
        (lo, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lane_reaches_the_closed_form_value() {
        let isa = Isa::detect();
        for iters in [0u64, 1, 7, 1000, 123_457] {
            let want = 1.0 + iters as f64 * 0.5;
            assert_eq!(
                isa.fma_f64(iters, 1.0, 0.5),
                (want, want),
                "{} fp64 {iters}",
                isa.name()
            );
            let want32 = want as f32;
            assert_eq!(
                isa.fma_f32(iters, 1.0, 0.5),
                (want32, want32),
                "{} fp32 {iters}",
                isa.name()
            );
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn every_supported_isa_agrees() {
        let mut isas = vec![Isa::Sse2];
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            isas.push(Isa::Avx2Fma);
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            isas.push(Isa::Avx512);
        }
        for isa in isas {
            // A multiplier other than 1 exercises the multiply: x -> 0.5x + 1
            // converges to 2 from 1, reaching it exactly in fp64 after 53 steps.
            assert_eq!(isa.fma_f64(200, 0.5, 1.0), (2.0, 2.0), "{}", isa.name());
            assert_eq!(
                isa.fma_f32(MAX_ITERS, 1.0, 0.5),
                (4_194_305.0, 4_194_305.0),
                "{}",
                isa.name()
            );
        }
    }
}
