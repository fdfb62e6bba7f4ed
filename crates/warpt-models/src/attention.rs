//! Causal self-attention over a KV cache, blocked as FlashAttention
//! blocks it: for each block of queries, the keys a block at a time, the
//! scores of the pair one small product (warpt's engine), their softmax
//! kept online (a running maximum and sum per query, the output rescaled
//! when the maximum grows) and the values one more product. The scores
//! never exist for more than a block pair, and the causal mask never: a
//! query's row simply stops at its own position, and blocks past the
//! diagonal are never visited. Memory is the cache and one block pair per
//! task, whatever the context; a prompt of 8192 tokens would need 256 MB
//! of scores per head materialized.
//!
//! Tasks are (sequence, head, block of queries), on rayon's pool: a decode
//! step (one query per sequence) still runs every head at once.

use rayon::prelude::*;
use warpt_gemm::{MatMut, MatRef, gemm};

use crate::fastmath;
use crate::uninit::{chunks, copy, par_rows};

mod kv;
mod tiled;

pub use kv::KvBuffer;
pub use tiled::causal_bf16;

/// Queries per block: enough rows for the engine's tile.
const BR: usize = 64;

/// Keys per block: a block's scores (`BR × BC` f32, 32 KB) and its keys
/// and values stay in L1/L2.
const BC: usize = 128;

/// The shapes of one attention call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    /// Sequences.
    pub batch: usize,
    /// Query heads.
    pub heads: usize,
    /// Key and value heads (grouped-query attention: `heads` a multiple).
    pub kv_heads: usize,
    /// New positions per sequence (the queries).
    pub queries: usize,
    /// Positions in the cache, the new ones last (`>= queries`).
    pub keys: usize,
    /// Positions each head's keys and values have room for (`>= keys`):
    /// a head's first key is `stride · head_dim` values after the last
    /// head's.
    pub stride: usize,
    /// Values per head.
    pub head_dim: usize,
}

/// Attention of `q` (`batch × heads × queries × head_dim`) over `k` and
/// `v` (`batch × kv_heads × stride × head_dim`, the first `keys` of each
/// head's positions filled, as [`KvBuffer`] keeps them), query `i` at position
/// `keys - queries + i` seeing keys `0..=` it: `batch × queries × heads ×
/// head_dim`, row-major, the heads of a position side by side as the
/// output projection reads them. Scores are scaled by `1/√head_dim`.
///
/// # Panics
/// If the slices are not the sizes `dims` gives, `heads` is not a multiple
/// of `kv_heads`, `keys < queries` or `stride < keys`.
pub fn causal(q: &[f32], k: &[f32], v: &[f32], dims: Dims) -> Vec<f32> {
    check(q, k, v, &dims);
    if dims.queries == 1 {
        return decode(q, k, v, &dims);
    }
    let Dims {
        batch,
        heads,
        kv_heads,
        queries,
        keys,
        stride,
        head_dim: hd,
    } = dims;
    let group = heads / kv_heads;
    let qblocks = queries.div_ceil(BR);
    let blocks: Vec<Vec<f32>> = (0..batch * heads * qblocks)
        .into_par_iter()
        .map(|task| {
            let (bh, qb) = (task / qblocks, task % qblocks);
            let (b, h) = (bh / heads, bh % heads);
            let rows = BR.min(queries - qb * BR);
            let q_at = (bh * queries + qb * BR) * hd;
            let kv_at = (b * kv_heads + h / group) * stride * hd;
            let first = keys - queries + qb * BR;
            block(
                &q[q_at..][..rows * hd],
                &k[kv_at..][..keys * hd],
                &v[kv_at..][..keys * hd],
                first,
                hd,
            )
        })
        .collect();
    gather(&blocks, &dims, BR)
}

