//! The microkernels: each multiplies an `MR x k` micro-panel of A by a
//! `k x NR` micro-panel of B (both packed, [`crate::pack`]) into an
//! `MR x NR` tile kept in registers, then stores it column-major. With
//! each comes the blocking that keeps its operands in cache: `KC` (the
//! depth: a micro-panel of B stays in L1), `MC` (rows of A packed at a
//! time: the block stays in L2) and `NC` (columns of B packed at a time:
//! the block stays in L3).
//!
//! - [`portable`]: plain Rust for any CPU;
//! - `tile`: the register tile as macros, for each ISA's vectors;
//! - `pair`: two of a tile side by side for one column, as a macro
//!   (x86-64 only);
//! - `x86`: AVX2+FMA and AVX-512 register tiles (x86-64 only);
//! - `amx`: AMX tiles for bf16 and int8 (x86-64 only);
//! - `amx_rows`: sixteen rows of a small bf16 product on the AMX tiles,
//!   both operands already laid out as tiles (attention's products);
//! - `widen`: tiles for [`Half`], fp16 widened to fp32 as it is loaded
//!   (x86-64 only);
//! - `neon`: NEON register tiles (aarch64 only);
//! - `table`: which of them each element has, best last, and their
//!   blocking.

// First: its macros are in scope only in the modules declared after it.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[macro_use]
mod tile;
// After `tile` (whose store macros it uses), before the modules using it.
#[cfg(target_arch = "x86_64")]
#[macro_use]
mod pair;

#[cfg(target_arch = "x86_64")]
mod amx;
#[cfg(target_arch = "x86_64")]
pub(crate) mod amx_rows;
#[cfg(target_arch = "x86_64")]
mod bf16_avx2;
mod finishing;
#[cfg(target_arch = "aarch64")]
mod neon;
pub mod portable;
mod table;
#[cfg(target_arch = "x86_64")]
mod widen;
#[cfg(target_arch = "x86_64")]
mod x86;

use std::ops::{Add, Mul, Sub};

use crate::isa::Isa;
use crate::tile::TileMut;
pub(crate) use finishing::Finishing;
use table::{BF16, F16, F32, F64, HALF, I8};

/// The microkernel's signature: `groups` steps over `a` (`groups x MR x
/// G`, packed) and `b` (`groups x cols x G`, packed as narrow as it is:
/// [`crate::pack::pack_b`]), `G` the element's [`Element::GROUP`], for
/// `cols` columns (1 to NR; the tile's others neither computed nor
/// stored), stored at `out` a column of MR values at a time, columns `ldo`
/// apart, as `store` says. Only the first `rows` rows (1 to MR) are
/// wanted: a kernel may compute and store only the vectors that hold them
/// (a last panel of 16 rows on a 48-row tile, a third of the work),
/// leaving the column's other values at `out` as they were.
///
/// # Safety
/// `a` holds `groups * MR * G` elements, `b` holds `groups * cols * G`,
/// `1 <= rows <= MR`, `1 <= cols <= NR`, `out + j * ldo .. + MR` is
/// writable (and readable,
/// unless `store` is [`Store::Set`]) for every `j < cols` and no other
/// thread touches it, and the CPU runs the kernel's [`Isa`].
pub type MicroKernel<T> = unsafe fn(
    groups: usize,
    a: *const T,
    b: *const T,
    rows: usize,
    cols: usize,
    out: *mut <T as Element>::Acc,
    ldo: usize,
    store: Store,
);

/// A microkernel reading B where it lies rather than packed: `k` steps
/// over `a` (`k x MR`, packed) and `b`'s first `cols` columns, each `k`
/// consecutive elements, `ldb` apart; stored as [`MicroKernel`] stores.
/// Only for elements whose [`Element::GROUP`] is 1.
///
/// # Safety
/// `a` holds `k * MR` elements, `b + j * ldb .. + k` is inside B for every
/// column `j < cols`, and as [`MicroKernel`] for `cols` and `out`.
pub type DirectKernel<T> = unsafe fn(
    k: usize,
    a: *const T,
    b: *const T,
    ldb: usize,
    cols: usize,
    out: *mut <T as Element>::Acc,
    ldo: usize,
    store: Store,
);

