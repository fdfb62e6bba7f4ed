//! Products on GGML's quantized blocks without an f32 copy of the weights:
//! `y = x · wᵀ` where `w` (`rows × k`) is in q8_0 or q4_0 blocks (32
//! weights sharing one f16 scale) and `x` (`n × k`, f32) is quantized per
//! call to 8-bit blocks of its own, as llama.cpp quantizes activations.
//! Each block pair is an integer dot product of 32 terms, scaled once by
//! the product of the two blocks' scales: the arithmetic llama.cpp does,
//! in the same order per block, so both give the same numbers to f32
//! rounding.
//!
//! The weights are repacked at load ([`QMatrix`]): sixteen rows at a time,
//! each block of the sixteen rows is one record of their sixteen scales
//! and then their weights four consecutive values per row side by side,
//! the order an integer dot product instruction (`vpdpbusd`: four u8 × i8
//! products summed into each of sixteen i32 lanes) reads them. Weights are
//! stored unsigned (q8_0's `w + 128`, q4_0's nibbles as GGUF has them,
//! `w + 8`), the activations signed; the offset is taken back once per
//! block with the activations' block sum. One layout serves decode steps
//! (one row of `x`: bound by reading the weights, which stay 4-8x smaller
//! than f32) and prefills (many rows: each record is read once per four
//! tokens, from cache).
//!
//! - [`QMatrix`]: the repacked weights;
//! - [`QActs`]: the activations quantized (`acts`);
//! - `portable`: the product in plain Rust, for any CPU;
//! - `x86`: AVX-512 VNNI and AVX2 tiles (x86-64 only), `avx2_pair` the
//!   AVX2 tile of two activation rows in assembly;
//! - `neon`: the NEON tile (aarch64 only).

mod acts;
#[cfg(target_arch = "x86_64")]
mod avx2_pair;
#[cfg(target_arch = "aarch64")]
mod neon;
mod portable;
#[cfg(target_arch = "x86_64")]
mod x86;

use std::ops::Range;

use thiserror::Error;

use crate::isa::Isa;

pub use acts::QActs;

/// Values per block, in the weights and in the activations.
pub const BLOCK: usize = 32;

/// Rows per record: one AVX-512 register of i32 sums.
pub const GROUP: usize = 16;

/// A GGML block type the engine multiplies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QType {
    /// 32 signed 8-bit weights and an f16 scale (34 bytes).
    Q8_0,
    /// 32 4-bit weights (`nibble - 8`) and an f16 scale (18 bytes).
    Q4_0,
}

impl QType {
    /// Bytes of one GGML block.
    pub fn ggml_block_bytes(self) -> usize {
        match self {
            QType::Q8_0 => 2 + BLOCK,
            QType::Q4_0 => 2 + BLOCK / 2,
        }
    }

    /// Bytes of one repacked record's weights (sixteen rows of a block).
    fn weight_bytes(self) -> usize {
        match self {
            QType::Q8_0 => GROUP * BLOCK,
            QType::Q4_0 => GROUP * BLOCK / 2,
        }
    }

    /// Bytes of one record: sixteen f16 scales, then the weights.
    fn record_bytes(self) -> usize {
        2 * GROUP + self.weight_bytes()
    }

    /// What the stored unsigned weight exceeds the weight by.
    fn offset(self) -> i32 {
        match self {
            QType::Q8_0 => 128,
            QType::Q4_0 => 8,
        }
    }
}

/// What cannot be repacked.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum QuantError {
    /// `k` is not a whole number of blocks.
    #[error("{k} columns are not a whole number of {BLOCK}-value blocks")]
    Columns {
        /// The columns given.
        k: usize,
    },
    /// The bytes are not `rows × k / 32` blocks.
    #[error("{got} bytes of {qtype:?} blocks, {want} expected for {rows} x {k}")]
    Length {
        /// The block type.
        qtype: QType,
        /// Rows given.
        rows: usize,
        /// Columns given.
        k: usize,
        /// Bytes given.
        got: usize,
        /// Bytes the shape needs.
        want: usize,
    },
}

/// The instruction set a product runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QKernel {
    /// Plain Rust.
    Portable,
    /// AVX2's `vpmaddubsw` (x86-64-v3).
    Avx2,
    /// AVX-512 VNNI's `vpdpbusd`.
    Avx512Vnni,
    /// aarch64's NEON (`smull`, `sadalp`).
    Neon,
}

