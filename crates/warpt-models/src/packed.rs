//! f32 weight matrices packed once, at load, for warpt's GEMM engine, and
//! the product every linear layer computes: `x · wᵀ + bias`.
//!
//! A matrix `w` (`n × k`, row-major, `n` output features) is the
//! engine's left operand, packed once ([`PackedA`]: every slice of the
//! input features holding the features in micro-panels as the engine's
//! register tile reads them). A call's activations `x` (`rows × k`) are
//! the right operand `xᵀ`, and the result `(x · wᵀ)ᵀ`, stored
//! column-major, is the `rows × n` row-major result. One layout serves
//! both products an LLM runs:
//!
//! - a decode step (a few activation rows) is bound by reading the
//!   weights: bands of output features (runs of whole micro-panels) go
//!   to the threads, and the engine streams each slice's panels once,
//!   its tile only as wide as the rows there are;
//! - a prefill or an encoder batch (hundreds of rows) is bound by
//!   arithmetic: chunks of rows go to the threads, each one product with
//!   the whole matrix, so a chunk's activations are packed once (a
//!   product per band had packed them once per band).
//!
//! A matrix is held in f32 or, for [`Precision::Bf16`], in bf16: its
//! weights rounded once at load, each call's activations rounded once
//! per product, the products summed in f32 (AVX512_BF16's `vdpbf16ps`
//! where the CPU has it, else on AVX2 a tile that widens the pairs to f32
//! as it loads them: a decode step reads half f32's bytes), as PyTorch's
//! bf16 autocast multiplies. For
//! [`Precision::F16`], likewise in fp16, widened to f32 as the tiles load
//! them ([`Half`]), as llama.cpp multiplies fp16 weights on a CPU.
//!
//! Bands and chunks run as rayon tasks, each an engine product on one thread:
//! the model's own parallel work (candle's, attention's) runs on the same
//! rayon pool, so the process never has more threads wanting the CPUs
//! than there are CPUs (the engine's own team, spinning between products,
//! made three on two: docs/gemm.md).

use std::cell::RefCell;
use std::thread::LocalKey;

use rayon::prelude::*;
use warpt_gemm::{Bf16, Element, Half, Isa, Kernel, MatRef, PackedA};

mod product;

pub use product::Then;
use product::{Product, Start};

/// The engine every [`PackedMatrix`] multiplies on, as results name it
/// (`details.engine`).
pub const ENGINE: &str = "warpt-gemm";

/// The element a [`PackedMatrix`] holds its weights and multiplies in
/// (always adding in f32 and returning f32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// f32 weights and activations.
    #[default]
    F32,
    /// bf16 weights (rounded once, at load) and activations (rounded per
    /// product), their products summed in f32.
    Bf16,
    /// fp16 weights (rounded once, at load) and activations (rounded per
    /// product), their products summed in f32.
    F16,
}

impl Precision {
    /// The names a `precision` parameter takes, in [`Self::parse`]'s
    /// spelling.
    pub const NAMES: &[&str] = &["f32", "bf16", "f16"];

    /// The precision a parameter names (`f32`, `bf16` or `f16`).
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "f32" => Ok(Precision::F32),
            "bf16" => Ok(Precision::Bf16),
            "f16" => Ok(Precision::F16),
            other => Err(format!("precision '{other}' is not f32, bf16 or f16")),
        }
    }

    /// Its name, as [`Self::parse`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
        }
    }

    /// The instruction set the engine's tiles of this precision use on
    /// this CPU (`details.isa`: for bf16 `avx512_bf16` where the CPU has
    /// it, for fp16 the tiles that widen it, else the f32 tiles').
    pub fn isa(self) -> &'static str {
        match self {
            Precision::Bf16 if self.native() => Kernel::<Bf16>::best().isa.name(),
            Precision::F16 if self.native() => Kernel::<Half>::best().isa.name(),
            // Their values in f32 where the CPU has no tiles of their own.
            Precision::F32 | Precision::Bf16 | Precision::F16 => Kernel::<f32>::best().isa.name(),
        }
    }

    /// Whether this CPU has tiles of the precision's own (bf16:
    /// AVX512_BF16; fp16: AVX2 with F16C): elsewhere its kernel is
    /// portable code, slower than the f32 tiles on the same values.
    fn native(self) -> bool {
        match self {
            Precision::F32 => true,
            Precision::Bf16 => Kernel::<Bf16>::best().isa != Isa::Portable,
            Precision::F16 => Kernel::<Half>::best().isa != Isa::Portable,
        }
    }
}

