//! What a product does to each tile of C once the tile is complete: a
//! value per row added (a layer's bias, a folded batch norm's shift), a
//! matrix of C's shape added (a residual block's shortcut) and a ReLU,
//! applied by the thread that stored the tile, just after its last slice
//! of the depth, while the tile is still in L1. As passes of their own
//! they read and wrote all of C again: a bias written into C before the
//! product, a shortcut copied in, a ReLU after it (ResNet-50's
//! convolutions, whose outputs outgrow the L2).

use crate::driver::Error;
use crate::kernel::Scalar;
use crate::mat::MatRef;

/// `C = relu(C + bias[i] + add[i, j])` (each part where given), after the
/// product `C = alpha·A·B + beta·C`.
#[derive(Debug, Clone, Copy)]
pub struct Epilogue<'a, A> {
    /// One value per row of C, added to each element of its row.
    pub row_bias: Option<&'a [A]>,
    /// A matrix of C's shape, added element by element.
    pub add: Option<MatRef<'a, A>>,
    /// Negative results (and NaNs) set to zero, after the additions.
    pub relu: bool,
    /// C written with streaming (non-temporal) stores, its lines neither
    /// read before they are written nor kept in cache, where C's layout
    /// allows (rows contiguous, its start and columns 64-byte aligned, the
    /// product one slice of the depth) and the kernel has them: for a C
    /// larger than the caches that nothing reads soon (a convolution's
    /// output at 56² × 256 channels, 25.7 MB a batch of 8). Elsewhere C
    /// is written as usual; the values are the same either way.
    pub stream: bool,
}

impl<A> Epilogue<'_, A> {
    /// Nothing: C as the product leaves it.
    pub const NONE: Self = Epilogue {
        row_bias: None,
        add: None,
        relu: false,
        stream: false,
    };

    /// Whether it changes nothing in C's values (streaming stores or not).
    pub fn is_none(&self) -> bool {
        self.row_bias.is_none() && self.add.is_none() && !self.relu
    }

    /// Its operands against a C of `rows x cols`: a bias of one value per
    /// row, a matrix of C's shape.
    pub(crate) fn check(&self, rows: usize, cols: usize) -> Result<(), Error> {
        if let Some(bias) = self.row_bias
            && bias.len() != rows
        {
            return Err(Error::Epilogue {
                what: format!("a row bias of {} values for {rows} rows", bias.len()),
            });
        }
        if let Some(add) = &self.add
            && (add.rows(), add.cols()) != (rows, cols)
        {
            return Err(Error::Epilogue {
                what: format!(
                    "an added matrix of {} x {} for C of {rows} x {cols}",
                    add.rows(),
                    add.cols()
                ),
            });
        }
        Ok(())
    }
}

/// The epilogue of one tile of C, as a finishing kernel applies it in its
/// registers while it stores the tile
/// ([`Kernel::run_finishing`](crate::kernel::Kernel::run_finishing)):
/// no second pass over the tile.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TileEpilogue<'a, A> {
    /// The row bias's values of the tile's rows.
    pub(crate) bias: Option<&'a [A]>,
    /// The added matrix from the tile's first element, and its columns'
    /// distance: column `j` of the tile at `j * ld`, its rows contiguous.
    pub(crate) add: Option<(&'a [A], usize)>,
    /// The ReLU after the additions.
    pub(crate) relu: bool,
}

impl<A> TileEpilogue<'_, A> {
    /// Panics unless it holds what a tile of `rows x cols` reads: a bias
    /// of `rows` values, `rows` added values in each of `cols` columns.
    pub(crate) fn check(&self, rows: usize, cols: usize) {
        assert!(self.bias.is_none_or(|b| b.len() >= rows));
        assert!(
            self.add
                .is_none_or(|(m, ld)| cols == 0 || m.len() >= (cols - 1) * ld + rows)
        );
    }
}

