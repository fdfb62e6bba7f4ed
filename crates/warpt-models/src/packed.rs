//! f32 weight matrices packed once, at load, into the layout a
//! register-tiled product reads front to back, and the product itself:
//! `x · wᵀ`, what every linear layer computes.
//!
//! A matrix `w` (`n × k`, row-major, `n` output features) is stored as
//! panels of [`NR`] output features, each holding, for every input feature
//! in turn, its `NR` weights side by side (`[n / NR][k][NR]`, the last
//! panel zero-padded). One layout serves both products an LLM runs:
//!
//! - a decode step (a few activation rows) is bound by reading the weights:
//!   every panel is one contiguous stream, read once;
//! - a prefill or an encoder batch (hundreds of rows) is bound by
//!   arithmetic: the panel is already what a GEMM micro-kernel wants, so
//!   only the activations are packed per call, and the kernel keeps a tile
//!   of up to 12 rows × 32 features in registers (AVX-512; 6 × 16 with
//!   AVX2), each loaded weight vector feeding one fused multiply-add per
//!   row.
//!
//! General GEMMs (the `gemm` crate under candle, built for AVX2) pack the
//! weights again on every call; holding them pre-packed, with AVX-512 where
//! the CPU has it, is what lets one kernel beat PyTorch's MKL at both ends
//! (see docs/pepbench.md).

use rayon::prelude::*;

/// Output features per panel: two AVX-512 vectors.
pub const NR: usize = 32;

/// Input features per block of the product: a block of the panel (`KC ×
/// NR`, 32 KiB) stays in L1 while every row tile passes over it.
const KC: usize = 256;

/// Activation rows per band: a band's packed block (`MC × KC`, 192 KiB)
/// stays in L2 while every panel passes over it.
const MC: usize = 192;

/// The instruction sets the kernel is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isa {
    /// AVX-512F: tiles of up to 12 rows × 32 features.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// AVX2 + FMA: tiles of up to 6 rows × 16 features.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// Plain Rust, for other CPUs.
    Scalar,
}

impl Isa {
    /// The best this CPU runs.
    fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Isa::Avx2;
            }
        }
        Isa::Scalar
    }

    /// Most activation rows in one register tile.
    fn max_rows(self) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => 12,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => 6,
            Isa::Scalar => 8,
        }
    }
}

/// 64 bytes of weights, so panels start on cache lines.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([f32; 16]);

/// A weight matrix in panels (see the module doc).
pub struct PackedMatrix {
    /// Output features.
    n: usize,
    /// Input features.
    k: usize,
    /// `ceil(n / NR)` panels of `k × NR` weights.
    lines: Vec<Line>,
    /// The bias added to every row, zero-padded to whole panels.
    bias: Option<Vec<f32>>,
}

impl PackedMatrix {
    /// `w` (`n × k`, row-major: one row per output feature, as PyTorch,
    /// safetensors and GGUF store a linear layer) in panels.
    ///
    /// # Panics
    /// If `w.len() != n * k`.
    pub fn from_rows(w: &[f32], n: usize, k: usize) -> Self {
        assert_eq!(w.len(), n * k, "a {n} x {k} matrix");
        Self::from_row_fn(n, k, |r, row| row.copy_from_slice(&w[r * k..][..k]))
    }

    /// The `n × k` matrix whose row `r` `row(r, buf)` writes into `buf`
    /// (`k` values), in panels: for weights stored some other way, such as
    /// quantized blocks, unpacked straight into the panels.
    pub fn from_row_fn(n: usize, k: usize, row: impl Fn(usize, &mut [f32]) + Sync) -> Self {
        Self::pack(n, k, |panel, p| {
            let mut buf = vec![0f32; k];
            for j in 0..NR.min(n - p * NR) {
                row(p * NR + j, &mut buf);
                for (i, v) in buf.iter().enumerate() {
                    panel[i * NR + j] = *v;
                }
            }
        })
    }