/// Output features per band at least: bands thinner than this cost more
/// in per-product overhead than they gain in balance.
const BAND_MIN: usize = 64;

/// A matrix packed once, cut into bands of output features (runs of its
/// rows, each starting on a micro-panel): a decode step's tasks.
struct Banded<T: Element> {
    /// All `n × k` weights.
    w: PackedA<T>,
    /// The bands, in order.
    bands: Vec<std::ops::Range<usize>>,
}

/// A matrix's bands, in the element its products run in.
enum Bands {
    /// f32 bands holding values of `holds`: f32, or bf16 or fp16 values
    /// on a CPU without that precision's tiles (the activations are then
    /// rounded likewise, and the f32 kernel computes what the other would).
    F32 {
        bands: Banded<f32>,
        holds: Precision,
    },
    /// bf16 bands, for the engine's bf16 kernel.
    Bf16(Banded<Bf16>),
    /// fp16 bands, for the engine's tiles that widen them.
    Half(Banded<Half>),
}

/// A weight matrix packed for the engine (see the module doc).
pub struct PackedMatrix {
    /// Output features.
    n: usize,
    /// Input features.
    k: usize,
    /// The bands, in order of their features.
    bands: Bands,
    /// The bias added to every row of a product.
    bias: Option<Vec<f32>>,
}

/// `x` rounded to the nearest bf16 (ties to even), held as f32.
fn round_bf16(x: f32) -> f32 {
    Bf16::from_f32(x).to_f32()
}

/// `x` rounded to the nearest fp16 (ties to even), held as f32.
fn round_f16(x: f32) -> f32 {
    Half::from_f32(x).to_f32()
}

/// Values per conversion task: below this a conversion stays on its
/// thread.
const CONVERT_CHUNK: usize = 1 << 14;

/// How f32 values become what a product multiplies: a run of them into
/// as many of the element.
type Convert<T> = fn(&[f32], &mut [T]);

/// To bf16 (`vcvtneps2bf16` where the CPU has it).
const TO_BF16: Convert<Bf16> = warpt_gemm::simd::bf16_from_f32;

/// To the nearest bf16, held in f32.
const ROUND_BF16: Convert<f32> = |x, out| {
    warpt_gemm::simd::vectorized(
        #[inline(always)]
        || out.iter_mut().zip(x).for_each(|(o, x)| *o = round_bf16(*x)),
    )
};

/// To fp16 (`vcvtps2ph` where the CPU has it).
const TO_HALF: Convert<Half> = warpt_gemm::simd::half_from_f32;

/// To the nearest fp16, held in f32.
const ROUND_F16: Convert<f32> = |x, out| {
    warpt_gemm::simd::vectorized(
        #[inline(always)]
        || out.iter_mut().zip(x).for_each(|(o, x)| *o = round_f16(*x)),
    )
};

/// How values of `precision` held in f32 are made from f32 ones (None:
/// f32's own, not converted).
fn rounding(precision: Precision) -> Option<Convert<f32>> {
    match precision {
        Precision::F32 => None,
        Precision::Bf16 => Some(ROUND_BF16),
        Precision::F16 => Some(ROUND_F16),
    }
}

/// `x` converted by `f`, across cores when it is long.
fn convert<T: Copy + Default + Send>(x: &[f32], f: Convert<T>) -> Vec<T> {
    let mut out = vec![T::default(); x.len()];
    convert_into(x, &mut out, f, true);
    out
}