/// Panics unless the slices are the sizes `dims` gives, `heads` a
/// multiple of `kv_heads`, `keys >= queries` and `stride >= keys`.
fn check<E>(q: &[f32], k: &[E], v: &[E], dims: &Dims) {
    let Dims {
        batch,
        heads,
        kv_heads,
        queries,
        keys,
        stride,
        head_dim: hd,
    } = *dims;
    assert!(
        kv_heads > 0 && heads % kv_heads == 0,
        "{heads} heads, {kv_heads} kv heads"
    );
    assert!(keys >= queries, "{queries} queries over {keys} keys");
    assert!(stride >= keys, "{keys} keys in room for {stride}");
    assert_eq!(q.len(), batch * heads * queries * hd, "queries");
    assert_eq!(k.len(), batch * kv_heads * stride * hd, "keys");
    assert_eq!(v.len(), batch * kv_heads * stride * hd, "values");
}

/// The output `batch × queries × heads × head_dim` from the blocks of
/// `per_block` queries each task wrote (`(sequence, head, block)` in that
/// order, each block's rows of `head_dim`): each position's heads side by
/// side, gathered in parallel into a vector nothing zeroes first.
fn gather(blocks: &[Vec<f32>], dims: &Dims, per_block: usize) -> Vec<f32> {
    let (heads, queries, hd) = (dims.heads, dims.queries, dims.head_dim);
    let qblocks = queries.div_ceil(per_block);
    par_rows(dims.batch * queries, heads * hd, |r, slots| {
        let (b, i) = (r / queries, r % queries);
        chunks(slots, hd, |h, head| {
            let block = &blocks[(b * heads + h) * qblocks + i / per_block];
            copy(head, &block[(i % per_block) * hd..][..hd])
        })
    })
}

/// One query (at position `first`) over every key up to it, with no
/// engine product (packing a block of keys for one row cost more than
/// the row): [`fastmath::attend_one`] for a group of one.
fn one(q: &[f32], k: &[f32], v: &[f32], first: usize, hd: usize) -> Vec<f32> {
    let keys = first + 1;
    let mut scores = vec![0f32; keys];
    let mut out = vec![0f32; hd];
    let scale = 1.0 / (hd as f32).sqrt();
    let (k, v) = (&k[..keys * hd], &v[..keys * hd]);
    fastmath::attend_one(q, k, v, hd, scale, &mut scores, &mut out);
    out
}

/// [`causal`] for a decode step (one query a sequence): a task per
/// sequence and key-value head, the query heads that share it attended
/// together ([`fastmath::attend_one`]: each cached key and value read
/// once for the group, not once a head), each group's output written
/// where it goes (a step's output is `batch × heads × head_dim`, a
/// group's heads side by side).
fn decode(q: &[f32], k: &[f32], v: &[f32], dims: &Dims) -> Vec<f32> {
    decode_on(q, k, v, dims, fastmath::attend_one)
}

/// A decode step's attention ([`causal`] with one query a sequence) over
/// the f16 copy of the cache ([`KvBuffer::with_f16`]): the same as
/// `causal` over the f16 values widened, from half the bytes.
///
/// # Panics
/// As [`causal`], if `dims.queries` is not 1 or where
/// [`fastmath::attends_f16`] is false for the heads.
pub fn decode_f16(q: &[f32], k: &[half::f16], v: &[half::f16], dims: Dims) -> Vec<f32> {
    check(q, k, v, &dims);
    assert_eq!(dims.queries, 1, "a decode step's queries");
    decode_on(q, k, v, &dims, fastmath::attend_one_f16)
}

/// The signature of [`fastmath::attend_one`] for cached elements `E`.
type AttendOne<E> = fn(&[f32], &[E], &[E], usize, f32, &mut [f32], &mut [f32]);