impl QKernel {
    /// Every kernel, best last.
    const ALL: [QKernel; 4] = [
        QKernel::Portable,
        QKernel::Avx2,
        QKernel::Avx512Vnni,
        QKernel::Neon,
    ];

    /// Whether this CPU runs it (feature detection's cached flags: cheap
    /// enough for every product).
    pub fn available(self) -> bool {
        match self {
            QKernel::Avx2 => Isa::Avx2.available() && f16c(),
            other => other.isa().available(),
        }
    }

    /// Every kernel this CPU runs, best last.
    pub fn all() -> Vec<QKernel> {
        Self::ALL.into_iter().filter(|k| k.available()).collect()
    }

    /// The fastest kernel this CPU runs.
    pub fn best() -> QKernel {
        Self::ALL
            .into_iter()
            .rev()
            .find(|k| k.available())
            .unwrap_or(QKernel::Portable)
    }

    /// The instruction set, as results name it (`details.isa`).
    pub fn isa(self) -> Isa {
        match self {
            QKernel::Portable => Isa::Portable,
            QKernel::Avx2 => Isa::Avx2,
            QKernel::Avx512Vnni => Isa::Avx512Vnni,
            QKernel::Neon => Isa::Neon,
        }
    }
}

/// Whether the CPU converts f16 (every AVX2 CPU made does; the AVX2
/// kernel reads the scales with it).
fn f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("f16c");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// A `rows × k` weight matrix in GGML blocks, repacked (see the module
/// doc): `groups × blocks` records, group-major, the last group's rows
/// past `rows` zero.
pub struct QMatrix {
    qtype: QType,
    rows: usize,
    k: usize,
    data: Vec<u8>,
    /// Whether a q8_0 weight is -128, which AVX2's sign trick cannot
    /// negate (llama.cpp's quantizer never writes one; a file may).
    has_min: bool,
}

impl QMatrix {
    /// Repacks `bytes`, GGML's `rows × k / 32` blocks of `qtype` in row
    /// order, as a GGUF file stores a weight matrix.
    pub fn from_ggml(
        qtype: QType,
        bytes: &[u8],
        rows: usize,
        k: usize,
    ) -> Result<Self, QuantError> {
        if !k.is_multiple_of(BLOCK) {
            return Err(QuantError::Columns { k });
        }
        let blocks = k / BLOCK;
        let want = rows * blocks * qtype.ggml_block_bytes();
        if bytes.len() != want {
            return Err(QuantError::Length {
                qtype,
                rows,
                k,
                got: bytes.len(),
                want,
            });
        }
        let groups = rows.div_ceil(GROUP);
        let rec = qtype.record_bytes();
        // Padding rows: scale 0, weights at the offset (zero).
        let pad = match qtype {
            QType::Q8_0 => 0x80,
            QType::Q4_0 => 0x88,
        };
        let mut data = vec![pad; groups * blocks * rec];
        let mut has_min = false;
        let src_row = blocks * qtype.ggml_block_bytes();
        for (g, group) in data.chunks_exact_mut(blocks * rec).enumerate() {
            for (b, record) in group.chunks_exact_mut(rec).enumerate() {
                let (scales, weights) = record.split_at_mut(2 * GROUP);
                scales.fill(0);
                for r in 0..GROUP.min(rows - g * GROUP) {
                    let at = (g * GROUP + r) * src_row + b * qtype.ggml_block_bytes();
                    let block = &bytes[at..at + qtype.ggml_block_bytes()];
                    scales[2 * r..2 * r + 2].copy_from_slice(&block[..2]);
                    let mut w = [0u8; BLOCK];
                    match qtype {
                        QType::Q8_0 => {
                            for (o, q) in w.iter_mut().zip(&block[2..]) {
                                has_min |= *q == 0x80;
                                *o = q ^ 0x80;
                            }
                        }
                        QType::Q4_0 => {
                            // Low nibbles are values 0-15, high 16-31.
                            for (j, q) in block[2..].iter().enumerate() {
                                w[j] = q & 0x0f;
                                w[j + 16] = q >> 4;
                            }
                        }
                    }
                    place(qtype, weights, r, &w);
                }
            }
        }
        Ok(QMatrix {
            qtype,
            rows,
            k,
            data,
            has_min,
        })
    }