/// `x` converted by `f` into `out` (as long), across cores when
/// `parallel` and it is long.
fn convert_into<T: Send>(x: &[f32], out: &mut [T], f: Convert<T>, parallel: bool) {
    if !parallel || x.len() <= CONVERT_CHUNK {
        f(x, out);
    } else {
        out.par_chunks_mut(CONVERT_CHUNK)
            .zip(x.par_chunks(CONVERT_CHUNK))
            .for_each(|(o, x)| f(x, o));
    }
}

thread_local! {
    /// This thread's last bf16 product's activations in bf16, kept so the
    /// next product converts into memory already mapped (a fresh buffer
    /// per product cost its page faults, zeroing and unmapping: 3% of a
    /// bf16 ResNet-50). Grows to the largest input the thread converts.
    static BF16_X: RefCell<Vec<Bf16>> = const { RefCell::new(Vec::new()) };
    /// The same, for fp16.
    static HALF_X: RefCell<Vec<Half>> = const { RefCell::new(Vec::new()) };
    /// The same, for bf16 or fp16 values held in f32 (a CPU without their
    /// tiles).
    static ROUNDED_X: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// `then` on `x` converted by `f`, in this thread's buffer `key` (or, when
/// a product on this thread already holds it, a rayon task stolen while
/// that product waits, a buffer of its own).
fn with_converted<T: Copy + Default + Send + 'static, R>(
    key: &'static LocalKey<RefCell<Vec<T>>>,
    x: &[f32],
    f: Convert<T>,
    parallel: bool,
    then: impl FnOnce(&[T]) -> R,
) -> R {
    let run = |buf: &mut Vec<T>| {
        if buf.len() < x.len() {
            buf.resize(x.len(), T::default());
        }
        let mine = &mut buf[..x.len()];
        convert_into(x, mine, f, parallel);
        then(mine)
    };
    key.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => run(&mut buf),
        Err(_) => run(&mut Vec::new()),
    })
}

impl PackedMatrix {
    /// `w` (`n × k`, row-major: one row per output feature, as PyTorch,
    /// safetensors and GGUF store a linear layer), packed in f32.
    ///
    /// # Panics
    /// If `w.len() != n * k`.
    pub fn from_rows(w: &[f32], n: usize, k: usize) -> Self {
        Self::from_rows_in(w, n, k, Precision::F32)
    }

    /// `w` (`n × k`, row-major) packed in `precision`: for bf16 and fp16,
    /// rounded once, here, and held so for the engine's tiles of that
    /// precision (or, on a CPU without them, as the same values in f32).
    ///
    /// # Panics
    /// If `w.len() != n * k`.
    pub fn from_rows_in(w: &[f32], n: usize, k: usize, precision: Precision) -> Self {
        Self::from_rows_on(w, n, k, precision, precision.native())
    }

    /// [`Self::from_rows_in`], bf16 and fp16 held as themselves when
    /// `native` (else as f32 values).
    fn from_rows_on(w: &[f32], n: usize, k: usize, precision: Precision, native: bool) -> Self {
        assert_eq!(w.len(), n * k, "a {n} x {k} matrix");
        Self::from_strided(w, n, k, (k, 1), precision, native)
    }

    /// The `n × k` matrix whose element `(i, p)` is `src[i·rs + p·cs]`,
    /// packed in `precision` (bf16 and fp16 held as themselves when
    /// `native`): `src` rounded once, as a whole, then packed once.
    fn from_strided(
        src: &[f32],
        n: usize,
        k: usize,
        (rs, cs): (usize, usize),
        precision: Precision,
        native: bool,
    ) -> Self {
        fn banded<T: Element>(src: &[T], n: usize, k: usize, rs: usize, cs: usize) -> Banded<T> {
            let view = MatRef::new(src, n, k, rs, cs).expect("src holds n x k (asserted)");
            banded_from(PackedA::new(view))
        }
        let bands = match (precision, rounding(precision)) {
            (Precision::Bf16, _) if native => {
                Bands::Bf16(banded(&convert(src, TO_BF16), n, k, rs, cs))
            }
            (Precision::F16, _) if native => {
                Bands::Half(banded(&convert(src, TO_HALF), n, k, rs, cs))
            }
            (holds, None) => Bands::F32 {
                bands: banded(src, n, k, rs, cs),
                holds,
            },
            (holds, Some(round)) => Bands::F32 {
                bands: banded(&convert(src, round), n, k, rs, cs),
                holds,
            },
        };
        PackedMatrix {
            n,
            k,
            bands,
            bias: None,
        }
    }

