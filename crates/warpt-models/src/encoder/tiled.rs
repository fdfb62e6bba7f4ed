//! Attention in bf16 on the AMX tiles ([`warpt_gemm::attention`]): a
//! sequence's rows of the QKV product rounded to bf16 once, then for each
//! head its keys and values laid out as tiles, and sixteen queries at a
//! time their scores, their softmax weights (f32, rounded to bf16 and
//! normalised after the product, as FlashAttention does) and their
//! context, the scores never more than 16 rows.
//!
//! Through the engine's products (a packing and a driver's setup for each
//! of a head's two small products, each head's queries, keys and values
//! read and rounded from the f32 rows on their own) attention took 7 ms
//! of a 25 ms bf16 MiniLM layer at batch 32 x 128 tokens.

use std::cell::RefCell;

use rayon::prelude::*;
use warpt_gemm::Bf16;
use warpt_gemm::attention::{Head, Tiles};
use warpt_gemm::simd::bf16_from_f32;

use crate::fastmath;

/// The heads of a layer.
pub(super) struct Shape {
    /// The model's width: a row of the QKV product holds `3 × hidden`
    /// values (queries, keys, values).
    pub hidden: usize,
    /// Heads.
    pub heads: usize,
    /// A head's dimension.
    pub dim: usize,
    /// The scores' scale, `1 / √dim`.
    pub scale: f32,
}

/// A thread's buffers, kept from head to head.
#[derive(Default)]
struct Scratch {
    /// A sequence's QKV rows in bf16.
    qkv: Vec<Bf16>,
    /// Sixteen queries, each padded to the tiles' depth.
    q: Vec<Bf16>,
    head: Head,
    /// The mask padded to the keys' tiles.
    mask: Vec<f32>,
    scores: Vec<f32>,
    weights: Vec<Bf16>,
    ctx: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The context of every head of `batch` sequences into `out` (`rows ×
/// hidden`, row-major, every value written), from `qkv` (`rows × 3
/// hidden`) and `keep` (1 on real tokens, 0 on padding; `seq` per
/// sequence). `false` (nothing written) where the tiles do not exist.
pub(super) fn attention(
    qkv: &[f32],
    keep: &[f32],
    seq: usize,
    shape: &Shape,
    out: &mut [f32],
) -> bool {
    if Tiles::new().is_none() {
        return false;
    }
    let h = shape.hidden;
    let batch = keep.len() / seq;
    // The tiles are this process's (AMX and Linux's grant, both asked
    // once): they exist on every thread once they exist on this one.
    let tiles = || Tiles::new().expect("AMX runs in this process");
    let rounded = |rows: &[f32], buf: &mut Vec<Bf16>| {
        buf.resize(rows.len(), Bf16(0));
        bf16_from_f32(rows, buf);
    };
    if batch >= rayon::current_num_threads() {
        // A task per sequence: its rows read once, in order, its heads
        // one after another into its own rows of `out`.
        out.par_chunks_mut(seq * h)
            .zip(qkv.par_chunks(seq * 3 * h))
            .zip(keep.par_chunks(seq))
            .for_each(|((out, rows), keep)| {
                let tiles = tiles();
                let mut qkv16 = SCRATCH.with_borrow_mut(|s| std::mem::take(&mut s.qkv));
                rounded(rows, &mut qkv16);
                for head in 0..shape.heads {
                    attend(
                        &tiles,
                        &qkv16,
                        keep,
                        shape,
                        head,
                        &mut out[head * shape.dim..],
                        h,
                    );
                }
                SCRATCH.with_borrow_mut(|s| s.qkv = qkv16);
            });
    } else {
        // Fewer sequences than threads: a task per head, each its
        // context apart, then copied in.
        let mut qkv16 = Vec::new();
        let d = shape.dim;
        for ((out, rows), keep) in out
            .chunks_mut(seq * h)
            .zip(qkv.chunks(seq * 3 * h))
            .zip(keep.chunks(seq))
        {
            rounded(rows, &mut qkv16);
            let heads: Vec<Vec<f32>> = (0..shape.heads)
                .into_par_iter()
                .map(|head| {
                    let mut ctx = vec![0f32; seq * d];
                    attend(&tiles(), &qkv16, keep, shape, head, &mut ctx, d);
                    ctx
                })
                .collect();
            for (t, row) in out.chunks_exact_mut(h).enumerate() {
                for (o, ctx) in row.chunks_exact_mut(d).zip(&heads) {
                    o.copy_from_slice(&ctx[t * d..][..d]);
                }
            }
        }
    }
    true
}

/// One head's context over one sequence: `qkv` its rows of the QKV
/// product in bf16, `keep` its mask; token `t`'s context into
/// `out[t·stride..][..dim]`.
fn attend(
    tiles: &Tiles,
    qkv: &[Bf16],
    keep: &[f32],
    shape: &Shape,
    head: usize,
    out: &mut [f32],
    stride: usize,
) {
    let (h, d) = (shape.hidden, shape.dim);
    let seq = keep.len();
    let at = head * d;
    SCRATCH.with_borrow_mut(|s| {
        s.head
            .pack(&qkv[h + at..], &qkv[2 * h + at..], 3 * h, seq, d);
        let (len, depth) = (s.head.len(), s.head.depth());
        s.mask.clear();
        s.mask.extend_from_slice(keep);
        s.mask.resize(len, 0.0);
        s.q.resize(16 * depth, Bf16(0));
        s.scores.resize(16 * len, 0.0);
        s.weights.resize(16 * len, Bf16(0));
        s.ctx.resize(16 * depth, 0.0);
        for block in 0..seq.div_ceil(16) {
            let rows = (seq - 16 * block).min(16);
            // The block's queries, each padded with zeros to the depth
            // (rows past the sequence keep what they held: their scores
            // and context are not read).
            for (r, q) in s.q.chunks_exact_mut(depth).take(rows).enumerate() {
                let t = 16 * block + r;
                q[..d].copy_from_slice(&qkv[t * 3 * h + at..][..d]);
                q[d..].fill(Bf16(0));
            }
            tiles.scores(&s.q, &s.head, &mut s.scores);
            let mut sums = [0f32; 16];
            fastmath::attention_weights(
                &s.scores[..rows * len],
                &s.mask,
                shape.scale,
                &mut s.weights[..rows * len],
                &mut sums[..rows],
            );
            tiles.context(&s.weights, &s.head, &mut s.ctx);
            for (r, (ctx, sum)) in s.ctx.chunks_exact(depth).zip(sums).take(rows).enumerate() {
                let inv = 1.0 / sum;
                let o = &mut out[(16 * block + r) * stride..][..d];
                o.iter_mut().zip(ctx).for_each(|(o, c)| *o = c * inv);
            }
        }
    })
}
