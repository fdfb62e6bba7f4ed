//! Causal attention with bf16 operands on the AMX tiles
//! ([`warpt_gemm::attention`]), for a prefill in bf16: each key-value
//! head's cached keys and values rounded to bf16 and laid out as tiles
//! once, then for each query head sixteen queries at a time their scores
//! against the keys up to the last of them, their softmax weights (f32,
//! rounded to bf16, normalised after the product as FlashAttention does)
//! and their context.
//!
//! The f32 path ([`super::causal`]) runs each block pair's two products
//! through the engine in f32: at a prompt of 2048 tokens attention is a
//! fifth of a bf16 model's multiply-adds, and on the engine's f32 kernels
//! it took most of the prefill's time.

use std::cell::RefCell;

use rayon::prelude::*;
use warpt_gemm::Bf16;
use warpt_gemm::attention::{Head, Tiles};
use warpt_gemm::simd::bf16_from_f32;

use super::{Dims, causal, check, gather};
use crate::fastmath;

/// Queries per task: four blocks of the tiles' sixteen.
const QUERIES: usize = 64;

/// Fewer new positions than one block of the tiles run in f32
/// ([`super::causal`]): a decode step's query reads the f32 cache
/// directly, where laying a head out as tiles would cost more than its
/// one row of scores.
const MIN_QUERIES: usize = 16;

/// A thread's buffers, kept from block to block.
#[derive(Default)]
struct Scratch {
    /// Sixteen queries, each padded with zeros to the tiles' depth.
    q: Vec<Bf16>,
    /// `len` ones then `len` zeros: the causal mask of a query that sees
    /// `seen` keys is the window from `len - seen`.
    mask: Vec<f32>,
    scores: Vec<f32>,
    weights: Vec<Bf16>,
    ctx: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// [`super::causal`] with its operands in bf16 (queries, keys and values
/// rounded, scores and sums in f32): the same shapes and output, the
/// products on the AMX tiles. Where this CPU has no tiles, or a call has
/// fewer than 16 new positions (a decode step), it is `causal` itself.
///
/// # Panics
/// As [`super::causal`].
pub fn causal_bf16(q: &[f32], k: &[f32], v: &[f32], dims: Dims) -> Vec<f32> {
    if dims.queries < MIN_QUERIES || Tiles::new().is_none() {
        return causal(q, k, v, dims);
    }
    check(q, k, v, &dims);
    let Dims {
        batch,
        heads,
        kv_heads,
        queries,
        keys,
        stride,
        head_dim: hd,
    } = dims;
    // The tiles are this process's (AMX and Linux's grant, both asked
    // once): they exist on every thread once they exist on this one.
    let tiles = || Tiles::new().expect("AMX runs in this process");
    let laid: Vec<Head> = (0..batch * kv_heads)
        .into_par_iter()
        .map(|bh| {
            let at = bh * stride * hd;
            let rounded = |x: &[f32]| {
                let mut out = vec![Bf16(0); keys * hd];
                bf16_from_f32(&x[at..][..keys * hd], &mut out);
                out
            };
            let mut head = Head::default();
            head.pack(&rounded(k), &rounded(v), hd, keys, hd);
            head
        })
        .collect();
    let group = heads / kv_heads;
    let scale = 1.0 / (hd as f32).sqrt();
    let qblocks = queries.div_ceil(QUERIES);
    let blocks: Vec<Vec<f32>> = (0..batch * heads * qblocks)
        .into_par_iter()
        .map(|task| {
            let (bh, qb) = (task / qblocks, task % qblocks);
            let (b, h) = (bh / heads, bh % heads);
            let rows = QUERIES.min(queries - qb * QUERIES);
            let q_at = (bh * queries + qb * QUERIES) * hd;
            let head = &laid[b * kv_heads + h / group];
            let first = keys - queries + qb * QUERIES;
            block(&tiles(), &q[q_at..][..rows * hd], hd, head, first, scale)
        })
        .collect();
    gather(&blocks, &dims, QUERIES)
}

/// The output of queries `q` (rows of `hd`, the first at position
/// `first`) over `head`'s keys up to each one's own position, sixteen at
/// a time: rows of `hd`.
fn block(tiles: &Tiles, q: &[f32], hd: usize, head: &Head, first: usize, scale: f32) -> Vec<f32> {
    let (len, depth) = (head.len(), head.depth());
    let rows = q.len() / hd;
    let mut out = vec![0f32; rows * hd];
    SCRATCH.with_borrow_mut(|s| {
        if s.mask.len() != 2 * len {
            s.mask.clear();
            s.mask.resize(len, 1.0);
            s.mask.resize(2 * len, 0.0);
        }
        // (Rows of a last block past its queries keep what they held:
        // their scores and context are not read.)
        s.q.resize(16 * depth, Bf16(0));
        s.scores.resize(16 * len, 0.0);
        s.weights.resize(16 * len, Bf16(0));
        s.ctx.resize(16 * depth, 0.0);
        for (sub, q) in q.chunks(16 * hd).enumerate() {
            let n = q.len() / hd;
            // The block's last query sees keys 0..=its position: the
            // tiles' keys are those, in whole steps of 32.
            let last = first + 16 * sub + n - 1;
            let keys = (last + 1).next_multiple_of(32);
            for (src, dst) in q.chunks_exact(hd).zip(s.q.chunks_exact_mut(depth)) {
                bf16_from_f32(src, &mut dst[..hd]);
                dst[hd..].fill(Bf16(0));
            }
            let scores = &mut s.scores[..16 * keys];
            tiles.scores_first(&s.q, head, keys, scores);
            let mut sums = [0f32; 16];
            for (r, sum) in sums.iter_mut().take(n).enumerate() {
                let seen = last + 1 - (n - 1 - r);
                fastmath::attention_weights(
                    &scores[r * keys..][..keys],
                    &s.mask[len - seen..][..keys],
                    scale,
                    &mut s.weights[r * keys..][..keys],
                    std::slice::from_mut(sum),
                );
            }
            tiles.context_first(&s.weights[..16 * keys], head, keys, &mut s.ctx);
            for ((o, ctx), sum) in out[16 * sub * hd..]
                .chunks_exact_mut(hd)
                .zip(s.ctx.chunks_exact(depth))
                .zip(sums)
                .take(n)
            {
                let inv = 1.0 / sum;
                o.iter_mut().zip(ctx).for_each(|(o, c)| *o = c * inv);
            }
        }
    });
    out
}