    /// `w` (`n × k`, row-major) already in bf16, packed in bf16: held so
    /// for the engine's bf16 tiles (or, on a CPU without them, as the same
    /// values in f32). For a caller that writes its operands in bf16
    /// itself (attention's keys).
    ///
    /// # Panics
    /// If `w.len() != n * k`.
    pub fn from_rows_bf16(w: &[Bf16], n: usize, k: usize) -> Self {
        assert_eq!(w.len(), n * k, "a {n} x {k} matrix");
        Self::from_bf16_strided(w, n, k, (k, 1))
    }

    /// [`Self::from_cols_in`] of values already in bf16: the matrix whose
    /// transpose `wt` (`k × n`, row-major) is (attention's values).
    ///
    /// # Panics
    /// If `wt.len() != n * k`.
    pub fn from_cols_bf16(wt: &[Bf16], n: usize, k: usize) -> Self {
        assert_eq!(wt.len(), n * k, "a {k} x {n} matrix");
        Self::from_bf16_strided(wt, n, k, (1, n))
    }

    /// The `n × k` bf16 matrix whose element `(i, p)` is `src[i·rs + p·cs]`.
    fn from_bf16_strided(src: &[Bf16], n: usize, k: usize, (rs, cs): (usize, usize)) -> Self {
        if !Precision::Bf16.native() {
            let wide: Vec<f32> = src.iter().map(|v| v.to_f32()).collect();
            return Self::from_strided(&wide, n, k, (rs, cs), Precision::Bf16, false);
        }
        let view = MatRef::new(src, n, k, rs, cs).expect("src holds n x k (asserted)");
        PackedMatrix {
            n,
            k,
            bands: Bands::Bf16(banded_from(PackedA::new(view))),
            bias: None,
        }
    }

    /// The matrix whose transpose `wt` (`k × n`, row-major: one row per
    /// input feature) is, packed in f32: what `x · wt` needs, as
    /// attention's product of probabilities with values does.
    ///
    /// # Panics
    /// If `wt.len() != n * k`.
    pub fn from_cols(wt: &[f32], n: usize, k: usize) -> Self {
        Self::from_cols_in(wt, n, k, Precision::F32)
    }

    /// [`Self::from_cols`] in `precision` (as [`Self::from_rows_in`]).
    ///
    /// # Panics
    /// If `wt.len() != n * k`.
    pub fn from_cols_in(wt: &[f32], n: usize, k: usize, precision: Precision) -> Self {
        assert_eq!(wt.len(), n * k, "a {k} x {n} matrix");
        // Row i is column i of wt: stride 1 down, n across.
        Self::from_strided(wt, n, k, (1, n), precision, precision.native())
    }

    /// The same matrix adding `bias` (one value per output feature) to
    /// every row of its products, as a linear layer with a bias does.
    ///
    /// # Panics
    /// If `bias.len()` is not the matrix's output features.
    pub fn with_bias(mut self, bias: &[f32]) -> Self {
        assert_eq!(bias.len(), self.n, "one bias per output feature");
        self.bias = Some(bias.to_vec());
        self
    }

    /// Output features.
    pub fn rows(&self) -> usize {
        self.n
    }

    /// The precision its products run in.
    pub fn precision(&self) -> Precision {
        match self.bands {
            Bands::F32 { holds, .. } => holds,
            Bands::Bf16(_) => Precision::Bf16,
            Bands::Half(_) => Precision::F16,
        }
    }

    /// `x` (`rows × k`, row-major) times the matrix transposed: `rows × n`,
    /// row-major, on every core.
    ///
    /// # Panics
    /// If `x.len() != rows * k`.
    pub fn matmul_t(&self, x: &[f32], rows: usize) -> Vec<f32> {
        self.product(x, rows, true)
    }