    /// The matrix whose transpose `wt` (`k × n`, row-major: one row per
    /// input feature) is, in panels: what `x · wt` needs, as attention's
    /// product of probabilities with values does.
    ///
    /// # Panics
    /// If `wt.len() != n * k`.
    pub fn from_cols(wt: &[f32], n: usize, k: usize) -> Self {
        assert_eq!(wt.len(), n * k, "a {k} x {n} matrix");
        Self::pack(n, k, |panel, p| {
            let width = NR.min(n - p * NR);
            for (i, dst) in panel.chunks_exact_mut(NR).enumerate() {
                dst[..width].copy_from_slice(&wt[i * n + p * NR..][..width]);
            }
        })
    }

    /// Zeroed panels, each filled by `fill(panel, index)`; across cores
    /// when the matrix is large enough to pay for it.
    fn pack(n: usize, k: usize, fill: impl Fn(&mut [f32], usize) + Sync) -> Self {
        let panels = n.div_ceil(NR);
        let mut lines = vec![Line([0.0; 16]); panels * k * NR / 16];
        let data = as_mut_floats(&mut lines);
        if n * k >= 1 << 16 {
            data.par_chunks_mut(k * NR)
                .enumerate()
                .for_each(|(p, panel)| fill(panel, p));
        } else {
            for (p, panel) in data.chunks_mut(k * NR).enumerate() {
                fill(panel, p);
            }
        }
        PackedMatrix {
            n,
            k,
            lines,
            bias: None,
        }
    }

    /// The same matrix adding `bias` (one value per output feature) to
    /// every row of its products, as a linear layer with a bias does.
    ///
    /// # Panics
    /// If `bias.len()` is not the matrix's output features.
    pub fn with_bias(mut self, bias: &[f32]) -> Self {
        assert_eq!(bias.len(), self.n, "one bias per output feature");
        let mut padded = bias.to_vec();
        padded.resize(self.n.div_ceil(NR) * NR, 0.0);
        self.bias = Some(padded);
        self
    }

    /// Output features.
    pub fn rows(&self) -> usize {
        self.n
    }

    /// `x` (`rows × k`, row-major) times the matrix transposed: `rows × n`,
    /// row-major.
    ///
    /// # Panics
    /// If `x.len() != rows * k`.
    pub fn matmul_t(&self, x: &[f32], rows: usize) -> Vec<f32> {
        self.matmul_t_with(Isa::detect(), x, rows, true)
    }

    /// [`Self::matmul_t`] on the calling thread alone: for small products
    /// that callers already run many of in parallel (attention's, one per
    /// sequence and head).
    pub fn matmul_t_serial(&self, x: &[f32], rows: usize) -> Vec<f32> {
        self.matmul_t_with(Isa::detect(), x, rows, false)
    }

    fn matmul_t_with(&self, isa: Isa, x: &[f32], rows: usize, parallel: bool) -> Vec<f32> {
        let (n, k) = (self.n, self.k);
        assert_eq!(x.len(), rows * k, "{rows} rows of {k}");
        let mut out = vec![0f32; rows * n];
        if rows == 0 || n == 0 {
            return out;
        }
        let weights = as_floats(&self.lines);
        let panels = n.div_ceil(NR);
        let dst = OutPtr(out.as_mut_ptr());
        let band = |(first, count): (usize, usize)| {
            let tiles = split_evenly(count, isa.max_rows());
            let xp = pack_rows(&x[first * k..][..count * k], k, &tiles);
            let panel = |p: usize| {
                let panel = &weights[p * k * NR..][..k * NR];
                let width = NR.min(n - p * NR);
                // A full panel is written in place; the padded last one
                // through a buffer, then its real columns copied.
                let mut buf = Vec::new();
                let (c, ldc) = if width == NR {
                    // SAFETY: row `first` exists and column p * NR + NR
                    // <= n: the pointer is inside `out`.
                    (unsafe { dst.get().add(first * n + p * NR) }, n)
                } else {
                    buf = vec![0f32; count * NR];
                    (buf.as_mut_ptr(), NR)
                };
                let bias = self.bias.as_ref().map(|b| &b[p * NR..][..NR]);
                for k0 in (0..k).step_by(KC) {
                    let kc = KC.min(k - k0);
                    let ws = &panel[k0 * NR..][..kc * NR];
                    let start = match (k0, bias) {
                        (0, None) => Start::Zero,
                        (0, Some(b)) => Start::Bias(b),
                        _ => Start::Accumulate,
                    };
                    for &(t0, tr) in &tiles {
                        let xs = &xp[t0 * k + k0 * tr..][..kc * tr];
                        // SAFETY: the tile's rows t0..t0 + tr of this band
                        // and the panel's NR columns lie inside `out` (ldc
                        // n) or `buf` (ldc NR), and no other task writes
                        // them: bands and panels partition the result, and
                        // `out` outlives the tasks.
                        unsafe { tile(isa, tr, xs, ws, c.add(t0 * ldc), ldc, start) };
                    }
                }
                for (r, row) in buf.chunks_exact(NR).enumerate() {
                    // SAFETY: as above; only the panel's real columns.
                    unsafe {
                        let to = dst.get().add((first + r) * n + p * NR);
                        std::ptr::copy_nonoverlapping(row.as_ptr(), to, width);
                    }
                }
            };
            if parallel {
                (0..panels).into_par_iter().for_each(panel);
            } else {
                (0..panels).for_each(panel);
            }
        };
        // Bands of at most MC rows, each packed by its own task and kept in
        // L2 while every panel passes over it; within a band, one task per
        // panel, writing its band × panel block of the result.
        let bands = split_evenly(rows, MC);
        if parallel {
            bands.into_par_iter().for_each(band);
        } else {
            bands.into_iter().for_each(band);
        }
        out
    }
}

