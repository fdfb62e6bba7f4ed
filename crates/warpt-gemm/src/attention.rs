//! Attention's two products for one sequence and head in bf16 on the AMX
//! tiles, sixteen queries at a time: the scores `Q·Kᵀ` of a block of
//! queries against every key, then, once the caller has turned them into
//! weights (its softmax's exponentials in fp32, rounded to bf16), their
//! context `P·V`. A head's keys and values are laid out as tiles once
//! ([`Head`]); a block of queries' scores are 16 rows of the sequence's
//! length, never more.
//!
//! The engine's products ([`crate::gemm`]) pay a packing and a driver's
//! setup per call: at MiniLM's 128 tokens and 32 dimensions a head's two
//! products are 64 tile products each, and through the engine attention
//! was 28% of a bf16 forward pass.
//!
//! The sequence is padded to a multiple of 32 (a pair-interleaved tile's
//! depth) and the head's dimension too: padded keys score 0 (the caller's
//! mask drops them), padded values and dimensions are 0.

use std::marker::PhantomData;

use crate::kernel::Bf16;

/// Bytes of one tile (16 rows of 64).
const TILE: usize = 1024;
/// A tile's u32 pairs.
const PAIRS: usize = TILE / 4;

/// `n` rounded up to a multiple of 32.
fn padded(n: usize) -> usize {
    n.div_ceil(32) * 32
}

/// Panics unless `x` holds `seq` rows of `dim`, `stride` apart.
fn check(x: &[Bf16], stride: usize, seq: usize, dim: usize) {
    assert!(seq > 0 && dim > 0, "rows of {seq} x {dim}");
    assert!(stride >= dim, "rows of {dim} values {stride} apart");
    assert!(
        x.len() >= (seq - 1) * stride + dim,
        "{seq} rows of {dim} values {stride} apart in {}",
        x.len()
    );
}

/// Two bf16 as one 4-byte pair, `lo` at the lower address.
fn pair(lo: Bf16, hi: Bf16) -> u32 {
    lo.0 as u32 | (hi.0 as u32) << 16
}

/// A head's keys and values laid out as the tiles' right-hand operands.
///
/// The keys for the scores: for each block of 16 keys and each 32 of the
/// head's dimensions, a tile whose row `p` holds the dimensions `2p, 2p +
/// 1` of each key (the keys' rows transposed, a pair at a time); tile
/// (block `kb`, step `s`) is the `(s·blocks + kb)`th. The values for the
/// context: for each 32 keys and each 16 of the head's dimensions, a tile
/// whose row `p` holds keys `2p, 2p + 1`'s values of each dimension (two
/// rows interleaved); tile (dimensions `nb`, step `t`) is the
/// `(t·dim_tiles + nb)`th.
#[derive(Debug, Default, Clone)]
pub struct Head {
    keys: Vec<u32>,
    values: Vec<u32>,
    seq: usize,
    dim: usize,
}

