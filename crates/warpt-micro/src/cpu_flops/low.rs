//! Low-precision throughput kernels: bf16 and fp16 floating point, int8
//! integer dot products, each in the best instruction this CPU has.
//!
//! Like the fp64/fp32 kernels, each runs independent accumulator chains for
//! `iters` iterations with inputs passed in at run time, so every lane's
//! final value has a closed form and is checked exactly:
//!
//! - **bf16** (`vdpbf16ps`, AVX512_BF16): `acc += a0*b0 + a1*b1` per fp32
//!   lane with every bf16 input 1.0, so a lane holds `2 * iters` (exact in
//!   fp32 up to 2^24, i.e. [`super::MAX_ITERS`] iterations).
//! - **fp16** (`vfmadd…ph`, AVX512_FP16): `x = x * -1 + 1` from `x = 1`,
//!   which alternates 1, 0, 1, … exactly: a lane holds 1 after an even
//!   count, 0 after an odd one (fp16 cannot count far, so the check is the
//!   parity every lane must agree on).
//! - **int8** (`vpdpbusd`, AVX512_VNNI or AVX-VNNI; else AVX2's
//!   `vpmaddubsw` + `vpmaddwd` + `vpaddd`, the pre-VNNI sequence): four
//!   u8 x s8 products summed into each int32 lane, every input 1, so a lane
//!   holds `4 * iters`.
//! - **bf16_amx** and **int8_amx** (`tdpbf16ps`, `tdpbssd` on AMX tiles):
//!   see [`super::amx`].
//!
//! Counting follows FMA's convention: one multiply and one add are 2
//! operations, so a bf16 pair-dot into fp32 is 4 flops per fp32 lane and a
//! 4-way int8 dot is 8 operations per int32 lane. AVX2's three-instruction
//! int8 sequence is written in inline assembly: in intrinsics its products
//! do not depend on the accumulator, and the compiler hoists them out of
//! the loop (a fused `vpdpbusd` or `vdpbf16ps` cannot be split that way).

#[cfg(target_arch = "x86_64")]
use super::amx::AmxOp;

/// A precision below fp32.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LowPrecision {
    /// bfloat16 products accumulated in fp32.
    Bf16,
    /// IEEE half precision FMA.
    Fp16,
    /// u8 x s8 products accumulated in int32.
    Int8,
    /// bfloat16 tile products accumulated in fp32 (AMX).
    Bf16Amx,
    /// s8 x s8 tile products accumulated in int32 (AMX).
    Int8Amx,
}

impl LowPrecision {
    /// Every low precision, in report order.
    pub const ALL: [LowPrecision; 5] = [
        LowPrecision::Bf16,
        LowPrecision::Fp16,
        LowPrecision::Int8,
        LowPrecision::Bf16Amx,
        LowPrecision::Int8Amx,
    ];

    /// The `precision` tag.
    pub fn tag(self) -> &'static str {
        match self {
            LowPrecision::Bf16 => "bf16",
            LowPrecision::Fp16 => "fp16",
            LowPrecision::Int8 => "int8",
            LowPrecision::Bf16Amx => "bf16_amx",
            LowPrecision::Int8Amx => "int8_amx",
        }
    }

    /// The metric's unit: GOP/s for integers, GFLOP/s otherwise.
    pub fn unit(self) -> &'static str {
        match self {
            LowPrecision::Int8 | LowPrecision::Int8Amx => "GOP/s",
            _ => "GFLOP/s",
        }
    }

    /// The kernel that runs this precision here, or what the CPU lacks.
    pub fn kernel(self) -> Result<LowKernel, String> {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                LowPrecision::Bf16 => {
                    if std::arch::is_x86_feature_detected!("avx512bf16") {
                        return Ok(LowKernel::Avx512Bf16);
                    }
                    Err(
                        "not available: this CPU has no AVX512_BF16 (AMX-BF16, where a CPU has \
                         it, is precision bf16_amx)"
                            .into(),
                    )
                }
                LowPrecision::Fp16 => {
                    if std::arch::is_x86_feature_detected!("avx512fp16") {
                        return Ok(LowKernel::Avx512Fp16);
                    }
                    Err("not available: this CPU has no AVX512_FP16".into())
                }
                LowPrecision::Int8 => {
                    if std::arch::is_x86_feature_detected!("avx512vnni") {
                        Ok(LowKernel::Avx512Vnni)
                    } else if std::arch::is_x86_feature_detected!("avxvnni") {
                        Ok(LowKernel::AvxVnni)
                    } else if std::arch::is_x86_feature_detected!("avx2") {
                        Ok(LowKernel::Avx2Int8)
                    } else {
                        Err("not available: this CPU has no AVX512_VNNI, AVX-VNNI or AVX2".into())
                    }
                }
                LowPrecision::Bf16Amx => AmxOp::Bf16
                    .available()
                    .map(|()| LowKernel::Amx(AmxOp::Bf16)),
                LowPrecision::Int8Amx => AmxOp::Int8
                    .available()
                    .map(|()| LowKernel::Amx(AmxOp::Int8)),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Err(format!(
                "not available: warpt has no {} kernel for {} yet (x86-64 only: AVX512_BF16, \
                 AVX512_FP16, AVX512_VNNI / AVX-VNNI / AVX2, AMX)",
                self.tag(),
                std::env::consts::ARCH
            ))
        }
    }
}