/// A microkernel that sets a whole tile of C (`MR` rows, `cols`
/// columns, `ldo` apart) to its product plus `bias[i]` in each row `i`,
/// the product's first slice of the depth with a row bias to add
/// (`alpha = 1`, `beta = 0`): the bias is where the accumulators start.
///
/// # Safety
/// As [`MicroKernel`] with [`Store::Set`] and `rows = MR`; `bias` holds
/// `MR` values.
pub type BiasedKernel<T> = unsafe fn(
    groups: usize,
    a: *const T,
    b: *const T,
    cols: usize,
    out: *mut <T as Element>::Acc,
    ldo: usize,
    bias: *const <T as Element>::Acc,
);

/// How a kernel leaves its tile where it goes: `C = tile`, `C += tile`
/// or `C -= tile`, the three updates a product with `alpha = ±1` and
/// `beta ∈ {0, 1}` makes of each block of the depth (others go through
/// the driver's tile buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// Overwrite: the first block of a product with beta 0, or the buffer.
    Set,
    /// Overwrite with streaming (non-temporal) stores where the kernel
    /// has them, as [`Set`](Store::Set) elsewhere: C's lines are written
    /// without being read first nor kept in cache ([`Epilogue::stream`](
    /// crate::Epilogue::stream)). Every vector the kernel stores must be
    /// aligned to its size: the driver asks for it only then.
    Stream,
    /// Add to what is there.
    Add,
    /// Subtract from what is there (alpha −1, as an LU's trailing update).
    Sub,
}

/// Where a kernel's tile goes.
pub(crate) enum Dest<'a, A> {
    /// The driver's buffer (`MR x NR`, column-major), overwritten.
    Buffer(&'a mut [A]),
    /// C's own elements.
    C(TileMut<A>, Store),
}

/// How a kernel reads a packed micro-panel of B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PanelOrder {
    /// Step by step: each step's columns side by side, as packed
    /// ([`crate::pack::pack_b`]); every register tile.
    Steps,
    /// In chunks of 16 steps, each column's groups of a chunk side by side
    /// (a last chunk of fewer steps likewise): an AMX tile's row is one
    /// column's 16 groups (packed so by `pack::pack_b_in`).
    Chunks,
}

/// A microkernel and its blocking.
#[derive(Debug)]
pub struct Kernel<T: Element> {
    /// Its name in results (`details.gemm_kernel`), such as
    /// `avx512f f64 32x6`.
    pub name: &'static str,
    /// The instructions it needs.
    pub isa: Isa,
    /// Rows of the register tile.
    pub mr: usize,
    /// Columns of the register tile.
    pub nr: usize,
    /// Depth of one packed block (a multiple of the element's group).
    pub kc: usize,
    /// Rows of A packed at a time (a multiple of `mr`).
    pub mc: usize,
    /// Columns of B packed at a time (a multiple of `nr`).
    pub nc: usize,
    run: MicroKernel<T>,
    /// The same tile reading a column-major B in place, where there is one.
    direct: Option<DirectKernel<T>>,
    /// The same tile starting from a bias per row, where there is one.
    biased: Option<BiasedKernel<T>>,
    /// The same tile applying its epilogue as it stores, where there is
    /// one (the register tiles).
    finishing: Option<Finishing<T>>,
    /// How it reads B's packed panels.
    order: PanelOrder,
    /// Two of its tiles side by side for a product of one column, where
    /// there are such ([`Pair`]).
    pair: Option<Pair<T>>,
}