/// [`decode`] with `attend` for each group of query heads.
fn decode_on<E: Sync>(q: &[f32], k: &[E], v: &[E], dims: &Dims, attend: AttendOne<E>) -> Vec<f32> {
    let Dims {
        batch,
        heads,
        kv_heads,
        keys,
        stride,
        head_dim: hd,
        ..
    } = *dims;
    let group = heads / kv_heads;
    let scale = 1.0 / (hd as f32).sqrt();
    let mut out = vec![0f32; batch * heads * hd];
    out.par_chunks_mut(group * hd)
        .enumerate()
        .for_each_init(Vec::new, |scores, (t, o)| {
            // Task t is sequence t / kv_heads's key-value head t %
            // kv_heads, whose query heads are t·group.. of all of them.
            let kv_at = t * stride * hd;
            scores.resize(group * keys, 0.0);
            attend(
                &q[t * group * hd..][..group * hd],
                &k[kv_at..][..keys * hd],
                &v[kv_at..][..keys * hd],
                hd,
                scale,
                scores,
                o,
            );
        });
    out
}

/// `data` as a `rows × cols` row-major matrix (sized by its caller).
fn view(data: &[f32], rows: usize, cols: usize) -> MatRef<'_, f32> {
    MatRef::row_major(data, rows, cols).expect("a block within its slice")
}