/// A low-precision kernel, chosen at run time by [`LowPrecision::kernel`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LowKernel {
    /// `vdpbf16ps` on 512-bit vectors.
    #[cfg(target_arch = "x86_64")]
    Avx512Bf16,
    /// `vfmadd231ph` on 512-bit vectors.
    #[cfg(target_arch = "x86_64")]
    Avx512Fp16,
    /// `vpdpbusd` on 512-bit vectors.
    #[cfg(target_arch = "x86_64")]
    Avx512Vnni,
    /// VEX `vpdpbusd` on 256-bit vectors.
    #[cfg(target_arch = "x86_64")]
    AvxVnni,
    /// `vpmaddubsw` + `vpmaddwd` + `vpaddd` on 256-bit vectors.
    #[cfg(target_arch = "x86_64")]
    Avx2Int8,
    /// Tile products on AMX.
    #[cfg(target_arch = "x86_64")]
    Amx(AmxOp),
}

/// Accumulators of the 512-bit kernels (32 registers: plenty for two pipes
/// of latency up to 8).
const ACC_512: u64 = 16;
/// Accumulators of the VEX VNNI kernel (16 registers).
const ACC_VNNI256: u64 = 12;
/// Chains of the AVX2 int8 kernel: an accumulator and a temporary each,
/// beside the two inputs and the vector of ones (15 of 16 registers).
const ACC_AVX2_INT8: u64 = 6;