impl<A: Scalar> Epilogue<'_, A> {
    /// Its part on C's tile `rows x cols`, for a kernel to apply as it
    /// stores the tile; None when the added matrix's columns are not
    /// contiguous (the kernels read each as vectors).
    pub(crate) fn for_tile(
        &self,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
    ) -> Option<TileEpilogue<'_, A>> {
        let add = match self.add.map(|m| m.raw()) {
            None => None,
            Some((data, 1, cs)) if !cols.is_empty() => {
                let len = (cols.len() - 1) * cs + rows.len();
                Some((&data[rows.start + cols.start * cs..][..len], cs))
            }
            Some(_) => return None,
        };
        Some(TileEpilogue {
            bias: self.row_bias.map(|b| &b[rows]),
            add,
            relu: self.relu,
        })
    }

    /// Asks the CPU for the added matrix's lines of a tile while the
    /// kernel computes it (read a tile at a time, they are not the
    /// stream the hardware prefetchers follow).
    pub(crate) fn prefetch(&self, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) {
        #[cfg(target_arch = "x86_64")]
        if let Some((data, 1, cs)) = self.add.map(|m| m.raw())
            && !rows.is_empty()
        {
            let per_line = (64 / std::mem::size_of::<A>()).max(1);
            for j in cols {
                for i in (rows.start..rows.end)
                    .step_by(per_line)
                    .chain([rows.end - 1])
                {
                    // In range: (i, j) is inside the matrix (checked
                    // against C's shape); a prefetch neither reads nor
                    // writes.
                    let at = data[i + j * cs..].as_ptr();
                    // SAFETY: a prefetch of an address inside `data`.
                    unsafe {
                        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                            at.cast::<i8>(),
                        );
                    }
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (rows, cols);
    }

    /// Asks for the added matrix's rows `rows` of column `j` into L2: the
    /// tiles of a panel of B ask for the next panel's a share each, so
    /// that the tile's own request ([`Self::prefetch`]) finds them there
    /// rather than in memory.
    pub(crate) fn prefetch_column(&self, rows: std::ops::Range<usize>, j: usize) {
        if let Some((data, 1, cs)) = self.add.map(|m| m.raw())
            && let Some(part) = data.get(rows.start + j * cs..rows.end + j * cs)
        {
            crate::prefetch::into_l2(part);
        }
    }

    /// Applies it to C's tile of rows `rows`, columns `cols`, whose column
    /// `j` holds its rows contiguously from `c + (j - cols.start) · cs`.
    ///
    /// # Safety
    /// Those columns' rows are valid for reads and writes and no other
    /// thread touches them; `rows` and `cols` lie inside the C that
    /// [`Self::check`] accepted.
    pub(crate) unsafe fn tile(
        &self,
        c: *mut A,
        cs: usize,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
    ) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F; the rest as the caller
                // promises.
                return unsafe { self.tile_avx512(c, cs, rows, cols) };
            }
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2; the rest as the caller promises.
                return unsafe { self.tile_avx2(c, cs, rows, cols) };
            }
        }
        // SAFETY: as the caller promises.
        unsafe { self.tile_plain(c, cs, rows, cols) }
    }

    /// [`Self::tile`] with AVX-512F.
    ///
    /// # Safety
    /// As [`Self::tile`], on a CPU with AVX-512F.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn tile_avx512(
        &self,
        c: *mut A,
        cs: usize,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
    ) {
        // SAFETY: as the caller promises.
        unsafe { self.tile_plain(c, cs, rows, cols) }
    }

    /// [`Self::tile`] with AVX2.
    ///
    /// # Safety
    /// As [`Self::tile`], on a CPU with AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn tile_avx2(
        &self,
        c: *mut A,
        cs: usize,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
    ) {
        // SAFETY: as the caller promises.
        unsafe { self.tile_plain(c, cs, rows, cols) }
    }

    /// # Safety
    /// As [`Self::tile`].
    #[inline(always)]
    unsafe fn tile_plain(
        &self,
        c: *mut A,
        cs: usize,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
    ) {
        let bias = self.row_bias.map(|b| &b[rows.clone()]);
        let mut gathered = Vec::new();
        for (jj, j) in cols.enumerate() {
            // SAFETY: column j's rows, as the caller promises.
            let col = unsafe { std::slice::from_raw_parts_mut(c.add(jj * cs), rows.len()) };
            let add = match self.add.map(|m| m.raw()) {
                // The added column contiguous: read in place.
                Some((data, 1, acs)) => Some(&data[rows.start + j * acs..][..rows.len()]),
                Some((data, ars, acs)) => {
                    gathered.clear();
                    gathered.extend(rows.clone().map(|i| data[i * ars + j * acs]));
                    Some(&gathered[..])
                }
                None => None,
            };
            column(col, bias, add, self.relu);
        }
    }
}

/// `dst = relu(dst + bias + add)`, each where given.
#[inline(always)]
fn column<A: Scalar>(dst: &mut [A], bias: Option<&[A]>, add: Option<&[A]>, relu: bool) {
    #[cfg(target_arch = "x86_64")]
    if std::any::TypeId::of::<A>() == std::any::TypeId::of::<f32>()
        && std::is_x86_feature_detected!("avx512f")
    {
        // SAFETY: A is f32 (the same type: the casts change nothing); the
        // CPU has AVX-512F.
        unsafe {
            let f = |s: &[A]| &*(s as *const [A] as *const [f32]);
            column_f32_avx512(
                &mut *(dst as *mut [A] as *mut [f32]),
                bias.map(f),
                add.map(f),
                relu,
            );
        }
        return;
    }
    match (bias, add) {
        (Some(b), Some(a)) => dst
            .iter_mut()
            .zip(b.iter().zip(a))
            .for_each(|(d, (b, a))| *d = *d + *b + *a),
        (Some(b), None) => dst.iter_mut().zip(b).for_each(|(d, b)| *d = *d + *b),
        (None, Some(a)) => dst.iter_mut().zip(a).for_each(|(d, a)| *d = *d + *a),
        (None, None) => {}
    }
    if relu {
        dst.iter_mut()
            .for_each(|d| *d = if *d > A::ZERO { *d } else { A::ZERO });
    }
}

/// [`column`] for fp32 in 16-lane vectors from the column's first row, as
/// the kernels stored it: a narrower load of a vector just stored in full
/// is not forwarded from the store, and waited for the line's write
/// (12% of a ResNet-50 batch in this function, loading 8 lanes at a
/// time, on an Intel Xeon).
///
/// # Safety
/// The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn column_f32_avx512(
    dst: &mut [f32],
    bias: Option<&[f32]>,
    add: Option<&[f32]>,
    relu: bool,
) {
    use std::arch::x86_64::*;
    let len = dst.len();
    debug_assert!(bias.is_none_or(|b| b.len() >= len) && add.is_none_or(|a| a.len() >= len));
    let zero = _mm512_setzero_ps();
    for at in (0..len).step_by(16) {
        let mask: __mmask16 = if len - at >= 16 {
            0xffff
        } else {
            (1u16 << (len - at)) - 1
        };
        // SAFETY (each access): lanes at..at + 16 under `mask` lie inside
        // `dst` (and `bias`, `add`, at least as long).
        unsafe {
            let p = dst.as_mut_ptr().add(at);
            let mut v = _mm512_maskz_loadu_ps(mask, p);
            if let Some(b) = bias {
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, b.as_ptr().add(at)));
            }
            if let Some(a) = add {
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, a.as_ptr().add(at)));
            }
            if relu {
                v = _mm512_max_ps(v, zero);
            }
            _mm512_mask_storeu_ps(p, mask, v);
        }
    }
}