    /// [`Self::matmul_t`] on the calling thread alone: for small products
    /// that callers already run many of in parallel (attention's, one per
    /// sequence and head).
    pub fn matmul_t_serial(&self, x: &[f32], rows: usize) -> Vec<f32> {
        self.product(x, rows, false)
    }

    /// [`Self::matmul_t`] into `out` (`rows × n`, row-major, its contents
    /// overwritten), on every core: for a caller that keeps its buffers.
    ///
    /// # Panics
    /// If `x.len() != rows * k` or `out.len() != rows * n`.
    pub fn matmul_t_into(&self, x: &[f32], rows: usize, out: &mut [f32]) {
        self.overwrite(x, rows, out, Then::default(), true);
    }

    /// [`Self::matmul_t_into`] on the calling thread alone: for a caller
    /// that runs many products at once as its own tasks (Winograd's 16
    /// per convolution), one parallel region instead of one per product.
    ///
    /// # Panics
    /// If `x.len() != rows * k` or `out.len() != rows * n`.
    pub fn matmul_t_into_serial(&self, x: &[f32], rows: usize, out: &mut [f32]) {
        self.overwrite(x, rows, out, Then::default(), false);
    }

    /// `out` set to the product of `x` (and the bias), then `then`: the
    /// bias is C's start; without one C is not read.
    fn overwrite(&self, x: &[f32], rows: usize, out: &mut [f32], then: Then<'_>, parallel: bool) {
        assert_eq!(out.len(), rows * self.n, "{rows} rows of {}", self.n);
        self.product_into(x, rows, out, self.start(), then, parallel);
    }

    /// Whether its products multiply bf16 as bf16 (AVX512_BF16): a caller
    /// that can write its activations in bf16 itself gives them to
    /// [`Self::matmul_t_into_serial_bf16`] and saves a pass converting
    /// them.
    pub fn multiplies_bf16(&self) -> bool {
        matches!(self.bands, Bands::Bf16(_))
    }

    /// [`Self::matmul_t_into_serial`] on activations already in bf16 (on
    /// a matrix that does not [`Self::multiplies_bf16`], their f32
    /// values, the same numbers).
    ///
    /// # Panics
    /// If `x.len() != rows * k` or `out.len() != rows * n`.
    pub fn matmul_t_into_serial_bf16(&self, x: &[Bf16], rows: usize, out: &mut [f32]) {
        assert_eq!(out.len(), rows * self.n, "{rows} rows of {}", self.n);
        self.product_bf16(x, rows, out, self.start(), false);
    }

    /// [`Self::matmul_t_add`] on activations already in bf16 (on a matrix
    /// that does not [`Self::multiplies_bf16`], their f32 values).
    ///
    /// # Panics
    /// If `x.len() != rows * k` or `out.len() != rows * n`.
    pub fn matmul_t_add_bf16(&self, x: &[Bf16], rows: usize, out: &mut [f32]) {
        assert_eq!(out.len(), rows * self.n, "{rows} rows of {}", self.n);
        let start = self.bias.as_deref().map_or(Start::Out, Start::OutBias);
        self.product_bf16(x, rows, out, start, true);
    }

    /// `out = x · wᵀ + start` for bf16 activations `x`.
    fn product_bf16(
        &self,
        x: &[Bf16],
        rows: usize,
        out: &mut [f32],
        start: Start<'_>,
        parallel: bool,
    ) {
        assert_eq!(x.len(), rows * self.k, "{rows} rows of {}", self.k);
        let product = Product {
            n: self.n,
            k: self.k,
            rows,
            start,
            then: Then::default(),
            parallel,
        };
        match &self.bands {
            Bands::Bf16(bands) => product.run(bands, x, out),
            Bands::F32 { .. } | Bands::Half(_) => {
                let wide: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
                self.product_into(&wide, rows, out, start, Then::default(), parallel)
            }
        }
    }