impl LowKernel {
    /// The ISA and instruction, as reported in details.
    pub fn name(self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Bf16 => "avx512_bf16 vdpbf16ps zmm",
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Fp16 => "avx512_fp16 vfmadd231ph zmm",
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Vnni => "avx512_vnni vpdpbusd zmm",
            #[cfg(target_arch = "x86_64")]
            LowKernel::AvxVnni => "avx_vnni vpdpbusd ymm",
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx2Int8 => "avx2 vpmaddubsw+vpmaddwd+vpaddd ymm (no VNNI)",
            #[cfg(target_arch = "x86_64")]
            LowKernel::Amx(op) => op.name(),
        }
    }

    /// How operations are counted, for details.
    pub fn counting(self) -> &'static str {
        match self {
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Bf16 => {
                "2 flops per bf16 multiply-add: each fp32 lane of vdpbf16ps adds two bf16 products = 4 flops"
            }
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Fp16 => "2 flops per fp16 FMA lane",
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Vnni | LowKernel::AvxVnni | LowKernel::Avx2Int8 => {
                "2 operations per u8 x s8 multiply-add: each int32 lane sums four products = 8 operations"
            }
            #[cfg(target_arch = "x86_64")]
            LowKernel::Amx(AmxOp::Bf16) => {
                "2 flops per bf16 multiply-add: each tdpbf16ps is 16 x 16 x 32 multiply-adds = 16384 flops"
            }
            #[cfg(target_arch = "x86_64")]
            LowKernel::Amx(AmxOp::Int8) => {
                "2 operations per s8 x s8 multiply-add: each tdpbssd is 16 x 16 x 64 multiply-adds = 32768 operations"
            }
        }
    }

    /// Operations one iteration performs over all chains.
    pub fn ops_per_iter(self) -> u64 {
        match self {
            // 16 fp32 lanes x 2 products x 2.
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Bf16 => ACC_512 * 16 * 4,
            // 32 fp16 lanes x 2.
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Fp16 => ACC_512 * 32 * 2,
            // 16 int32 lanes x 4 products x 2.
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Vnni => ACC_512 * 16 * 8,
            // 8 int32 lanes x 4 products x 2.
            #[cfg(target_arch = "x86_64")]
            LowKernel::AvxVnni => ACC_VNNI256 * 8 * 8,
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx2Int8 => ACC_AVX2_INT8 * 8 * 8,
            #[cfg(target_arch = "x86_64")]
            LowKernel::Amx(op) => op.ops_per_iter(),
        }
    }

    /// The value every lane must hold after `iters` iterations.
    pub fn expected(self, iters: u64) -> f64 {
        match self {
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Bf16 => 2.0 * iters as f64,
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Fp16 => {
                if iters.is_multiple_of(2) {
                    1.0
                } else {
                    0.0
                }
            }
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Vnni | LowKernel::AvxVnni | LowKernel::Avx2Int8 => 4.0 * iters as f64,
            #[cfg(target_arch = "x86_64")]
            LowKernel::Amx(op) => op.expected(iters),
        }
    }

    /// The most iterations per call whose closed form stays exact.
    pub fn max_iters(self) -> u64 {
        match self {
            #[cfg(target_arch = "x86_64")]
            LowKernel::Amx(op) => op.max_iters(),
            #[allow(unreachable_patterns)]
            _ => super::MAX_ITERS,
        }
    }

    /// Runs `iters` iterations with every input equal to `one` (1 unless a
    /// test wants a wrong answer) and returns the (min, max) over all lanes.
    pub fn run(self, iters: u64, one: i8) -> (f64, f64) {
        match self {
            // SAFETY: `LowPrecision::kernel` chose each variant only after
            // checking the CPU has the features its kernel is compiled for.
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Bf16 => unsafe { x86::bf16_avx512(iters, f32::from(one)) },
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Fp16 => unsafe { x86::fp16_avx512(iters, one) },
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx512Vnni => unsafe { x86::int8_avx512_vnni(iters, one) },
            #[cfg(target_arch = "x86_64")]
            LowKernel::AvxVnni => unsafe { x86::int8_avx_vnni(iters, one) },
            #[cfg(target_arch = "x86_64")]
            LowKernel::Avx2Int8 => unsafe { x86::int8_avx2(iters, one) },
            // SAFETY: chosen only after `AmxOp::available` was `Ok`.
            #[cfg(target_arch = "x86_64")]
            LowKernel::Amx(op) => unsafe { op.run(iters, one) },
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::asm;
    use std::arch::x86_64::*;
    use std::hint::black_box;

    /// The (min, max) of int32 lanes over a set of vectors of `N` lanes.
    fn range_i32<const N: usize>(lanes: impl Iterator<Item = [i32; N]>) -> (f64, f64) {
        lanes
            .flatten()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(f64::from(v)), hi.max(f64::from(v)))
            })
    }

    /// # Safety
    /// The CPU must support AVX512_BF16.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub unsafe fn bf16_avx512(iters: u64, one: f32) -> (f64, f64) {
        let v = _mm512_set1_ps(black_box(one));
        let a = _mm512_cvtne2ps_pbh(v, v);
        let b = _mm512_cvtne2ps_pbh(v, v);
        let mut acc = [_mm512_setzero_ps(); super::ACC_512 as usize];
        for _ in 0..iters {
            for x in acc.iter_mut() {
                *x = _mm512_dpbf16_ps(*x, a, b);
            }
        }
        let mut buf = [0f32; 16];
        let mut range = (f64::INFINITY, f64::NEG_INFINITY);
        for x in acc {
            // SAFETY: 16 floats into a 16-float buffer.
            unsafe { _mm512_storeu_ps(buf.as_mut_ptr(), x) };
            for v in buf {
                range = (range.0.min(f64::from(v)), range.1.max(f64::from(v)));
            }
        }
        range
    }

    /// # Safety
    /// The CPU must support AVX512_FP16.
    #[target_feature(enable = "avx512f,avx512bw,avx512fp16")]
    pub unsafe fn fp16_avx512(iters: u64, one: i8) -> (f64, f64) {
        // fp16 bit patterns: 1.0 = 0x3C00, -1.0 = 0xBC00 (a wrong `one`
        // gives 0, and the lanes stop alternating).
        let pos = if black_box(one) == 1 { 0x3C00u16 } else { 0 };
        let x0 = _mm512_castsi512_ph(_mm512_set1_epi16(pos as i16));
        let m = _mm512_castsi512_ph(_mm512_set1_epi16(black_box(0xBC00u16) as i16));
        let a = _mm512_castsi512_ph(_mm512_set1_epi16(black_box(0x3C00u16) as i16));
        let mut acc = [x0; super::ACC_512 as usize];
        for _ in 0..iters {
            for x in acc.iter_mut() {
                *x = _mm512_fmadd_ph(*x, m, a);
            }
        }
        let mut buf = [0u16; 32];
        let mut range = (f64::INFINITY, f64::NEG_INFINITY);
        for x in acc {
            // SAFETY: 64 bytes into a 64-byte buffer.
            unsafe { _mm512_storeu_si512(buf.as_mut_ptr().cast(), _mm512_castph_si512(x)) };
            for bits in buf {
                let v = match bits {
                    0x3C00 => 1.0,
                    0x0000 | 0x8000 => 0.0,
                    other => f64::from(other) + 1e6, // anything else is wrong
                };
                range = (range.0.min(v), range.1.max(v));
            }
        }
        range
    }

    /// # Safety
    /// The CPU must support AVX512_VNNI.
    #[target_feature(enable = "avx512f,avx512vnni")]
    pub unsafe fn int8_avx512_vnni(iters: u64, one: i8) -> (f64, f64) {
        let a = _mm512_set1_epi8(black_box(one));
        let b = _mm512_set1_epi8(black_box(1));
        let mut acc = [_mm512_setzero_si512(); super::ACC_512 as usize];
        for _ in 0..iters {
            for x in acc.iter_mut() {
                *x = _mm512_dpbusd_epi32(*x, a, b);
            }
        }
        range_i32(acc.into_iter().map(|x| {
            let mut buf = [0i32; 16];
            // SAFETY: 64 bytes into a 64-byte buffer.
            unsafe { _mm512_storeu_si512(buf.as_mut_ptr().cast(), x) };
            buf
        }))
    }

    /// # Safety
    /// The CPU must support AVX-VNNI.
    #[target_feature(enable = "avx2,avxvnni")]
    pub unsafe fn int8_avx_vnni(iters: u64, one: i8) -> (f64, f64) {
        let a = _mm256_set1_epi8(black_box(one));
        let b = _mm256_set1_epi8(black_box(1));
        let mut acc = [_mm256_setzero_si256(); super::ACC_VNNI256 as usize];
        for _ in 0..iters {
            for x in acc.iter_mut() {
                *x = _mm256_dpbusd_avx_epi32(*x, a, b);
            }
        }
        range_i32(acc.into_iter().map(|x| {
            let mut buf = [0i32; 8];
            // SAFETY: 32 bytes into a 32-byte buffer.
            unsafe { _mm256_storeu_si256(buf.as_mut_ptr().cast(), x) };
            buf
        }))
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn int8_avx2(iters: u64, one: i8) -> (f64, f64) {
        let a = _mm256_set1_epi8(black_box(one));
        let b = _mm256_set1_epi8(black_box(1));
        let ones = _mm256_set1_epi16(black_box(1));
        let mut c = [_mm256_setzero_si256(); super::ACC_AVX2_INT8 as usize];
        for _ in 0..iters {
            // SAFETY: register-only AVX2 instructions (the caller checked
            // AVX2); not `pure`, so the compiler keeps one per iteration.
            unsafe {
                asm!(
                    "vpmaddubsw {t0}, {a}, {b}",
                    "vpmaddubsw {t1}, {a}, {b}",
                    "vpmaddubsw {t2}, {a}, {b}",
                    "vpmaddubsw {t3}, {a}, {b}",
                    "vpmaddubsw {t4}, {a}, {b}",
                    "vpmaddubsw {t5}, {a}, {b}",
                    "vpmaddwd {t0}, {t0}, {ones}",
                    "vpmaddwd {t1}, {t1}, {ones}",
                    "vpmaddwd {t2}, {t2}, {ones}",
                    "vpmaddwd {t3}, {t3}, {ones}",
                    "vpmaddwd {t4}, {t4}, {ones}",
                    "vpmaddwd {t5}, {t5}, {ones}",
                    "vpaddd {c0}, {c0}, {t0}",
                    "vpaddd {c1}, {c1}, {t1}",
                    "vpaddd {c2}, {c2}, {t2}",
                    "vpaddd {c3}, {c3}, {t3}",
                    "vpaddd {c4}, {c4}, {t4}",
                    "vpaddd {c5}, {c5}, {t5}",
                    a = in(ymm_reg) a,
                    b = in(ymm_reg) b,
                    ones = in(ymm_reg) ones,
                    c0 = inout(ymm_reg) c[0],
                    c1 = inout(ymm_reg) c[1],
                    c2 = inout(ymm_reg) c[2],
                    c3 = inout(ymm_reg) c[3],
                    c4 = inout(ymm_reg) c[4],
                    c5 = inout(ymm_reg) c[5],
                    t0 = out(ymm_reg) _,
                    t1 = out(ymm_reg) _,
                    t2 = out(ymm_reg) _,
                    t3 = out(ymm_reg) _,
                    t4 = out(ymm_reg) _,
                    t5 = out(ymm_reg) _,
                    options(nomem, nostack),
                );
            }
        }
        range_i32(c.into_iter().map(|x| {
            let mut buf = [0i32; 8];
            // SAFETY: 32 bytes into a 32-byte buffer.
            unsafe { _mm256_storeu_si256(buf.as_mut_ptr().cast(), x) };
            buf
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every low-precision kernel this CPU can run, the ones it cannot
    /// named with their missing ISA.
    fn kernels() -> Vec<LowKernel> {
        let mut found = Vec::new();
        for p in LowPrecision::ALL {
            match p.kernel() {
                Ok(k) => found.push(k),
                Err(why) => assert!(why.starts_with("not available: "), "{why}"),
            }
        }
        #[cfg(target_arch = "x86_64")]
        {
            // Every int8 kernel the CPU has, not only the best.
            if std::arch::is_x86_feature_detected!("avxvnni") {
                found.push(LowKernel::AvxVnni);
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                found.push(LowKernel::Avx2Int8);
            }
        }
        found
    }

    #[test]
    fn every_lane_reaches_the_closed_form_value() {
        for k in kernels() {
            for iters in [0u64, 1, 2, 7, 1000, 123_457, super::super::MAX_ITERS] {
                let want = k.expected(iters);
                assert_eq!(k.run(iters, 1), (want, want), "{} after {iters}", k.name());
            }
        }
    }

    #[test]
    fn a_wrong_input_gives_a_wrong_answer_that_the_check_sees() {
        for k in kernels() {
            let iters = 1001;
            let (lo, hi) = k.run(iters, 2);
            let want = k.expected(iters);
            assert!(lo != want || hi != want, "{}: {lo} {hi}", k.name());
        }
    }

    #[test]
    fn operations_are_counted_as_two_per_multiply_add() {
        #[cfg(target_arch = "x86_64")]
        {
            // 6 chains x 32 u8 x s8 products x 2.
            assert_eq!(LowKernel::Avx2Int8.ops_per_iter(), 6 * 32 * 2);
            // 16 chains x 32 bf16 products x 2.
            assert_eq!(LowKernel::Avx512Bf16.ops_per_iter(), 16 * 32 * 2);
            // 16 chains x 64 u8 x s8 products x 2.
            assert_eq!(LowKernel::Avx512Vnni.ops_per_iter(), 16 * 64 * 2);
        }
        assert_eq!(LowPrecision::Int8.unit(), "GOP/s");
        assert_eq!(LowPrecision::Bf16.unit(), "GFLOP/s");
    }
}
