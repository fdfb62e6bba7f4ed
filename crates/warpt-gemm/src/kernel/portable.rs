//! The portable microkernel: an 8 x 4 tile in plain Rust, which the
//! compiler vectorizes for whatever the build targets. The fallback where
//! no hand-tiled kernel runs, and the reference the others are tested
//! against.

use super::{Bf16, Element, Half, Kernel, MicroKernel, PanelOrder, Scalar, Store};
use crate::isa::Isa;

const MR: usize = 8;
const NR: usize = 4;

/// A portable kernel: the 8 x 4 tile, `kc` deep blocks.
const fn portable<T: Element>(name: &'static str, kc: usize, run: MicroKernel<T>) -> Kernel<T> {
    Kernel {
        name,
        isa: Isa::Portable,
        mr: MR,
        nr: NR,
        kc,
        mc: 128,
        nc: 1024,
        run,
        direct: None,
        biased: None,
        finishing: None,
        order: PanelOrder::Steps,
        pair: None,
    }
}

/// The fp64 portable kernel.
pub const F64: Kernel<f64> = portable("portable f64 8x4", 256, tile::<f64>);

/// The fp32 portable kernel.
pub const F32: Kernel<f32> = portable("portable f32 8x4", 256, tile::<f32>);

/// The fp16 portable kernel (fp16 accumulators, each operation rounded
/// through fp32 as `half` does: one rounding, as a fused multiply-add's
/// on exact small products).
pub const F16: Kernel<half::f16> = portable("portable f16 8x4", 256, tile::<half::f16>);

/// The bf16 portable kernel: pairs of depths, products added in fp32.
pub const BF16: Kernel<Bf16> = portable("portable bf16 8x4", 256, tile_bf16);

/// # Safety
/// As [`super::MicroKernel`]: `a` holds `k * 8`, `b` `k * cols`.
#[allow(clippy::too_many_arguments)]
unsafe fn tile<T: Element<Acc = T> + Scalar>(
    k: usize,
    a: *const T,
    b: *const T,
    _rows: usize,
    cols: usize,
    out: *mut T,
    ldo: usize,
    store: Store,
) {
    // SAFETY: the caller gives the lengths above.
    let (a, b) = unsafe {
        (
            std::slice::from_raw_parts(a, k * MR),
            std::slice::from_raw_parts(b, k * cols),
        )
    };
    let mut acc = [[T::ZERO; MR]; NR];
    for (ap, bp) in a.chunks_exact(MR).zip(b.chunks_exact(cols)) {
        for (col, &bj) in acc.iter_mut().zip(bp) {
            for (c, &ai) in col.iter_mut().zip(ap) {
                *c = *c + ai * bj;
            }
        }
    }
    // SAFETY: as the caller promises for `cols`, `out` and `ldo`.
    unsafe { put(&acc, cols, out, ldo, store) };
}

/// # Safety
/// As [`super::MicroKernel`]: `a` holds `groups * 8 * 2`, `b` `groups *
/// cols * 2`.
#[allow(clippy::too_many_arguments)]
unsafe fn tile_bf16(
    groups: usize,
    a: *const Bf16,
    b: *const Bf16,
    _rows: usize,
    cols: usize,
    out: *mut f32,
    ldo: usize,
    store: Store,
) {
    // SAFETY: the caller gives the lengths above.
    let (a, b) = unsafe {
        (
            std::slice::from_raw_parts(a, groups * MR * 2),
            std::slice::from_raw_parts(b, groups * cols * 2),
        )
    };
    let mut acc = [[0f32; MR]; NR];
    for (ap, bp) in a.chunks_exact(MR * 2).zip(b.chunks_exact(cols * 2)) {
        for (col, bj) in acc.iter_mut().zip(bp.chunks_exact(2)) {
            for (c, ai) in col.iter_mut().zip(ap.chunks_exact(2)) {
                *c += ai[0].to_f32() * bj[0].to_f32() + ai[1].to_f32() * bj[1].to_f32();
            }
        }
    }
    // SAFETY: as the caller promises for `cols`, `out` and `ldo`.
    unsafe { put(&acc, cols, out, ldo, store) };
}