    /// What a product's C starts from: the bias in every row, else
    /// nothing (C not read).
    fn start(&self) -> Start<'_> {
        self.bias.as_deref().map_or(Start::Zero, Start::Bias)
    }

    /// `out` (`rows × n`, row-major) plus `x` (`rows × k`, row-major)
    /// times the matrix transposed (and its bias, when it has one), on
    /// every core: for a layer whose output starts from something else (a
    /// shortcut, a folded batch norm's shift).
    ///
    /// # Panics
    /// If `x.len() != rows * k` or `out.len() != rows * n`.
    pub fn matmul_t_add(&self, x: &[f32], rows: usize, out: &mut [f32]) {
        assert_eq!(out.len(), rows * self.n, "{rows} rows of {}", self.n);
        let start = self.bias.as_deref().map_or(Start::Out, Start::OutBias);
        self.product_into(x, rows, out, start, Then::default(), true);
    }

    /// `out` (`rows × n`, row-major, overwritten) set to `x · wᵀ` plus the
    /// bias, then what `then` says (`then.add`, `rows × n` row-major,
    /// added; negative values zeroed when `then.relu`), on every core: a
    /// residual block's last convolution (its folded batch norm's shift,
    /// the shortcut and the ReLU) without a pass of its own for any of
    /// them: each tile of the result is finished while it is in cache.
    ///
    /// # Panics
    /// If `x.len() != rows * k`, or `out` or `then.add` is not `rows × n`.
    pub fn matmul_t_then(&self, x: &[f32], rows: usize, out: &mut [f32], then: Then<'_>) {
        self.overwrite(x, rows, out, then, true);
    }

    /// [`Self::matmul_t_then`] on the calling thread alone: for a caller
    /// that cuts a large product into pieces of its own and runs them as
    /// rayon tasks (a convolution gathering each piece's receptive fields
    /// into a buffer that stays in the core's cache).
    ///
    /// # Panics
    /// If `x.len() != rows * k`, or `out` or `then.add` is not `rows × n`.
    pub fn matmul_t_then_serial(&self, x: &[f32], rows: usize, out: &mut [f32], then: Then<'_>) {
        self.overwrite(x, rows, out, then, false);
    }

    /// The product into a new matrix: on the calling thread, or as rayon
    /// tasks when `parallel`.
    fn product(&self, x: &[f32], rows: usize, parallel: bool) -> Vec<f32> {
        let mut out = vec![0f32; rows * self.n];
        self.overwrite(x, rows, &mut out, Then::default(), parallel);
        out
    }

    /// `out = x · wᵀ + start`, `x` rounded first when the matrix is bf16
    /// or fp16 (once, for every band).
    fn product_into(
        &self,
        x: &[f32],
        rows: usize,
        out: &mut [f32],
        start: Start<'_>,
        then: Then<'_>,
        parallel: bool,
    ) {
        assert_eq!(x.len(), rows * self.k, "{rows} rows of {}", self.k);
        let product = Product {
            n: self.n,
            k: self.k,
            rows,
            start,
            then,
            parallel,
        };
        match &self.bands {
            Bands::F32 { bands, holds } => match rounding(*holds) {
                None => product.run(bands, x, out),
                Some(round) => with_converted(&ROUNDED_X, x, round, parallel, |x| {
                    product.run(bands, x, out)
                }),
            },
            Bands::Bf16(bands) => with_converted(&BF16_X, x, TO_BF16, parallel, |x| {
                product.run(bands, x, out)
            }),
            Bands::Half(bands) => with_converted(&HALF_X, x, TO_HALF, parallel, |x| {
                product.run(bands, x, out)
            }),
        }
    }
}

/// A packed matrix cut into bands.
fn banded_from<T: Element>(w: PackedA<T>) -> Banded<T> {
    let n = w.rows();
    // Bands start on pairs of panels where the kernel reads a decode
    // step's panels in pairs (two streams of memory a thread).
    let mr = w.kernel().band_rows();
    let count = (2 * rayon::current_num_threads()).clamp(1, n.div_ceil(BAND_MIN).max(1));
    let cut = |b: usize| {
        if b == count {
            n
        } else {
            b * n / count / mr * mr
        }
    };
    let bands = (0..count)
        .map(|b| cut(b)..cut(b + 1))
        .filter(|r| !r.is_empty())
        .collect();
    Banded { w, bands }
}

#[cfg(test)]
mod tests;
