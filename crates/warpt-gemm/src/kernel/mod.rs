//! The microkernels: each multiplies an `MR x k` micro-panel of A by a
//! `k x NR` micro-panel of B (both packed, [`crate::pack`]) into an
//! `MR x NR` tile kept in registers, then stores it column-major. With
//! each comes the blocking that keeps its operands in cache: `KC` (the
//! depth: a micro-panel of B stays in L1), `MC` (rows of A packed at a
//! time: the block stays in L2) and `NC` (columns of B packed at a time:
//! the block stays in L3).
//!
//! - [`portable`]: plain Rust for any CPU;
//! - `x86`: AVX2+FMA and AVX-512 register tiles (x86-64 only).

pub mod portable;
#[cfg(target_arch = "x86_64")]
mod x86;

use std::ops::{Add, Mul};

use crate::isa::Isa;

/// The microkernel's signature: `k` steps over `a` (`k x MR`, packed)
/// and `b` (`k x NR`, packed) into `out` (`MR x NR`, column-major).
///
/// # Safety
/// `a` holds `k * MR` elements, `b` holds `k * NR`, `out` has room for
/// `MR * NR`, and the CPU runs the kernel's [`Isa`].
pub type MicroKernel<T> = unsafe fn(k: usize, a: *const T, b: *const T, out: *mut T);

/// A microkernel and its blocking.
#[derive(Debug, Clone, Copy)]
pub struct Kernel<T: 'static> {
    /// Its name in results (`details.gemm_kernel`), such as
    /// `avx512f f64 24x8`.
    pub name: &'static str,
    /// The instructions it needs.
    pub isa: Isa,
    /// Rows of the register tile.
    pub mr: usize,
    /// Columns of the register tile.
    pub nr: usize,
    /// Depth of one packed block.
    pub kc: usize,
    /// Rows of A packed at a time (a multiple of `mr`).
    pub mc: usize,
    /// Columns of B packed at a time (a multiple of `nr`).
    pub nc: usize,
    run: MicroKernel<T>,
}

impl<T: Element> Kernel<T> {
    /// Every kernel for `T` this CPU runs, best last.
    pub fn all() -> impl Iterator<Item = &'static Kernel<T>> {
        T::kernels().iter().filter(|k| k.isa.available())
    }

    /// The best kernel for `T` on this CPU.
    pub fn best() -> &'static Kernel<T> {
        Self::all().last().unwrap_or(&T::kernels()[0])
    }

    /// The kernel for `isa`, when there is one and this CPU runs it.
    pub fn for_isa(isa: Isa) -> Option<&'static Kernel<T>> {
        Self::all().find(|k| k.isa == isa)
    }

    /// Runs it on packed panels: `a` is `k x mr`, `b` is `k x nr`, `out`
    /// `mr x nr` column-major.
    pub(crate) fn run(&self, k: usize, a: &[T], b: &[T], out: &mut [T]) {
        assert!(a.len() >= k * self.mr && b.len() >= k * self.nr && out.len() >= self.mr * self.nr);
        // SAFETY: the lengths were checked above, and `Kernel::all` (the
        // only way to a kernel outside this module) hands out only kernels
        // whose ISA this CPU runs.
        unsafe { (self.run)(k, a.as_ptr(), b.as_ptr(), out.as_mut_ptr()) }
    }
}

/// An element type the engine multiplies.
pub trait Element:
    Copy + Send + Sync + PartialEq + Default + Add<Output = Self> + Mul<Output = Self> + 'static
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// Its name in results (`f64`, `f32`).
    const NAME: &'static str;
    /// Every kernel for it, the portable one first, best last.
    fn kernels() -> &'static [Kernel<Self>];
}

impl Element for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const NAME: &'static str = "f64";
    fn kernels() -> &'static [Kernel<Self>] {
        &F64
    }
}

impl Element for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const NAME: &'static str = "f32";
    fn kernels() -> &'static [Kernel<Self>] {
        &F32
    }
}

#[cfg(target_arch = "x86_64")]
static F64: [Kernel<f64>; 3] = [
    portable::F64,
    Kernel {
        name: "avx2+fma f64 8x6",
        isa: Isa::Avx2,
        mr: 8,
        nr: 6,
        kc: 256,
        mc: 144,
        nc: 2040,
        run: x86::f64_avx2,
    },
    Kernel {
        name: "avx512f f64 32x6",
        isa: Isa::Avx512,
        mr: 32,
        nr: 6,
        kc: 384,
        mc: 256,
        nc: 4080,
        run: x86::f64_avx512,
    },
];

#[cfg(target_arch = "x86_64")]
static F32: [Kernel<f32>; 3] = [
    portable::F32,
    Kernel {
        name: "avx2+fma f32 16x6",
        isa: Isa::Avx2,
        mr: 16,
        nr: 6,
        kc: 384,
        mc: 144,
        nc: 3072,
        run: x86::f32_avx2,
    },
    Kernel {
        name: "avx512f f32 48x8",
        isa: Isa::Avx512,
        mr: 48,
        nr: 8,
        kc: 384,
        mc: 144,
        nc: 3072,
        run: x86::f32_avx512,
    },
];

#[cfg(not(target_arch = "x86_64"))]
static F64: [Kernel<f64>; 1] = [portable::F64];

#[cfg(not(target_arch = "x86_64"))]
static F32: [Kernel<f32>; 1] = [portable::F32];