    /// Output features.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Input features.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The block type.
    pub fn qtype(&self) -> QType {
        self.qtype
    }

    /// Groups of [`GROUP`] rows: the unit a product's rows are split in.
    pub fn groups(&self) -> usize {
        self.rows.div_ceil(GROUP)
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.data.len()
    }

    /// The fastest kernel this CPU runs on this matrix.
    pub fn kernel(&self) -> QKernel {
        QKernel::ALL
            .into_iter()
            .rev()
            .find(|k| self.runs_on(*k))
            .unwrap_or(QKernel::Portable)
    }

    /// Whether `kernel` multiplies this matrix exactly (and this CPU runs it).
    pub fn runs_on(&self, kernel: QKernel) -> bool {
        kernel.available()
            && !(kernel == QKernel::Avx2 && self.qtype == QType::Q8_0 && self.has_min)
    }

    /// `x · wᵀ` for the rows of groups `groups` (`acts.n() × rows'`,
    /// row-major, rows' the rows those groups hold), on the calling
    /// thread with the best kernel: a share of a product split across
    /// threads by groups.
    ///
    /// # Panics
    /// If `acts` is not `k` wide, `groups` not within [`Self::groups`] or
    /// `out` not `acts.n()` times the groups' rows.
    pub fn product(&self, acts: &QActs, groups: Range<usize>, out: &mut [f32]) {
        self.product_with(self.kernel(), acts, groups, out);
    }

    /// [`Self::product`] on `kernel`, which must be one [`Self::runs_on`].
    ///
    /// # Panics
    /// As [`Self::product`], and if the matrix does not run on `kernel`.
    pub fn product_with(
        &self,
        kernel: QKernel,
        acts: &QActs,
        groups: Range<usize>,
        out: &mut [f32],
    ) {
        assert!(self.runs_on(kernel), "{kernel:?} on {:?}", self.qtype);
        assert_eq!(
            acts.k, self.k,
            "activations {} wide, weights {}",
            acts.k, self.k
        );
        assert!(groups.start <= groups.end && groups.end <= self.groups());
        let first = groups.start * GROUP;
        let width = (groups.end * GROUP).min(self.rows).saturating_sub(first);
        assert_eq!(out.len(), acts.n * width, "{} rows of {width}", acts.n);
        if width == 0 || acts.n == 0 {
            return;
        }
        let panel = Panel {
            qtype: self.qtype,
            blocks: self.k / BLOCK,
            data: &self.data,
        };
        // One activation row (a decode step): as many groups a tile as
        // `decode_groups` says; more rows: two.
        let most = if acts.n == 1 {
            decode_groups(kernel, self.qtype, panel.blocks)
        } else {
            2
        };
        let mut g = groups.start;
        while g < groups.end {
            let rg = (groups.end - g).min(most);
            let mut t = 0;
            while t < acts.n {
                let tn = (acts.n - t).min(MAX_TOKENS);
                let mut tile = [[0f32; MAX_GROUPS * GROUP]; MAX_TOKENS];
                let span = Span {
                    panel: &panel,
                    acts,
                    g,
                    rg,
                    t0: t,
                    tn,
                };
                run(kernel, span, &mut tile);
                let rows = ((g + rg) * GROUP).min(self.rows) - g * GROUP;
                let col = g * GROUP - first;
                for (i, row) in tile.iter().take(tn).enumerate() {
                    out[(t + i) * width + col..][..rows].copy_from_slice(&row[..rows]);
                }
                t += tn;
            }
            g += rg;
        }
    }
}

/// Row groups a tile covers at most (up to four for one activation row,
/// [`decode_groups`]; two for more).
pub(crate) const MAX_GROUPS: usize = 4;

/// Bytes of a group's records below which a run of them is short
/// ([`decode_groups`]).
const SHORT_RUN: usize = 16 << 10;

