//! A matrix packed once as the left operand A of many products: an LU
//! step's panel (each column chunk of the trailing update is a product
//! with it), a layer's weights (each batch of activations is one).
//!
//! [`gemm`](crate::gemm) packs A afresh on every call; a caller that
//! multiplies the same A again and again packs it once with
//! [`PackedA::new`] and calls [`gemm_packed`](crate::gemm_packed). The packed storage is what
//! the kernel reads: for each `KC`-deep slice of the depth, A's rows in
//! `MR`-tall micro-panels, so a product takes any run of whole panels of
//! any slice without copying.

use crate::blocking::balanced;
use crate::kernel::{Element, Kernel};
use crate::mat::MatRef;
use crate::pack::pack_a;
use crate::scratch::Aligned;

/// An `m x k` matrix packed for one kernel.
#[derive(Debug, Clone)]
pub struct PackedA<T: Element> {
    kernel: Kernel<T>,
    rows: usize,
    depth: usize,
    /// The depth of each slice but the last.
    kcb: usize,
    /// From a cache line's boundary, as the packing buffers.
    data: Aligned<T>,
}

impl<T: Element> PackedA<T> {
    /// `a` packed for the kernel of this CPU's best ISA level that pads
    /// its rows least ([`Kernel::for_rows`]).
    pub fn new(a: MatRef<'_, T>) -> Self {
        Self::with_kernel(Kernel::<T>::for_rows(a.rows()), a)
    }

    /// `a` packed for `kernel` (one of [`Kernel::all`]).
    pub fn with_kernel(kernel: &Kernel<T>, a: MatRef<'_, T>) -> Self {
        let kernel = kernel.fitted();
        let (m, k) = (a.rows(), a.cols());
        let kcb = balanced(k, kernel.kc, T::GROUP);
        let panels = held_panels(&kernel, m);
        let mut data = Aligned::zeroed(panels * kernel.mr * k.next_multiple_of(T::GROUP));
        for pc in (0..k).step_by(kcb) {
            let kb = kcb.min(k - pc);
            // The rows' own panels; a last one held for a pair stays zero.
            let len = m.div_ceil(kernel.mr) * kernel.mr * kb.next_multiple_of(T::GROUP);
            let start = pc * panels * kernel.mr;
            pack_a(&a, 0, m, pc, kb, kernel.mr, &mut data[start..start + len]);
        }
        PackedA {
            kernel,
            rows: m,
            depth: k,
            kcb,
            data,
        }
    }

    /// Rows (m).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns (k, the depth of its products).
    pub fn cols(&self) -> usize {
        self.depth
    }

    /// The kernel it was packed for (and its products run on).
    pub fn kernel(&self) -> &Kernel<T> {
        &self.kernel
    }

    /// The depth of the slices it was packed in: the products take the
    /// depth in these slices.
    pub(crate) fn slice_depth(&self) -> usize {
        self.kcb
    }

    /// The packed panels of rows `i0..i0 + m` (`i0` a multiple of
    /// `tile`) and the slice of the depth that starts at `p0`, in whole
    /// tiles of `tile` rows: `MR`, or `2·MR` for a kernel's pairs
    /// ([`Kernel::paired`]; the matrix holds its last pair whole).
    pub(crate) fn panels(&self, i0: usize, m: usize, p0: usize, tile: usize) -> &[T] {
        let mr = self.kernel.mr;
        debug_assert!(tile.is_multiple_of(mr) && i0.is_multiple_of(tile));
        debug_assert!(p0.is_multiple_of(self.kcb));
        let kp = self.kcb.min(self.depth - p0).next_multiple_of(T::GROUP);
        let start = p0 * held_panels(&self.kernel, self.rows) * mr + i0 / mr * kp * mr;
        &self.data[start..start + m.div_ceil(tile) * tile * kp]
    }
}

/// The panels a packed A of `rows` rows holds for `kernel` in each slice
/// of the depth: its rows' panels, one more where that makes their count
/// even for a kernel that reads them in pairs ([`Kernel::paired`]).
fn held_panels<T: Element>(kernel: &Kernel<T>, rows: usize) -> usize {
    rows.div_ceil(kernel.band_rows()) * kernel.band_rows() / kernel.mr
}