/// A kernel's tiles for a product of one column (a decode step's
/// matrix-vector products, bound by reading A from memory), two at a
/// time: two adjacent micro-panels of A, read side by side as two streams
/// of memory, into one column of `2·MR` values. Two streams a core keep
/// more of its misses in flight than one (one thread's one-column
/// products over a 32000 x 768 fp32 matrix: 1.12–1.16x on a Zen 4 host,
/// `--example gemv`; docs/gemm.md).
/// Each half of the column is summed in the order the kernel's own tile
/// of one column sums it, so a pair's values are its tiles' bit for bit.
///
/// Its kernels take A's two panels as one `2·MR`-row panel (the second
/// right after the first, as a packed A holds adjacent panels), B and the
/// destination as [`MicroKernel`] and [`DirectKernel`] do, for one
/// column; a packed A whose kernel has one holds an even number of
/// panels, so every pair is whole.
#[derive(Debug)]
pub(crate) struct Pair<T: Element> {
    /// Over a packed panel of B (a single column).
    pub(crate) run: MicroKernel<T>,
    /// Over B's column where it lies.
    pub(crate) direct: DirectKernel<T>,
}

impl<T: Element> Clone for Pair<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Element> Copy for Pair<T> {}

impl<T: Element> Clone for Kernel<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Element> Copy for Kernel<T> {}