impl Head {
    /// Lays out `seq` keys and values of `dim` as tiles, token `j`'s at
    /// `k[j·stride..][..dim]` and `v[j·stride..][..dim]` (a head's columns
    /// of the QKV product), reusing this value's storage.
    ///
    /// # Panics
    /// If `k` or `v` is too short for them, `stride < dim`, or `seq` or
    /// `dim` is 0.
    pub fn pack(&mut self, k: &[Bf16], v: &[Bf16], stride: usize, seq: usize, dim: usize) {
        check(k, stride, seq, dim);
        check(v, stride, seq, dim);
        (self.seq, self.dim) = (seq, dim);
        let (len, depth) = (self.len(), self.depth());
        let blocks = len / 16;
        self.keys.clear();
        self.keys.resize(blocks * (depth / 32) * PAIRS, 0);
        let at = |j: usize, i: usize| k.get(j * stride + i).filter(|_| i < dim).copied();
        // A tile at a time: its row p is the pair p of 16 keys, written
        // in order, the keys' rows read across (16 of them stay in L1).
        for kb in 0..seq.div_ceil(16) {
            let keys = (seq - 16 * kb).min(16);
            for s in 0..depth / 32 {
                let tile = &mut self.keys[(s * blocks + kb) * PAIRS..][..PAIRS];
                for (p, row) in tile.chunks_exact_mut(16).enumerate() {
                    let i = 32 * s + 2 * p;
                    if i >= dim {
                        break;
                    }
                    for (c, o) in row[..keys].iter_mut().enumerate() {
                        let j = 16 * kb + c;
                        *o = pair(k[j * stride + i], at(j, i + 1).unwrap_or_default());
                    }
                }
            }
        }
        let dim_tiles = depth / 16;
        self.values.clear();
        self.values.resize((len / 32) * dim_tiles * PAIRS, 0);
        let zero = vec![Bf16(0); dim];
        for tp in 0..seq.div_ceil(2) {
            let lo = &v[2 * tp * stride..][..dim];
            let hi = if 2 * tp + 1 < seq {
                &v[(2 * tp + 1) * stride..][..dim]
            } else {
                &zero[..]
            };
            let (t, p) = (tp / 16, tp % 16);
            for (nb, (lo, hi)) in lo.chunks(16).zip(hi.chunks(16)).enumerate() {
                let at = ((t * dim_tiles + nb) * 16 + p) * 16;
                for (o, (l, h)) in self.values[at..].iter_mut().zip(lo.iter().zip(hi)) {
                    *o = pair(*l, *h);
                }
            }
        }
    }

    /// The tokens, padded to a multiple of 32: a row of scores.
    pub fn len(&self) -> usize {
        padded(self.seq)
    }

    /// Whether nothing was packed yet.
    pub fn is_empty(&self) -> bool {
        self.seq == 0
    }

    /// The head's dimension padded to a multiple of 32: a query's row, a
    /// row of context.
    pub fn depth(&self) -> usize {
        padded(self.dim)
    }
}

/// This thread's AMX tiles, held for attention's products: made where
/// the CPU and the process run AMX, released when dropped. Not `Send`:
/// the tiles are a thread's.
#[derive(Debug)]
pub struct Tiles {
    _thread: PhantomData<*const ()>,
}

impl Tiles {
    /// The tiles, or `None` where this CPU (or Linux's grant to this
    /// process) has no AMX.
    pub fn new() -> Option<Tiles> {
        // Lazily: `then_some` would build the value first and, where AMX
        // is missing, drop it, whose `tilerelease` is an illegal
        // instruction there (every bf16 attention crashed on Zen 4).
        crate::Isa::Amx.available().then(|| Tiles {
            _thread: PhantomData,
        })
    }

    /// The scores of 16 queries (`q`: 16 rows of `head.depth()` bf16, the
    /// head's dimensions then zeros) against every key: `out`, 16 rows of
    /// `head.len()` fp32 (0 for the padded keys).
    ///
    /// # Panics
    /// If `head` is empty or a slice's length is not the one it should be.
    pub fn scores(&self, q: &[Bf16], head: &Head, out: &mut [f32]) {
        self.scores_first(q, head, head.len(), out);
    }

    /// [`Self::scores`] against the first `keys` keys only (a multiple of
    /// 32 up to `head.len()`: a causal block's queries see no later key):
    /// `out`, 16 rows of `keys` fp32.
    ///
    /// # Panics
    /// If `head` is empty, `keys` is not such a count, or a slice's length
    /// is not the one it should be.
    pub fn scores_first(&self, q: &[Bf16], head: &Head, keys: usize, out: &mut [f32]) {
        assert!(!head.is_empty(), "a head packed");
        let (len, depth) = (head.len(), head.depth());
        assert!(
            keys > 0 && keys.is_multiple_of(32) && keys <= len,
            "{keys} of {len} keys"
        );
        // Step s's tiles start at s·(len / 16): the first keys / 16 of them.
        self.product(q, depth, &head.keys, len / 16, out, keys);
    }