/// The fp16-in, fp32-sums portable kernel ([`Half`]).
pub const HALF: Kernel<Half> = portable("portable f16>f32 8x4", 256, tile_half);

/// # Safety
/// As [`super::MicroKernel`]: `a` holds `k * 8`, `b` `k * cols`.
#[allow(clippy::too_many_arguments)]
unsafe fn tile_half(
    k: usize,
    a: *const Half,
    b: *const Half,
    _rows: usize,
    cols: usize,
    out: *mut f32,
    ldo: usize,
    store: Store,
) {
    // SAFETY: the caller gives the lengths above.
    let (a, b) = unsafe {
        (
            std::slice::from_raw_parts(a, k * MR),
            std::slice::from_raw_parts(b, k * cols),
        )
    };
    let mut acc = [[0f32; MR]; NR];
    for (ap, bp) in a.chunks_exact(MR).zip(b.chunks_exact(cols)) {
        for (col, bj) in acc.iter_mut().zip(bp) {
            let bj = bj.to_f32();
            for (c, ai) in col.iter_mut().zip(ap) {
                *c += ai.to_f32() * bj;
            }
        }
    }
    // SAFETY: as the caller promises for `cols`, `out` and `ldo`.
    unsafe { put(&acc, cols, out, ldo, store) };
}

/// The int8 portable kernel: depths in fours, A stored as unsigned (its
/// bits plus 128, [`Element::pack_a`]), products added in i32.
pub const I8: Kernel<i8> = portable("portable i8 8x4", 512, tile_i8);

/// # Safety
/// As [`super::MicroKernel`]: `a` holds `groups * 8 * 4`, `b` `groups *
/// cols * 4`.
#[allow(clippy::too_many_arguments)]
unsafe fn tile_i8(
    groups: usize,
    a: *const i8,
    b: *const i8,
    _rows: usize,
    cols: usize,
    out: *mut i32,
    ldo: usize,
    store: Store,
) {
    // SAFETY: the caller gives the lengths above.
    let (a, b) = unsafe {
        (
            std::slice::from_raw_parts(a, groups * MR * 4),
            std::slice::from_raw_parts(b, groups * cols * 4),
        )
    };
    let mut acc = [[0i32; MR]; NR];
    for (ap, bp) in a.chunks_exact(MR * 4).zip(b.chunks_exact(cols * 4)) {
        for (col, bj) in acc.iter_mut().zip(bp.chunks_exact(4)) {
            for (c, ai) in col.iter_mut().zip(ap.chunks_exact(4)) {
                for (&x, &y) in ai.iter().zip(bj) {
                    *c += i32::from(x as u8) * i32::from(y);
                }
            }
        }
    }
    // SAFETY: as the caller promises for `cols`, `out` and `ldo`.
    unsafe { put(&acc, cols, out, ldo, store) };
}

/// Stores the first `cols` columns of `acc` at `out`, `ldo` apart, as
/// `store` says.
///
/// # Safety
/// As [`super::MicroKernel`] for `cols`, `out`, `ldo` and `store`.
unsafe fn put<A: Scalar>(acc: &[[A; MR]; NR], cols: usize, out: *mut A, ldo: usize, store: Store) {
    for (j, col) in acc.iter().enumerate().take(cols) {
        // SAFETY: column j < cols holds MR elements from j * ldo, this
        // thread's alone (the caller's promise).
        let dst = unsafe { std::slice::from_raw_parts_mut(out.add(j * ldo), MR) };
        for (d, &v) in dst.iter_mut().zip(col) {
            *d = match store {
                Store::Set | Store::Stream => v,
                Store::Add => *d + v,
                Store::Sub => *d - v,
            };
        }
    }
}