/// The result's buffer, shared by tasks that write disjoint blocks of it.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);

impl OutPtr {
    /// The pointer (a method, so closures capture the Sync wrapper).
    fn get(self) -> *mut f32 {
        self.0
    }
}

// SAFETY: every task writes its own band × panel block (see
// `matmul_t_with`), and the buffer outlives the parallel loop.
unsafe impl Send for OutPtr {}
// SAFETY: as above.
unsafe impl Sync for OutPtr {}

/// How a tile's accumulators start.
#[derive(Clone, Copy)]
enum Start<'a> {
    /// At zero.
    Zero,
    /// At the bias of the panel's `NR` features, in every row.
    Bias(&'a [f32]),
    /// At what the tile holds (a later block of input features).
    Accumulate,
}

/// The weights as floats.
fn as_floats(lines: &[Line]) -> &[f32] {
    // SAFETY: a Line is 16 f32 with no padding (repr(C), size 64), so the
    // lines are `16 * len` contiguous, initialised f32.
    unsafe { std::slice::from_raw_parts(lines.as_ptr().cast::<f32>(), lines.len() * 16) }
}

/// The weights as mutable floats.
fn as_mut_floats(lines: &mut [Line]) -> &mut [f32] {
    // SAFETY: as in `as_floats`; the borrow is exclusive.
    unsafe { std::slice::from_raw_parts_mut(lines.as_mut_ptr().cast::<f32>(), lines.len() * 16) }
}

/// `len` split into as few runs of at most `max` as can be, of nearly
/// equal length (16 by 12: 8 + 8, not 12 + 4), as (first, length).
fn split_evenly(len: usize, max: usize) -> Vec<(usize, usize)> {
    let count = len.div_ceil(max);
    let (base, extra) = (len / count, len % count);
    let mut first = 0;
    (0..count)
        .map(|t| {
            let n = base + usize::from(t < extra);
            first += n;
            (first - n, n)
        })
        .collect()
}

/// The activations tile by tile, each as `[k][tile rows]` from `first *
/// k`: one value per row side by side for each input feature, for the
/// kernel's broadcasts.
fn pack_rows(x: &[f32], k: usize, tiles: &[(usize, usize)]) -> Vec<f32> {
    let mut xp = vec![0f32; x.len()];
    for &(first, rows) in tiles {
        let dst = &mut xp[first * k..][..rows * k];
        for r in 0..rows {
            let src = &x[(first + r) * k..][..k];
            for (i, v) in src.iter().enumerate() {
                dst[i * rows + r] = *v;
            }
        }
    }
    xp
}

