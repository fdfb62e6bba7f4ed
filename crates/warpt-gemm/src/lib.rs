//! warpt's GEMM engine: `C = alpha·A·B + beta·C`, the product behind
//! linpack, `micro/gemm` and the ML suites.
//!
//! The classic five loops around a register-tiled microkernel (Goto's
//! method, as BLIS, OpenBLAS and MKL): B is packed a `KC x NC` block at a
//! time into `NR`-wide micro-panels the threads share, each thread packs
//! its own `MC x KC` blocks of A into `MR`-tall micro-panels, and the
//! microkernel multiplies one micro-panel pair into an `MR x NR` tile held
//! in registers (on AMX, in tile registers: `Cᵀ = Bᵀ·Aᵀ` a 32 x 32 tile
//! at a time, B's panels arranged in chunks of 16 depths). Elements: f64,
//! f32, [`struct@f16`] (AVX512_FP16, fp16 accumulators), [`Half`] (fp16
//! widened to fp32 as it is loaded), [`Bf16`] and i8 (fp32 and int32
//! accumulators). The ISA is detected at run time and the fastest kernel
//! this CPU runs is taken; every kernel is exact to the same rounding
//! bound, and [`Kernel::all`] lists those this CPU can run so tests check
//! each.
//!
//! - [`attention`]: a head's two small products on AMX tiles, sixteen
//!   queries at a time;
//! - [`mat`]: matrix views with any strides (row- or column-major),
//!   checked against their storage;
//! - [`isa`]: what this CPU runs;
//! - [`kernel`]: the microkernels and their blocking, per element and ISA;
//! - [`pack`]: A and B into micro-panels;
//! - [`driver`]: the loops, the split of the work and the tile updates;
//! - [`epilogue`]: a bias, a matrix and a ReLU applied to each tile of C
//!   once it is complete;
//! - [`packed`]: a left operand packed once for many products (an LU
//!   panel, a layer's weights), multiplied by [`gemm_packed`];
//! - [`quant`]: products on GGML's q8_0 and q4_0 blocks, repacked for
//!   integer dot products;
//! - [`simd`]: the work around the products (conversions, transforms) on
//!   this CPU's widest vectors;
//! - `blocking`: block sizes (a packed block's depth, even blocks);
//! - `cache`: the L2 size the blocking is chosen for (x86-64);
//! - `out`: C as the threads write it, a tile at a time;
//! - `prefetch`: cache lines asked for ahead of the tiles that read them;
//! - `tile`: one thread's tile of C, as the microkernels write it;
//! - `scratch`: packing buffers each thread keeps from product to product,
//!   and a packed A's storage, both from cache-line boundaries;
//! - `shared`: what a row-split product's threads share (B's packed
//!   block, the barrier);
//! - `team`: the threads a product runs on.

pub mod attention;
mod blocking;
#[cfg(target_arch = "x86_64")]
mod cache;
pub mod driver;
pub mod epilogue;
pub mod isa;
pub mod kernel;
pub mod mat;
mod out;
pub mod pack;
pub mod packed;
mod prefetch;
pub mod quant;
mod scratch;
mod shared;
pub mod simd;
mod team;
mod tile;

pub use driver::{Error, gemm, gemm_packed, gemm_packed_rows, gemm_packed_rows_then, gemm_with};
pub use epilogue::Epilogue;
pub use half::f16;
pub use isa::Isa;
pub use kernel::{Bf16, Element, Half, Kernel, Scalar};
pub use mat::{MatMut, MatRef};
pub use packed::PackedA;