/// Row groups a decode step's tile (one activation row) multiplies at
/// once on `kernel`, for records `blocks` long. Several let each broadcast
/// of the activations feed several products, but each group's records are
/// a run of memory of their own, so the tile reads that many runs side by
/// side, and where the runs are short that reads DRAM at about half the
/// rate one run does. On AVX-512 VNNI q4_0 with runs under
/// [`SHORT_RUN`] takes one group at a time: `--example qrate q4_0` on one
/// core of a Zen 4 host, from DRAM, one group against four: k = 768 (runs
/// of 6.9 KiB) 16-29 against 12-16 GB/s, k = 1536 (13.8 KiB) 23-28
/// against 17-18; but k = 2048 (18 KiB) 9-12 against 18-20, 3072 level,
/// 4096 20 against 23. `llm_infer` q4_0 (k = 768 and 1536) at prompt 128
/// ran its decode steps 1.17x faster (medians of two runs of eight
/// alternating rounds, two threads). q8_0 keeps four: one group at a time
/// ran its decode steps 0.91x as fast (six rounds), its tile lighter per
/// byte. The AVX2 and NEON tiles take their groups one after another
/// whatever this says.
fn decode_groups(kernel: QKernel, qtype: QType, blocks: usize) -> usize {
    let run = blocks * qtype.record_bytes();
    match (kernel, qtype) {
        (QKernel::Avx512Vnni, QType::Q4_0) if run < SHORT_RUN => 1,
        _ => MAX_GROUPS,
    }
}

/// Activation rows a tile covers at most.
pub(crate) const MAX_TOKENS: usize = 4;

/// A tile's result: `tokens × (groups · 16)`, token-major.
pub(crate) type Tile = [[f32; MAX_GROUPS * GROUP]; MAX_TOKENS];

/// The repacked records, as kernels read them.
pub(crate) struct Panel<'a> {
    pub(crate) qtype: QType,
    pub(crate) blocks: usize,
    pub(crate) data: &'a [u8],
}

impl Panel<'_> {
    /// Group `g`'s record of block `b`.
    pub(crate) fn record(&self, g: usize, b: usize) -> &[u8] {
        let rec = self.qtype.record_bytes();
        &self.data[(g * self.blocks + b) * rec..][..rec]
    }
}

/// What one tile computes: groups `g..g + rg` of `panel` against
/// activation rows `t0..t0 + tn` of `acts`.
#[derive(Clone, Copy)]
pub(crate) struct Span<'a> {
    pub(crate) panel: &'a Panel<'a>,
    pub(crate) acts: &'a QActs,
    pub(crate) g: usize,
    pub(crate) rg: usize,
    pub(crate) t0: usize,
    pub(crate) tn: usize,
}

/// `span` into `tile` by `kernel`.
fn run(kernel: QKernel, span: Span, tile: &mut Tile) {
    match kernel {
        QKernel::Portable => portable::tile(span, tile),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `product_with` checked the CPU runs the kernel (and, for
        // AVX2 on q8_0, that no weight is -128); the ranges are within the
        // panel and the activations.
        QKernel::Avx512Vnni => unsafe { x86::vnni_tile(span, tile) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        QKernel::Avx2 => unsafe { x86::avx2_tile(span, tile) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: as above.
        QKernel::Neon => unsafe { neon::neon_tile(span, tile) },
        #[allow(unreachable_patterns)]
        _ => portable::tile(span, tile),
    }
}

/// Each group of `rg` and each pair of the `tn` rows (one row at an odd
/// end) as `f(group, first row, two rows)`: how the 8- and 4-lane
/// kernels walk a tile, one group by two rows at a time.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn by_pairs(rg: usize, tn: usize, mut f: impl FnMut(usize, usize, bool)) {
    for i in 0..rg {
        for t in (0..tn).step_by(2) {
            f(i, t, tn - t >= 2);
        }
    }
}

/// Writes row `r`'s 32 unsigned weights `w` of one block into a record's
/// weight bytes: for q8_0, quad `q` (values `4q..4q+4`) of row `r` at
/// `64q + 4r`; for q4_0, quads `q` and `q + 4` share the bytes at
/// `64q + 4r` (`q < 4`), low and high nibble.
fn place(qtype: QType, weights: &mut [u8], r: usize, w: &[u8; BLOCK]) {
    for q in 0..BLOCK / 4 {
        for j in 0..4 {
            let v = w[4 * q + j];
            match qtype {
                QType::Q8_0 => weights[64 * q + 4 * r + j] = v,
                QType::Q4_0 => {
                    let at = &mut weights[64 * (q % 4) + 4 * r + j];
                    *at = if q < 4 {
                        (*at & 0xf0) | v
                    } else {
                        (*at & 0x0f) | (v << 4)
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