impl<T: Element> Kernel<T> {
    /// Every kernel for `T` this CPU runs, best last.
    pub fn all() -> impl Iterator<Item = &'static Kernel<T>> {
        T::kernels().iter().filter(|k| k.isa.available())
    }

    /// The best kernel for `T` on this CPU.
    pub fn best() -> &'static Kernel<T> {
        Self::all().last().unwrap_or(&T::kernels()[0])
    }

    /// The best kernel for `T` when it uses instructions beyond portable
    /// Rust (None where only the portable one runs here: a caller may do
    /// better widening `T` to a type with a hardware kernel).
    pub fn hardware() -> Option<&'static Kernel<T>> {
        Some(Self::best()).filter(|k| k.isa != Isa::Portable)
    }

    /// The best kernel for `isa`, when there is one and this CPU runs it.
    pub fn for_isa(isa: Isa) -> Option<&'static Kernel<T>> {
        Self::all().filter(|k| k.isa == isa).last()
    }

    /// The kernel of the best ISA level for products of `rows` rows: the
    /// best one, unless another tile pads them by at least a twentieth less
    /// (64 rows on a 48-row tile are 96, on a 32-row one 64). The other
    /// tiles are a little slower where neither pads (bf16's 32x12 4–5%
    /// below 48x8 at n = 2048, Zen 4), so a few rows saved do not pay.
    pub fn for_rows(rows: usize) -> &'static Kernel<T> {
        let best = Self::best();
        let padded = |k: &Kernel<T>| rows.div_ceil(k.mr) * k.mr;
        Self::all()
            .filter(|k| k.isa == best.isa)
            .fold(best, |chosen, k| {
                if 20 * padded(k) <= 19 * padded(chosen) {
                    k
                } else {
                    chosen
                }
            })
    }

    /// The same kernel with its blocking made whole (a caller may have
    /// changed the public sizes): `KC` whole groups of depths, `MC` whole
    /// tiles of rows, `NC` whole tiles of columns.
    pub(crate) fn fitted(&self) -> Kernel<T> {
        let mut k = *self;
        k.kc = k.kc.max(1).next_multiple_of(T::GROUP);
        k.mc = k.mc.max(1).next_multiple_of(k.mr);
        k.nc = k.nc.max(1).next_multiple_of(k.nr);
        k
    }

    /// How it reads B's packed panels.
    pub(crate) fn order(&self) -> PanelOrder {
        self.order
    }

    /// The kernel a product of one column runs on where its rows start on
    /// a pair of panels: its [`Pair`] as a kernel of `2·MR` rows and one
    /// column (None where it has none).
    pub(crate) fn paired(&self) -> Option<Kernel<T>> {
        let pair = self.pair?;
        Some(Kernel {
            mr: 2 * self.mr,
            nr: 1,
            run: pair.run,
            direct: Some(pair.direct),
            biased: None,
            finishing: None,
            pair: None,
            ..*self
        })
    }

    /// The rows a band of a packed A's products should start on: two
    /// panels where its one-column products read them in pairs
    /// ([`Pair`]), else one.
    pub fn band_rows(&self) -> usize {
        if self.pair.is_some() {
            2 * self.mr
        } else {
            self.mr
        }
    }

    /// Whether C's tile is best asked into cache before a call over
    /// `groups` steps of depth.
    ///
    /// AMX's tiles: only for a shallow pass or one with a partial chunk.
    /// Over at least four whole chunks the prefetches wait on the
    /// line-fill buffers the tile loads hold, and the stores at the end of
    /// the pass find C's lines no later without them (bf16, one thread,
    /// `--example rate`, interleaved: 1.03-1.08x without at n = 1024,
    /// 2048, and 4096 x 384 or 768 deep; 6272 x 256 at depths 192-576:
    /// 1.02-1.15x). A shallow pass has too little work to hide C's misses
    /// behind (64 deep: 1.35-1.45x with them, 1.43x on two threads; 96:
    /// 1.12x; 128: level), and one with a partial chunk gains from them too
    /// (147, 200, 400 and 1040 deep: 1.05-1.20x; not profiled). ResNet-50
    /// in bf16 has both (64-deep 1x1 convolutions, a 147-deep stem): never
    /// prefetching cost it 7-8%, this rule nothing (`--suite mlperf`,
    /// three interleaved rounds).
    ///
    /// The SIMD tiles: as [`Kernel::prefetches_next_b`].
    pub(crate) fn prefetches_c(&self, groups: usize) -> bool {
        #[cfg(target_arch = "x86_64")]
        if self.isa == Isa::Amx {
            return groups < 4 * amx::CHUNK || !groups.is_multiple_of(amx::CHUNK);
        }
        let _ = groups;
        self.prefetches_next_b()
    }

    /// Whether the driver asks B's next micro-panel into L2 (and C's tile
    /// into L1, [`Kernel::prefetches_c`]) while this kernel runs: not
    /// where a core's L2 is large ([`crate::cache::large_l2`]). There the
    /// prefetch instructions were 7.7% of a product's samples (`perf`,
    /// fp64 at n = 2048: each waits for a line-fill buffer the kernel's
    /// loads hold), and the hardware's streams find the panels anyway.
    /// Without them, on an Intel Xeon (family 6 model 167, 2 MiB L2,
    /// `--example rate`, three interleaved rounds, medians): n = 1024
    /// fp64 1.039x / 1.024x (one / two threads), fp32 1.021x / 1.034x;
    /// n = 384 and 2048 within 0.976-1.019x; the LLM's and ResNet-50's f32
    /// runs level. On Zen 3 (512 KiB) B's prefetch gained 7% at n = 2048
    /// with busy neighbours.
    pub(crate) fn prefetches_next_b(&self) -> bool {
        #[cfg(target_arch = "x86_64")]
        return !crate::cache::large_l2();
        #[cfg(not(target_arch = "x86_64"))]
        true
    }

    /// What a thread does when its share of a product on this kernel is
    /// done: AMX's tiles, left configured from call to call, are released.
    pub(crate) fn finish(&self) {
        #[cfg(target_arch = "x86_64")]
        if self.isa == Isa::Amx {
            // SAFETY: a kernel of this ISA was handed out (`Kernel::all`),
            // so the CPU runs AMX.
            unsafe { amx::release() };
        }
    }

    /// A guard that calls [`Kernel::finish`] when dropped: at the end of a
    /// thread's share, also when the share unwinds (AMX's configuration,
    /// which the kernel remembers per thread, never outlives the share).
    pub(crate) fn share(&self) -> Share<'_, T> {
        Share(self)
    }

    /// Whether it can start a tile from row biases ([`Kernel::run_biased`]).
    pub(crate) fn has_biased(&self) -> bool {
        self.biased.is_some()
    }

    /// Sets `tile` (a whole tile of C, `mr` rows) to the product of the
    /// packed `a` and `b` (as [`Kernel::run`] takes them) plus `bias[i]`
    /// in each of its rows.
    ///
    /// # Panics
    /// If the kernel has no such variant ([`Kernel::has_biased`]), or the
    /// operands are shorter than the tile needs.
    pub(crate) fn run_biased(
        &self,
        groups: usize,
        a: &[T],
        b: &[T],
        bias: &[T::Acc],
        tile: TileMut<T::Acc>,
    ) {
        let biased = self.biased.expect("a kernel with a biased variant");
        let (g, cols) = (T::GROUP, tile.cols());
        assert!(
            a.len() >= groups * self.mr * g
                && b.len() >= groups * cols * g
                && bias.len() >= self.mr
                && tile.rows() == self.mr
                && (1..=self.nr).contains(&cols)
        );
        // SAFETY: the lengths and the tile's shape were checked above (a
        // `TileMut` covers its columns of C, this thread's alone);
        // `Kernel::all` hands out only kernels whose ISA this CPU runs.
        unsafe {
            biased(
                groups,
                a.as_ptr(),
                b.as_ptr(),
                cols,
                tile.ptr(),
                tile.ld(),
                bias.as_ptr(),
            )
        }
    }

    /// Whether it can read a column-major B in place ([`Kernel::run_direct`]).
    pub(crate) fn has_direct(&self) -> bool {
        self.direct.is_some()
    }

    /// Runs it on a packed `a` (`k x mr`) and B's first `cols` columns
    /// `b` (each at least `k` long from the depth it starts at, `ldb`
    /// apart) where they lie, into `dest`.
    ///
    /// # Panics
    /// If the kernel has no such variant ([`Kernel::has_direct`]).
    pub(crate) fn run_direct(
        &self,
        k: usize,
        a: &[T],
        (b, ldb): (&[T], usize),
        cols: usize,
        dest: Dest<'_, T::Acc>,
    ) {
        let direct = self
            .direct
            .expect("B is read in place only by a kernel with an in-place variant");
        assert!(
            T::GROUP == 1
                && a.len() >= k * self.mr
                && (1..=self.nr).contains(&cols)
                && (k == 0 || b.len() >= (cols - 1) * ldb + k)
        );
        let (out, ldo, store) = self.dest(cols, dest);
        // SAFETY: the lengths were checked above (column j < cols lies in
        // `b` from j * ldb for k elements), `dest` was checked by
        // `Self::dest`, and the kernel's ISA runs here (`Kernel::all` hands
        // out no other).
        unsafe { direct(k, a.as_ptr(), b.as_ptr(), ldb, cols, out, ldo, store) };
    }

    /// Runs it on packed panels: `a` is `groups x mr x G`, `b` is `groups
    /// x cols x G` (a panel of `cols` columns), into `dest`, where only the
    /// first `rows` rows of the tile are wanted (a kernel may skip the
    /// vectors of rows past them, leaving those rows of `dest` as they
    /// were).
    pub(crate) fn run(
        &self,
        groups: usize,
        a: &[T],
        b: &[T],
        rows: usize,
        cols: usize,
        dest: Dest<'_, T::Acc>,
    ) {
        let g = T::GROUP;
        assert!(
            a.len() >= groups * self.mr * g
                && b.len() >= groups * cols * g
                && (1..=self.mr).contains(&rows)
                && (1..=self.nr).contains(&cols)
        );
        let (out, ldo, store) = self.dest(cols, dest);
        // SAFETY: the lengths were checked above and `dest` by
        // `Self::dest`; `Kernel::all` (the only way to a kernel outside
        // this module) hands out only kernels whose ISA this CPU runs.
        unsafe { (self.run)(groups, a.as_ptr(), b.as_ptr(), rows, cols, out, ldo, store) }
    }

    /// `dest` as the kernels take it, checked: a buffer with room for the
    /// whole tile, or a tile of C exactly `mr` rows by `cols` columns.
    fn dest(&self, cols: usize, dest: Dest<'_, T::Acc>) -> (*mut T::Acc, usize, Store) {
        match dest {
            Dest::Buffer(tile) => {
                assert!(tile.len() >= self.mr * self.nr);
                (tile.as_mut_ptr(), self.mr, Store::Set)
            }
            Dest::C(tile, store) => {
                assert!(tile.rows() == self.mr && tile.cols() == cols);
                (tile.ptr(), tile.ld(), store)
            }
        }
    }
}

