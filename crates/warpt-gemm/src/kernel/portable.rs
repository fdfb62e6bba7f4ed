//! The portable microkernel: an 8 x 4 tile in plain Rust, which the
//! compiler vectorizes for whatever the build targets. The fallback where
//! no hand-tiled kernel runs, and the reference the others are tested
//! against.

use super::{Element, Kernel};
use crate::isa::Isa;

const MR: usize = 8;
const NR: usize = 4;

/// The fp64 portable kernel.
pub const F64: Kernel<f64> = Kernel {
    name: "portable f64 8x4",
    isa: Isa::Portable,
    mr: MR,
    nr: NR,
    kc: 256,
    mc: 128,
    nc: 1024,
    run: tile::<f64>,
};

/// The fp32 portable kernel.
pub const F32: Kernel<f32> = Kernel {
    name: "portable f32 8x4",
    isa: Isa::Portable,
    mr: MR,
    nr: NR,
    kc: 256,
    mc: 128,
    nc: 1024,
    run: tile::<f32>,
};

/// # Safety
/// As [`super::MicroKernel`]: `a` holds `k * 8`, `b` `k * 4`, `out` room
/// for 32.
unsafe fn tile<T: Element>(k: usize, a: *const T, b: *const T, out: *mut T) {
    // SAFETY: the caller gives the lengths above.
    let (a, b, out) = unsafe {
        (
            std::slice::from_raw_parts(a, k * MR),
            std::slice::from_raw_parts(b, k * NR),
            std::slice::from_raw_parts_mut(out, MR * NR),
        )
    };
    let mut acc = [[T::ZERO; MR]; NR];
    for (ap, bp) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
        for (col, &bj) in acc.iter_mut().zip(bp) {
            for (c, &ai) in col.iter_mut().zip(ap) {
                *c = *c + ai * bj;
            }
        }
    }
    for (dst, col) in out.chunks_exact_mut(MR).zip(&acc) {
        dst.copy_from_slice(col);
    }
}