    /// The context of 16 queries from their weights (`p`: 16 rows of
    /// `head.len()` bf16, 0 on the padded keys): `out`, 16 rows of
    /// `head.depth()` fp32 (the head's dimensions, then zeros).
    ///
    /// # Panics
    /// If `head` is empty or a slice's length is not the one it should be.
    pub fn context(&self, p: &[Bf16], head: &Head, out: &mut [f32]) {
        self.context_first(p, head, head.len(), out);
    }

    /// [`Self::context`] from the weights of the first `keys` keys only
    /// (`p`: 16 rows of `keys` bf16; `keys` a multiple of 32 up to
    /// `head.len()`).
    ///
    /// # Panics
    /// If `head` is empty, `keys` is not such a count, or a slice's length
    /// is not the one it should be.
    pub fn context_first(&self, p: &[Bf16], head: &Head, keys: usize, out: &mut [f32]) {
        assert!(!head.is_empty(), "a head packed");
        let (len, depth) = (head.len(), head.depth());
        assert!(
            keys > 0 && keys.is_multiple_of(32) && keys <= len,
            "{keys} of {len} keys"
        );
        // The values' steps are 32 keys each: the first keys / 32 of them.
        self.product(p, keys, &head.values, depth / 16, out, depth);
    }

    /// `out` (16 rows of `cols` fp32) = `a` (16 rows of `width` bf16) times
    /// `b`, `width / 32` steps of tiles laid out as [`Head`]'s, step `s`'s
    /// first tile the `s·per_step`th, `cols / 16` of them read.
    fn product(
        &self,
        a: &[Bf16],
        width: usize,
        b: &[u32],
        per_step: usize,
        out: &mut [f32],
        cols: usize,
    ) {
        assert!(
            width >= 32 && cols >= 32 && width.is_multiple_of(32) && cols.is_multiple_of(32),
            "whole tiles: {width} deep, {cols} wide"
        );
        assert_eq!(a.len(), 16 * width, "16 rows of {width}");
        assert_eq!(out.len(), 16 * cols, "16 rows of {cols}");
        let steps = width / 32;
        assert!(
            cols / 16 <= per_step && b.len() >= ((steps - 1) * per_step + cols / 16) * PAIRS,
            "the tiles"
        );
        // SAFETY: AMX runs (this value exists); a holds 16 rows of
        // `steps` steps, b that many steps of `per_step` tiles (1 KiB
        // each) of which the first `cols / 16` are read, out 16 rows of
        // `cols` fp32, all checked above.
        unsafe {
            rows16(&Operands {
                steps,
                tiles: cols / 16,
                a: a.as_ptr().cast(),
                lda: 2 * width,
                b: b.as_ptr().cast(),
                b_step: TILE * per_step,
                c: out.as_mut_ptr().cast(),
                ldc: 4 * cols,
            })
        }
    }
}

impl Drop for Tiles {
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the value was made, so AMX runs.
        unsafe {
            crate::kernel::amx_rows::release()
        };
    }
}

/// One call's operands of the tile products (the layout of
/// `kernel::amx_rows`): 16 rows of A, `steps` deep, times `tiles` tiles
/// of B into 16 rows of C.
// (Read by the x86-64 kernel only: elsewhere no Tiles exist to call it.)
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) struct Operands {
    /// Steps of 32 depths.
    pub steps: usize,
    /// Tiles of C (an even number).
    pub tiles: usize,
    /// A's first row: step s at `a + 64·s`.
    pub a: *const u8,
    /// Bytes from one row of A to the next.
    pub lda: usize,
    /// B's first tile: tile i of step s at `b + 1024·i + b_step·s`.
    pub b: *const u8,
    /// Bytes from one step of B to the next.
    pub b_step: usize,
    /// C's first row: tile i at `c + 64·i`.
    pub c: *mut u8,
    /// Bytes from one row of C to the next.
    pub ldc: usize,
}

/// The tile products, where they exist.
///
/// # Safety
/// As `kernel::amx_rows::rows16`.
unsafe fn rows16(o: &Operands) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's promise.
    unsafe {
        crate::kernel::amx_rows::rows16(o)
    };
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = o;
        unreachable!("no Tiles are made without AMX");
    }
}

#[cfg(test)]
mod tests;
