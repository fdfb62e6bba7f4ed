//! The tiles' scores and context against the same sums in f64 over the
//! same bf16 values, on every shape class: a sequence and a dimension
//! that are whole tiles, one short of them, one past them.

use super::*;

/// Values in [-1, 1) from a small linear congruential generator (the
/// same sequence on every run).
fn values(n: usize, seed: u64) -> Vec<Bf16> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            Bf16::from_f32(((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0)
        })
        .collect()
}

/// Whether `got` is `want` to fp32's accumulation of `terms` products of
/// magnitude at most `scale`.
fn close(got: f32, want: f64, terms: usize, scale: f64) -> bool {
    (got as f64 - want).abs() <= terms as f64 * scale * f32::EPSILON as f64
}

#[test]
fn scores_and_context_match_their_sums() {
    let Some(tiles) = Tiles::new() else {
        eprintln!("attention tiles: not run here (this CPU lacks AMX)");
        return;
    };
    let mut head = Head::default();
    for (seq, dim) in [
        (128, 32),
        (128, 64),
        (31, 32),
        (33, 48),
        (5, 16),
        (64, 96),
        (97, 128),
    ] {
        let (q, k, v) = (
            values(seq * dim, 1),
            values(seq * dim, 2),
            values(seq * dim, 3),
        );
        // The keys and values as rows of a wider matrix (a head's columns
        // of the QKV product), garbage between them.
        let stride = 3 * dim + 5;
        let (mut kw, mut vw) = (values(seq * stride, 5), values(seq * stride, 6));
        for j in 0..seq {
            kw[j * stride + dim..][..dim].copy_from_slice(&k[j * dim..][..dim]);
            vw[j * stride + 2 * dim..][..dim].copy_from_slice(&v[j * dim..][..dim]);
        }
        head.pack(&kw[dim..], &vw[2 * dim..], stride, seq, dim);
        let (len, depth) = (head.len(), head.depth());
        assert!(len >= seq && len % 32 == 0 && depth >= dim && depth % 32 == 0);
        let mut qb = vec![Bf16(0); 16 * depth];
        let mut scores = vec![f32::NAN; 16 * len];
        let mut p = vec![Bf16(0); 16 * len];
        let mut ctx = vec![f32::NAN; 16 * depth];
        for block in 0..seq.div_ceil(16) {
            let rows = (seq - 16 * block).min(16);
            qb.fill(Bf16(0));
            for r in 0..rows {
                let src = &q[(16 * block + r) * dim..][..dim];
                qb[r * depth..][..dim].copy_from_slice(src);
            }
            tiles.scores(&qb, &head, &mut scores);
            for r in 0..16 {
                for j in 0..len {
                    let want: f64 = if r < rows && j < seq {
                        (0..dim)
                            .map(|d| {
                                qb[r * depth + d].to_f32() as f64 * k[j * dim + d].to_f32() as f64
                            })
                            .sum()
                    } else {
                        0.0
                    };
                    let got = scores[r * len + j];
                    assert!(
                        close(got, want, dim, 1.0),
                        "{seq}x{dim} block {block}: score ({r}, {j}) {got}, want {want}"
                    );
                }
            }
            // Probabilities: any values in [0, 1), zero past the sequence.
            let weights = values(16 * len, 4 + block as u64);
            for (i, w) in p.iter_mut().enumerate() {
                *w = if i % len < seq {
                    Bf16::from_f32(weights[i].to_f32().abs())
                } else {
                    Bf16(0)
                };
            }
            tiles.context(&p, &head, &mut ctx);
            for r in 0..16 {
                for d in 0..depth {
                    let want: f64 = if d < dim {
                        (0..seq)
                            .map(|j| {
                                p[r * len + j].to_f32() as f64 * v[j * dim + d].to_f32() as f64
                            })
                            .sum()
                    } else {
                        0.0
                    };
                    let got = ctx[r * depth + d];
                    assert!(
                        close(got, want, seq, 1.0),
                        "{seq}x{dim} block {block}: context ({r}, {d}) {got}, want {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_prefix_of_the_keys_is_the_same_columns_and_sums() {
    let Some(tiles) = Tiles::new() else {
        eprintln!("attention tiles: not run here (this CPU lacks AMX)");
        return;
    };
    let (seq, dim) = (100, 48);
    let mut head = Head::default();
    let (k, v) = (values(seq * dim, 2), values(seq * dim, 3));
    head.pack(&k, &v, dim, seq, dim);
    let (len, depth) = (head.len(), head.depth());
    let q = values(16 * depth, 1);
    let mut all = vec![f32::NAN; 16 * len];
    tiles.scores(&q, &head, &mut all);
    let p = values(16 * len, 4);
    for keys in (32..=len).step_by(32) {
        // The scores of the first keys: the same columns, bit for bit.
        let mut first = vec![f32::NAN; 16 * keys];
        tiles.scores_first(&q, &head, keys, &mut first);
        for r in 0..16 {
            assert_eq!(
                first[r * keys..][..keys]
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>(),
                all[r * len..][..keys]
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>(),
                "{keys} keys, row {r}"
            );
        }
        // The context of weights on the first keys: the whole context of
        // the same weights with zeros after them.
        let mut short = vec![Bf16(0); 16 * keys];
        let mut padded = vec![Bf16(0); 16 * len];
        for r in 0..16 {
            short[r * keys..][..keys].copy_from_slice(&p[r * len..][..keys]);
            padded[r * len..][..keys].copy_from_slice(&p[r * len..][..keys]);
        }
        let (mut got, mut want) = (vec![f32::NAN; 16 * depth], vec![f32::NAN; 16 * depth]);
        tiles.context_first(&short, &head, keys, &mut got);
        tiles.context(&padded, &head, &mut want);
        assert_eq!(
            got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            "{keys} keys: the context"
        );
    }
}