/// A number C is made of: the accumulator and output of a product.
pub trait Scalar:
    Copy
    + Send
    + Sync
    + PartialEq
    + PartialOrd
    + Default
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + 'static
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
}

impl Scalar for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}

impl Scalar for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}

impl Scalar for half::f16 {
    const ZERO: Self = half::f16::ZERO;
    const ONE: Self = half::f16::ONE;
}

impl Scalar for i32 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
}

/// An element type A and B are made of.
///
/// # Safety
/// Plain bits: no padding bytes, any value's bytes, moved elsewhere, are
/// that value (packing moves a group's bytes as one unit), all-zero bytes
/// are a value, and its alignment is at most 8 (packing buffers are kept
/// as bytes between products).
pub unsafe trait Element: Copy + Send + Sync + 'static {
    /// What its products accumulate in, and C is made of.
    type Acc: Scalar;
    /// Consecutive depths one step of a kernel takes together: 1, or 2
    /// for bf16 (`vdpbf16ps` adds the products of a pair into one lane).
    const GROUP: usize;
    /// The zero padding is made of.
    const PAD: Self;
    /// Its name in results (`f64`, `f32`, `bf16`).
    const NAME: &'static str;
    /// Every kernel for it, the portable one first, best last.
    fn kernels() -> &'static [Kernel<Self>];
    /// What packing stores for an element of A (int8: its bits plus 128,
    /// the unsigned side `vpdpbusd` wants).
    fn pack_a(x: Self) -> Self {
        x
    }
    /// The bits [`Element::pack_a`] flips in every byte of an element (0:
    /// A is stored as it is), so packing may move A's bytes a vector at a
    /// time.
    const A_FLIP: u8 = 0;
    /// Whether a product's tiles need [`Element::correct`]'s correction.
    const CORRECTED: bool = false;
    /// The correction the stored A needs (when [`Element::CORRECTED`]),
    /// for each column of a packed micro-panel of B (`width` columns, in
    /// `order`) into `out[..width]`: added to the tile's columns. int8's A
    /// was stored 128 too high: `-128 Σ b`.
    fn correct(_b_panel: &[Self], _width: usize, _order: PanelOrder, _out: &mut [Self::Acc]) {}
}

