//! The register tiles' variants that apply a tile's epilogue (a bias per
//! row, a matrix added, a ReLU) in their registers as they store it, at
//! the product's last slice of the depth: the tile is written once, where
//! the epilogue as a pass of its own stored it, read it back and wrote it
//! again (ResNet-50's shallow convolutions: 64 input channels into 256
//! with the shortcut, one thread, 52 -> 62 GFLOP/s).

use super::{Element, Kernel, Store};
use crate::epilogue::TileEpilogue;
use crate::tile::TileMut;

/// A [`MicroKernel`] that applies the tile's epilogue (a bias per row, a
/// matrix added, a ReLU) in its registers as it stores a whole tile of C
/// (`MR` rows, `cols` columns, `ldo` apart) as `store` says: the product's
/// last slice of the depth, where the epilogue is due.
///
/// # Safety
/// As [`MicroKernel`] with `rows = MR`; `fin`'s bias holds `MR` values and
/// its added matrix `MR` from `j * ld` for each column `j < cols`.
pub(crate) type FinishingKernel<T> = unsafe fn(
    groups: usize,
    a: *const T,
    b: *const T,
    cols: usize,
    out: *mut <T as Element>::Acc,
    ldo: usize,
    store: Store,
    fin: &TileEpilogue<'_, <T as Element>::Acc>,
);

/// A [`DirectKernel`] that applies the tile's epilogue as
/// [`FinishingKernel`] does.
///
/// # Safety
/// As [`DirectKernel`] and [`FinishingKernel`].
pub(crate) type FinishingDirectKernel<T> = unsafe fn(
    k: usize,
    a: *const T,
    b: *const T,
    ldb: usize,
    cols: usize,
    out: *mut <T as Element>::Acc,
    ldo: usize,
    store: Store,
    fin: &TileEpilogue<'_, <T as Element>::Acc>,
);

/// A tile's kernels that apply its epilogue as they store it.
#[derive(Debug)]
pub(crate) struct Finishing<T: Element> {
    /// On packed panels of B.
    pub(crate) packed: FinishingKernel<T>,
    /// Reading B in place.
    pub(crate) direct: FinishingDirectKernel<T>,
}

impl<T: Element> Clone for Finishing<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Element> Copy for Finishing<T> {}

impl<T: Element> Kernel<T> {
    /// Whether it can apply a tile's epilogue as it stores the tile
    /// ([`Kernel::run_finishing`]), reading B in place when `direct`.
    pub(crate) fn has_finishing(&self, direct: bool) -> bool {
        self.finishing.is_some() && (!direct || self.direct.is_some())
    }

    /// [`Kernel::run`] into a whole tile of C (`mr` rows) with the tile's
    /// epilogue `fin` applied as it is stored.
    ///
    /// # Panics
    /// If the kernel has no such variant ([`Kernel::has_finishing`]), or
    /// the operands are shorter than the tile needs.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_finishing(
        &self,
        groups: usize,
        a: &[T],
        b: &[T],
        tile: TileMut<T::Acc>,
        store: Store,
        fin: &TileEpilogue<'_, T::Acc>,
    ) {
        let finishing = self.finishing.expect("a kernel with a finishing variant");
        let (g, cols) = (T::GROUP, tile.cols());
        assert!(
            a.len() >= groups * self.mr * g
                && b.len() >= groups * cols * g
                && (1..=self.nr).contains(&cols)
                && tile.rows() == self.mr
        );
        fin.check(self.mr, cols);
        // SAFETY: the operands' lengths, the tile's shape and the
        // epilogue's were checked above; the kernel's ISA runs here
        // (`Kernel::all` hands out no other).
        unsafe {
            (finishing.packed)(
                groups,
                a.as_ptr(),
                b.as_ptr(),
                cols,
                tile.ptr(),
                tile.ld(),
                store,
                fin,
            )
        }
    }

    /// [`Kernel::run_direct`] into a whole tile of C (`mr` rows) with the
    /// tile's epilogue `fin` applied as it is stored.
    ///
    /// # Panics
    /// As [`Kernel::run_finishing`], and where the kernel reads no B in
    /// place.
    pub(crate) fn run_direct_finishing(
        &self,
        k: usize,
        a: &[T],
        (b, ldb): (&[T], usize),
        tile: TileMut<T::Acc>,
        store: Store,
        fin: &TileEpilogue<'_, T::Acc>,
    ) {
        let finishing = self.finishing.expect("a kernel with a finishing variant");
        let cols = tile.cols();
        assert!(
            self.direct.is_some()
                && T::GROUP == 1
                && a.len() >= k * self.mr
                && (1..=self.nr).contains(&cols)
                && (k == 0 || b.len() >= (cols - 1) * ldb + k)
                && tile.rows() == self.mr
        );
        fin.check(self.mr, cols);
        // SAFETY: as in `run_finishing`, and column j < cols of B lies in
        // `b` from j * ldb for k elements (checked above).
        unsafe {
            (finishing.direct)(
                k,
                a.as_ptr(),
                b.as_ptr(),
                ldb,
                cols,
                tile.ptr(),
                tile.ld(),
                store,
                fin,
            )
        }
    }
}