/// The tile `c` (`rows × NR`, row stride `ldc`) = its start plus `x`
/// (`[kc][rows]`) times `w` (`[kc][NR]`).
///
/// # Safety
/// `c` is valid for writes of `rows` rows of `NR` floats, `ldc` apart, and
/// for reads of them when `start` is `Accumulate`.
unsafe fn tile(isa: Isa, rows: usize, x: &[f32], w: &[f32], c: *mut f32, ldc: usize, start: Start) {
    let kc = w.len() / NR;
    assert!(x.len() == kc * rows && rows <= isa.max_rows());
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the ISA was detected on this CPU, the slices have the
        // lengths the kernels read (checked above), `c` is the caller's.
        Isa::Avx512 => unsafe { x86::avx512(rows, kc, x, w, c, ldc, start) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx2 => unsafe { x86::avx2(rows, kc, x, w, c, ldc, start) },
        Isa::Scalar => {
            for r in 0..rows {
                // SAFETY: row r of the tile, the caller's contract.
                let crow = unsafe { std::slice::from_raw_parts_mut(c.add(r * ldc), NR) };
                match start {
                    Start::Zero => crow.fill(0.0),
                    Start::Bias(b) => crow.copy_from_slice(b),
                    Start::Accumulate => {}
                }
                for i in 0..kc {
                    let xv = x[i * rows + r];
                    for (cv, wv) in crow.iter_mut().zip(&w[i * NR..][..NR]) {
                        *cv += xv * wv;
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The register-tiled kernels. Each holds `R` rows × a run of output
    //! features in accumulators across the whole `kc` loop: per input
    //! feature, a few weight vectors are loaded and each feeds `R` fused
    //! multiply-adds with one broadcast activation.

    use super::{NR, Start};
    use std::arch::x86_64::*;

    /// Calls `$f::<R>` for a row count known at run time.
    macro_rules! by_rows {
        ($rows:expr, $f:ident, $($arg:expr),*) => {
            match $rows {
                1 => $f::<1>($($arg),*),
                2 => $f::<2>($($arg),*),
                3 => $f::<3>($($arg),*),
                4 => $f::<4>($($arg),*),
                5 => $f::<5>($($arg),*),
                6 => $f::<6>($($arg),*),
                7 => $f::<7>($($arg),*),
                8 => $f::<8>($($arg),*),
                9 => $f::<9>($($arg),*),
                10 => $f::<10>($($arg),*),
                11 => $f::<11>($($arg),*),
                _ => $f::<12>($($arg),*),
            }
        };
    }

    /// See [`super::tile`]; rows 1 to 12.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `x.len() == kc * rows`, `w.len() == kc * NR`,
    /// `c` as [`super::tile`] requires.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512(
        rows: usize,
        kc: usize,
        x: &[f32],
        w: &[f32],
        c: *mut f32,
        ldc: usize,
        start: Start,
    ) {
        debug_assert!((1..=12).contains(&rows));
        // SAFETY: the caller's contract, passed on.
        unsafe { by_rows!(rows, avx512_tile, kc, x.as_ptr(), w.as_ptr(), c, ldc, start) }
    }

    /// Generates a tile kernel `$name::<R>` for one vector width: `R` rows ×
    /// two vectors of output features (`$lanes` each) in accumulators.
    macro_rules! tile_kernel {
        ($(#[$doc:meta])* $name:ident, $feature:literal, $lanes:literal,
         $zero:ident, $load:ident, $store:ident, $set1:ident, $fma:ident) => {
            $(#[$doc])*
            #[target_feature(enable = $feature)]
            // Indices over the const-sized tile read as the algebra and unroll.
            #[allow(clippy::needless_range_loop)]
            unsafe fn $name<const R: usize>(
                kc: usize,
                x: *const f32,
                w: *const f32,
                c: *mut f32,
                ldc: usize,
                start: Start,
            ) {
                // SAFETY (every pointer below): i < kc, r < R, so reads stay
                // in x[..kc * R] and w[..kc * NR] (from the caller's offset,
                // two vectors per feature); c is the caller's.
                unsafe {
                    let mut acc = [[$zero(); 2]; R];
                    match start {
                        Start::Zero => {}
                        Start::Bias(b) => {
                            acc = [[$load(b.as_ptr()), $load(b.as_ptr().add($lanes))]; R];
                        }
                        Start::Accumulate => {
                            for r in 0..R {
                                acc[r][0] = $load(c.add(r * ldc));
                                acc[r][1] = $load(c.add(r * ldc + $lanes));
                            }
                        }
                    }
                    for i in 0..kc {
                        let w0 = $load(w.add(i * NR));
                        let w1 = $load(w.add(i * NR + $lanes));
                        for r in 0..R {
                            let xv = $set1(*x.add(i * R + r));
                            acc[r][0] = $fma(xv, w0, acc[r][0]);
                            acc[r][1] = $fma(xv, w1, acc[r][1]);
                        }
                    }
                    for r in 0..R {
                        $store(c.add(r * ldc), acc[r][0]);
                        $store(c.add(r * ldc + $lanes), acc[r][1]);
                    }
                }
            }
        };
    }

    tile_kernel!(
        /// # Safety
        /// As [`avx512`], with `R == rows`.
        avx512_tile, "avx512f", 16,
        _mm512_setzero_ps, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps
    );

    /// See [`super::tile`]; rows 1 to 6, the panel in two halves of 16.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; the rest as [`avx512`].
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn avx2(
        rows: usize,
        kc: usize,
        x: &[f32],
        w: &[f32],
        c: *mut f32,
        ldc: usize,
        start: Start,
    ) {
        debug_assert!((1..=6).contains(&rows));
        for half in [0, 16] {
            let start = match start {
                Start::Bias(b) => Start::Bias(&b[half..]),
                other => other,
            };
            // SAFETY: the caller's contract; `half + 16 <= NR`.
            unsafe {
                let (xp, wp, cp) = (x.as_ptr(), w.as_ptr().add(half), c.add(half));
                by_rows!(rows, avx2_tile, kc, xp, wp, cp, ldc, start)
            }
        }
    }

    tile_kernel!(
        /// # Safety
        /// As [`avx2`], with `R == rows`, `w`, `c` and a bias offset to a
        /// half panel.
        avx2_tile, "avx2,fma", 8,
        _mm256_setzero_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_plain_product_on_every_isa() {
        // Sizes off every tile: rows 1, 7, 13, 40 and 400 (tiles of
        // every width, several bands), n = 75 (a padded last panel), k = 37
        // and 300 (one and two blocks of input features), with and without
        // a bias. Small integers: every order of summation gives the same
        // float.
        let mut isas = vec![Isa::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                isas.push(Isa::Avx2);
            }
            if std::is_x86_feature_detected!("avx512f") {
                isas.push(Isa::Avx512);
            }
        }
        let n = 75;
        for k in [37, 300] {
            let w: Vec<f32> = (0..n * k).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
            let bias: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
            let plain = PackedMatrix::from_rows(&w, n, k);
            let biased = PackedMatrix::from_rows(&w, n, k).with_bias(&bias);
            for (packed, rows) in [&plain, &biased]
                .into_iter()
                .flat_map(|p| [1, 7, 13, 40, 400].map(|r| (p, r)))
            {
                let b = |c: usize| packed.bias.as_ref().map_or(0.0, |_| bias[c]);
                let x: Vec<f32> = (0..rows * k).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
                for &isa in &isas {
                    let got = packed.matmul_t_with(isa, &x, rows, rows % 2 == 0);
                    for r in 0..rows {
                        for c in 0..n {
                            let want: f32 =
                                b(c) + (0..k).map(|i| x[r * k + i] * w[c * k + i]).sum::<f32>();
                            assert_eq!(
                                got[r * n + c],
                                want,
                                "{isa:?}, k {k}, {rows} rows, bias {}: row {r} column {c}",
                                packed.bias.is_some()
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_transpose_packs_to_the_same_matrix() {
        let (n, k) = (45, 70);
        let w: Vec<f32> = (0..n * k).map(|i| i as f32).collect();
        let wt: Vec<f32> = (0..k * n).map(|i| w[(i % n) * k + i / n]).collect();
        let (a, b) = (
            PackedMatrix::from_rows(&w, n, k),
            PackedMatrix::from_cols(&wt, n, k),
        );
        assert_eq!(as_floats(&a.lines), as_floats(&b.lines));
    }

    #[test]
    fn runs_cover_the_length_evenly() {
        assert_eq!(split_evenly(16, 12), [(0, 8), (8, 8)]);
        assert_eq!(
            split_evenly(41, 12),
            [(0, 11), (11, 10), (21, 10), (31, 10)]
        );
        assert_eq!(split_evenly(5, 12), [(0, 5)]);
    }
}