// SAFETY: plain bits (a f64 has no padding).
unsafe impl Element for f64 {
    type Acc = f64;
    const GROUP: usize = 1;
    const PAD: Self = 0.0;
    const NAME: &'static str = "f64";
    fn kernels() -> &'static [Kernel<Self>] {
        &F64
    }
}

// SAFETY: plain bits (a f32 has no padding).
unsafe impl Element for f32 {
    type Acc = f32;
    const GROUP: usize = 1;
    const PAD: Self = 0.0;
    const NAME: &'static str = "f32";
    fn kernels() -> &'static [Kernel<Self>] {
        &F32[..]
    }
}

// SAFETY: plain bits (a f16 is a u16).
unsafe impl Element for half::f16 {
    type Acc = half::f16;
    const GROUP: usize = 1;
    const PAD: Self = half::f16::ZERO;
    const NAME: &'static str = "f16";
    fn kernels() -> &'static [Kernel<Self>] {
        &F16
    }
}

/// A bfloat16: the top half of an fp32's bits (sign, 8 exponent bits, 7
/// of the mantissa). Products of two are exact in fp32; the engine adds
/// them in fp32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(transparent)]
pub struct Bf16(pub u16);

impl Bf16 {
    /// The nearest bf16 to `x` (ties to even).
    pub fn from_f32(x: f32) -> Self {
        let bits = x.to_bits();
        Bf16((bits.wrapping_add(0x7FFF + ((bits >> 16) & 1)) >> 16) as u16)
    }