/// One block of queries (`rows × hd`, the first at position `first`)
/// over the keys and values up to its last one: its output, `rows × hd`.
fn block(q: &[f32], k: &[f32], v: &[f32], first: usize, hd: usize) -> Vec<f32> {
    let rows = q.len() / hd;
    if rows == 1 {
        return one(q, k, v, first, hd);
    }
    let scale = 1.0 / (hd as f32).sqrt();
    let end = first + rows;
    let mut out = vec![0f32; rows * hd];
    let mut max = vec![f32::NEG_INFINITY; rows];
    let mut sum = vec![0f32; rows];
    let mut scores = vec![0f32; rows * BC];
    let mut rescale = vec![1f32; rows];
    for k0 in (0..end).step_by(BC) {
        let cols = BC.min(end - k0);
        let kb = &k[k0 * hd..][..cols * hd];
        let vb = &v[k0 * hd..][..cols * hd];
        let s = &mut scores[..rows * cols];
        // S = Q · Kᵀ / √hd.
        let c = MatMut::row_major(s, rows, cols).expect("scores");
        gemm(c, scale, view(q, rows, hd), view(kb, cols, hd).t(), 0.0, 1).expect("shapes agree");
        rescale.fill(1.0);
        for (i, row) in s.chunks_exact_mut(cols).enumerate() {
            // Query i sees keys up to first + i.
            let seen = (first + i + 1).saturating_sub(k0).min(cols);
            let (live, masked) = row.split_at_mut(seen);
            masked.fill(0.0);
            if live.is_empty() {
                continue;
            }
            let m = live.iter().fold(max[i], |m, x| m.max(*x));
            rescale[i] = fastmath::exp_of(max[i] - m);
            sum[i] = sum[i] * rescale[i] + fastmath::exp_shifted(live, m);
            max[i] = m;
        }
        for (o, r) in out.chunks_exact_mut(hd).zip(&rescale) {
            if *r != 1.0 {
                o.iter_mut().for_each(|x| *x *= r);
            }
        }
        // O += P · V.
        let c = MatMut::row_major(&mut out, rows, hd).expect("output");
        gemm(c, 1.0, view(s, rows, cols), view(vb, cols, hd), 1.0, 1).expect("shapes agree");
    }
    for (o, l) in out.chunks_exact_mut(hd).zip(&sum) {
        let inv = 1.0 / l;
        o.iter_mut().for_each(|x| *x *= inv);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attention as the definition writes it, in f64: every score, the
    /// mask, the softmax, the weighted sum.
    fn naive(q: &[f32], k: &[f32], v: &[f32], d: Dims) -> Vec<f64> {
        let hd = d.head_dim;
        let mut out = vec![0f64; d.batch * d.queries * d.heads * hd];
        for b in 0..d.batch {
            for h in 0..d.heads {
                let kvh = h / (d.heads / d.kv_heads);
                for i in 0..d.queries {
                    let pos = d.keys - d.queries + i;
                    let qi = &q[((b * d.heads + h) * d.queries + i) * hd..][..hd];
                    let key = |j: usize| ((b * d.kv_heads + kvh) * d.stride + j) * hd;
                    let scores: Vec<f64> = (0..=pos)
                        .map(|j| {
                            let kj = &k[key(j)..][..hd];
                            qi.iter()
                                .zip(kj)
                                .map(|(a, b)| f64::from(*a) * f64::from(*b))
                                .sum::<f64>()
                                / (hd as f64).sqrt()
                        })
                        .collect();
                    let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let e: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
                    let z: f64 = e.iter().sum();
                    let o = &mut out[((b * d.queries + i) * d.heads + h) * hd..][..hd];
                    for (j, w) in e.iter().enumerate() {
                        for (o, x) in o.iter_mut().zip(&v[key(j)..][..hd]) {
                            *o += w / z * f64::from(*x);
                        }
                    }
                }
            }
        }
        out
    }

    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n as u32)
            .map(|i| {
                ((i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) % 2001) as f32 / 500.0
                    - 2.0
            })
            .collect()
    }

    #[test]
    fn blocked_attention_is_the_definition() {
        // A prefill across several blocks both ways, one with a cache
        // before it, decode steps, grouped-query heads, uneven edges.
        for d in [
            Dims {
                batch: 1,
                heads: 2,
                kv_heads: 2,
                queries: 300,
                keys: 300,
                stride: 300,
                head_dim: 16,
            },
            Dims {
                batch: 2,
                heads: 4,
                kv_heads: 2,
                queries: 70,
                keys: 200,
                stride: 256,
                head_dim: 8,
            },
            Dims {
                batch: 3,
                heads: 4,
                kv_heads: 1,
                queries: 1,
                keys: 257,
                stride: 260,
                head_dim: 32,
            },
            Dims {
                batch: 1,
                heads: 1,
                kv_heads: 1,
                queries: 1,
                keys: 1,
                stride: 1,
                head_dim: 4,
            },
        ] {
            let q = values(d.batch * d.heads * d.queries * d.head_dim, 1);
            let k = values(d.batch * d.kv_heads * d.stride * d.head_dim, 2);
            let v = values(d.batch * d.kv_heads * d.stride * d.head_dim, 3);
            let got = causal(&q, &k, &v, d);
            let want = naive(&q, &k, &v, d);
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*g) - w).abs() < 1e-4 * (1.0 + w.abs()),
                    "{d:?} [{i}]: {g} vs {w}"
                );
            }
        }
    }

    #[test]
    fn bf16_attention_is_the_definition_over_its_rounded_operands() {
        // On the tiles where AMX runs (else the f32 path): prefills of
        // one and several blocks of 16 and 64 queries, uneven edges, a
        // cache before the new positions, grouped-query heads, head
        // dimensions short of and past the tiles' 32; a decode step.
        let round = |x: Vec<f32>| -> Vec<f32> {
            x.into_iter()
                .map(|x| warpt_gemm::Bf16::from_f32(x).to_f32())
                .collect()
        };
        for d in [
            Dims {
                batch: 1,
                heads: 2,
                kv_heads: 2,
                queries: 300,
                keys: 300,
                stride: 300,
                head_dim: 16,
            },
            Dims {
                batch: 2,
                heads: 4,
                kv_heads: 2,
                queries: 70,
                keys: 200,
                stride: 256,
                head_dim: 64,
            },
            Dims {
                batch: 1,
                heads: 3,
                kv_heads: 1,
                queries: 17,
                keys: 17,
                stride: 20,
                head_dim: 96,
            },
            Dims {
                batch: 2,
                heads: 2,
                kv_heads: 2,
                queries: 1,
                keys: 40,
                stride: 64,
                head_dim: 32,
            },
        ] {
            let q = round(values(d.batch * d.heads * d.queries * d.head_dim, 1));
            let k = round(values(d.batch * d.kv_heads * d.stride * d.head_dim, 2));
            let v = round(values(d.batch * d.kv_heads * d.stride * d.head_dim, 3));
            let got = causal_bf16(&q, &k, &v, d);
            let want = naive(&q, &k, &v, d);
            assert_eq!(got.len(), want.len());
            // The weights rounded to bf16 (2^-9 of each) before their sum
            // of values of at most 2.
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*g) - w).abs() < 8e-3 * (1.0 + w.abs()),
                    "{d:?} [{i}]: {g} vs {w}"
                );
            }
        }
    }

    #[test]
    fn the_buffer_holds_every_position_appended_through_its_growth() {
        let (heads, hd) = (3, 4);
        for mut buf in [KvBuffer::default(), KvBuffer::with_f16()] {
            let half = buf.f16().is_some();
            let mut want: Vec<Vec<f32>> = vec![Vec::new(); heads];
            let mut pos = 0;
            for (step, n) in [5usize, 1, 1, 20, 1].into_iter().enumerate() {
                let k = values(heads * n * hd, step as u32);
                let v: Vec<f32> = k.iter().map(|x| -x).collect();
                buf.append(&k, &v, heads, n, hd, pos);
                for (h, w) in want.iter_mut().enumerate() {
                    w.extend(&k[h * n * hd..][..n * hd]);
                }
                pos += n;
                assert_eq!(buf.len(), pos);
                assert!(buf.stride() >= pos);
                for (h, w) in want.iter().enumerate() {
                    let at = h * buf.stride() * hd;
                    let neg: Vec<f32> = w.iter().map(|x| -x).collect();
                    assert_eq!(
                        &buf.keys()[at..at + pos * hd],
                        &w[..],
                        "step {step} head {h}"
                    );
                    assert_eq!(
                        &buf.values()[at..at + pos * hd],
                        &neg[..],
                        "step {step} head {h}"
                    );
                    // The f16 copy: each value rounded, laid out alike.
                    if let Some((k16, v16)) = buf.f16() {
                        let round = |x: &f32| half::f16::from_f32(*x);
                        let (wk, wv): (Vec<_>, Vec<_>) = (
                            w.iter().map(round).collect(),
                            neg.iter().map(round).collect(),
                        );
                        assert_eq!(&k16[at..at + pos * hd], &wk[..], "f16 step {step} head {h}");
                        assert_eq!(&v16[at..at + pos * hd], &wv[..], "f16 step {step} head {h}");
                    }
                }
            }
            let f32_bytes = 2 * heads * buf.stride() * hd * 4;
            assert_eq!(
                buf.bytes(),
                f32_bytes + if half { f32_bytes / 2 } else { 0 }
            );
            // Position 0 starts over, keeping the f16 copy if there was one.
            buf.append(&[1.0; 12], &[2.0; 12], heads, 1, hd, 0);
            assert_eq!(buf.len(), 1);
            assert_eq!(buf.keys()[..hd], [1.0; 4]);
            assert_eq!(buf.f16().is_some(), half);
            if let Some((k16, _)) = buf.f16() {
                assert_eq!(k16[..hd], [half::f16::ONE; 4]);
            }
        }
    }

    #[test]
    fn a_decode_step_over_the_f16_copy_is_causal_over_its_widened_values() {
        let d = Dims {
            batch: 2,
            heads: 6,
            kv_heads: 2,
            queries: 1,
            keys: 37,
            stride: 40,
            head_dim: 64,
        };
        if !fastmath::attends_f16(d.head_dim) {
            eprintln!("f16 decode attention: not run here (no AVX-512F)");
            return;
        }
        let q = values(d.batch * d.heads * d.head_dim, 1);
        let kv = d.batch * d.kv_heads * d.stride * d.head_dim;
        let to16 = |x: Vec<f32>| x.into_iter().map(half::f16::from_f32).collect::<Vec<_>>();
        let (k16, v16) = (to16(values(kv, 2)), to16(values(kv, 3)));
        let widen = |x: &[half::f16]| x.iter().map(|v| v.to_f32()).collect::<Vec<_>>();
        let got = decode_f16(&q, &k16, &v16, d);
        let want = causal(&q, &widen(&k16), &widen(&v16), d);
        assert_eq!(got, want);
    }
}