    /// The fp32 it stands for (exact).
    pub fn to_f32(self) -> f32 {
        f32::from_bits(u32::from(self.0) << 16)
    }
}

// SAFETY: plain bits (a Bf16 has no padding).
unsafe impl Element for Bf16 {
    type Acc = f32;
    const GROUP: usize = 2;
    const PAD: Self = Bf16(0);
    const NAME: &'static str = "bf16";
    fn kernels() -> &'static [Kernel<Self>] {
        &BF16
    }
}

/// An IEEE binary16 multiplied as fp32: widened exactly as a kernel loads
/// it (F16C's `vcvtph2ps`), products and sums in fp32, as llama.cpp
/// multiplies fp16 weights on a CPU. Unlike [`struct@half::f16`]'s kernels
/// (AVX512_FP16, fp16 accumulators), nothing is rounded to fp16 but the
/// operands: half the bytes of fp32 to read, fp32's accuracy in the sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(transparent)]
pub struct Half(pub u16);

impl Half {
    /// The nearest fp16 to `x` (ties to even; past fp16's range, infinity).
    pub fn from_f32(x: f32) -> Self {
        Half(half::f16::from_f32(x).to_bits())
    }

    /// The fp32 it stands for (exact).
    pub fn to_f32(self) -> f32 {
        half::f16::from_bits(self.0).to_f32()
    }
}

// SAFETY: plain bits (a Half has no padding).
unsafe impl Element for Half {
    type Acc = f32;
    const GROUP: usize = 1;
    const PAD: Self = Half(0);
    const NAME: &'static str = "f16>f32";
    fn kernels() -> &'static [Kernel<Self>] {
        &HALF
    }
}

// SAFETY: plain bits (a i8 has no padding).
unsafe impl Element for i8 {
    type Acc = i32;
    const GROUP: usize = 4;
    const PAD: Self = 0;
    const NAME: &'static str = "i8";
    const A_FLIP: u8 = 0x80;
    fn kernels() -> &'static [Kernel<Self>] {
        &I8
    }
    fn pack_a(x: Self) -> Self {
        (x as u8 ^ 0x80) as i8
    }
    const CORRECTED: bool = true;
    fn correct(b_panel: &[Self], width: usize, order: PanelOrder, out: &mut [i32]) {
        if order == PanelOrder::Chunks {
            // Chunks of s steps: column j's 4s bytes side by side in each.
            out[..width].fill(0);
            for chunk in b_panel.chunks(crate::pack::CHUNK * width * 4) {
                let s = chunk.len() / (width * 4);
                for (o, run) in out.iter_mut().zip(chunk.chunks_exact(s * 4)) {
                    *o -= 128 * run.iter().map(|&b| i32::from(b)).sum::<i32>();
                }
            }
            return;
        }
        // One sum per byte of a step (column j's four depths at 4j..4j+4),
        // the steps added lane by lane, the four of each column added
        // last. No kernel is wider than 32 columns (AMX's).
        let bytes = width * 4;
        let mut sums = [0i32; 128];
        assert!(bytes <= sums.len(), "a panel of {width} columns");
        for step in b_panel.chunks_exact(bytes) {
            for (sum, &b) in sums[..bytes].iter_mut().zip(step) {
                *sum += i32::from(b);
            }
        }
        for (o, four) in out[..width].iter_mut().zip(sums.chunks_exact(4)) {
            *o = -128 * four.iter().sum::<i32>();
        }
    }
}

/// A thread's share of a product on a kernel: [`Kernel::finish`] when it
/// ends, however it ends ([`Kernel::share`]).
pub(crate) struct Share<'k, T: Element>(&'k Kernel<T>);

impl<T: Element> Drop for Share<'_, T> {
    fn drop(&mut self) {
        self.0.finish();
    }
}
