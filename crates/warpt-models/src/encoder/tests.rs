//! The packed encoder on a tiny seeded BERT: its feed-forward blocks and
//! batch move no value beyond the products' summation order, and bf16 (on AMX, the tiles' attention) stays
//! within its rounding of f32.

use super::*;

/// A BERT of 2 layers, width 64 in 2 heads of 32, seeded weights.
fn tiny(precision: Precision) -> PackedBert {
    let c: bert::Config = serde_json::from_str(
        r#"{"vocab_size": 50, "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "intermediate_size": 256,
            "hidden_act": "gelu", "hidden_dropout_prob": 0.0,
            "max_position_embeddings": 64, "type_vocab_size": 2,
            "initializer_range": 0.02, "layer_norm_eps": 1e-12,
            "pad_token_id": 0, "position_embedding_type": "absolute"}"#,
    )
    .expect("a BERT config");
    let mut seed = 7u64;
    let mut tensor = |shape: &[usize], around: f32| {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                around + ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.2
            })
            .collect();
        Tensor::from_vec(v, shape, &candle_core::Device::Cpu).expect("a tensor")
    };
    let (h, i) = (64, 256);
    let mut t = HashMap::new();
    t.insert(
        "embeddings.word_embeddings.weight".into(),
        tensor(&[50, h], 0.0),
    );
    t.insert(
        "embeddings.position_embeddings.weight".into(),
        tensor(&[64, h], 0.0),
    );
    t.insert(
        "embeddings.token_type_embeddings.weight".into(),
        tensor(&[2, h], 0.0),
    );
    let norm = |t: &mut HashMap<String, Tensor>,
                tensor: &mut dyn FnMut(&[usize], f32) -> Tensor,
                p: &str| {
        t.insert(format!("{p}.weight"), tensor(&[h], 1.0));
        t.insert(format!("{p}.bias"), tensor(&[h], 0.0));
    };
    norm(&mut t, &mut tensor, "embeddings.LayerNorm");
    for l in 0..2 {
        let p = format!("encoder.layer.{l}");
        for (name, n, k) in [
            ("attention.self.query", h, h),
            ("attention.self.key", h, h),
            ("attention.self.value", h, h),
            ("attention.output.dense", h, h),
            ("intermediate.dense", i, h),
            ("output.dense", h, i),
        ] {
            t.insert(format!("{p}.{name}.weight"), tensor(&[n, k], 0.0));
            t.insert(format!("{p}.{name}.bias"), tensor(&[n], 0.0));
        }
        norm(
            &mut t,
            &mut tensor,
            &format!("{p}.attention.output.LayerNorm"),
        );
        norm(&mut t, &mut tensor, &format!("{p}.output.LayerNorm"));
    }
    PackedBert::load(&t, &c, precision).expect("the tiny BERT loads")
}

/// Three sequences of 37 tokens (not a whole number of the tiles' 16 or
/// 32), the second and third padded after 30 and 5.
fn batch() -> (Vec<u32>, Vec<u32>) {
    let ids = (0..3 * 37).map(|i| (i * 7 % 50) as u32).collect();
    let mask = (0..3 * 37)
        .map(|i| u32::from(i % 37 < [37, 30, 5][i / 37]))
        .collect();
    (ids, mask)
}

#[test]
fn blocks_and_the_batch_move_no_value_past_the_sums_order() {
    let (ids, mask) = batch();
    for precision in [Precision::F32, Precision::Bf16] {
        let mut bert = tiny(precision);
        let whole = bert.forward(&ids, &mask, 3, 37).expect("a forward pass");
        // Blocks of two sequences (the QKV output of 74 rows), their
        // feed-forward expansion (256 wide) in blocks of 37 rows.
        bert.block = 74 * 3 * 64 * 4;
        let blocks = bert.forward(&ids, &mask, 3, 37).expect("a forward pass");
        let off = worst(&whole, &blocks);
        assert!(
            off <= within(precision),
            "{precision:?}: the blocks moved a value {off}"
        );
        // No sequences, or sequences of no tokens: nothing, not a panic.
        assert!(bert.forward(&[], &[], 0, 37).expect("no rows").is_empty());
        assert!(bert.forward(&[], &[], 3, 0).expect("no rows").is_empty());
        // Each sequence alone (fewer sequences than threads: attention's
        // other split) as its rows of the batch.
        for b in 0..3 {
            let r = b * 37..(b + 1) * 37;
            let alone = bert
                .forward(&ids[r.clone()], &mask[r], 1, 37)
                .expect("a forward pass");
            let off = worst(&alone, &whole[b * 37 * 64..][..37 * 64]);
            assert!(
                off <= within(precision),
                "{precision:?}: sequence {b} alone is {off} from its batch rows"
            );
        }
    }
}

#[test]
fn bf16_stays_within_its_rounding_of_f32() {
    let (ids, mask) = batch();
    let f32s = tiny(Precision::F32)
        .forward(&ids, &mask, 3, 37)
        .expect("f32");
    let bf16 = tiny(Precision::Bf16)
        .forward(&ids, &mask, 3, 37)
        .expect("bf16");
    let worst = f32s
        .iter()
        .zip(&bf16)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    // LayerNorm's outputs are about 1: bf16's 8 bits through two layers.
    assert!(worst < 0.1, "bf16 is {worst} from f32");
    assert!(worst > 0.0, "bf16 computed nothing in bf16");
}

#[test]
fn tiled_attention_matches_softmax_in_f64() {
    // Two heads of 48 (not a whole number of the tiles' 32), width 96,
    // two sequences of 21 tokens, the second padded after 9.
    let (heads, d, seq) = (2, 48, 21);
    let h = heads * d;
    let shape = tiled::Shape {
        hidden: h,
        heads,
        dim: d,
        scale: 1.0 / (d as f32).sqrt(),
    };
    let qkv: Vec<f32> = (0..2 * seq * 3 * h)
        .map(|i| ((i * 7919 % 1000) as f32 / 500.0 - 1.0) * 2.0)
        .collect();
    let keep: Vec<f32> = (0..2 * seq)
        .map(|i| if i < seq || i % seq < 9 { 1.0 } else { 0.0 })
        .collect();
    let mut out = vec![f32::NAN; 2 * seq * h];
    if !tiled::attention(&qkv, &keep, seq, &shape, &mut out) {
        eprintln!("tiled attention: not run here (this CPU lacks AMX)");
        return;
    }
    let round = |x: f32| Bf16::from_f32(x).to_f32() as f64;
    for b in 0..2 {
        let row = |t: usize| &qkv[(b * seq + t) * 3 * h..][..3 * h];
        for head in 0..heads {
            for t in 0..seq {
                let q = &row(t)[head * d..][..d];
                let scores: Vec<f64> = (0..seq)
                    .map(|j| {
                        let k = &row(j)[h + head * d..][..d];
                        q.iter()
                            .zip(k)
                            .map(|(a, b)| round(*a) * round(*b))
                            .sum::<f64>()
                            * shape.scale as f64
                    })
                    .collect();
                let kept = |j: usize| keep[b * seq + j] != 0.0;
                let max = (0..seq)
                    .filter(|&j| kept(j))
                    .map(|j| scores[j])
                    .fold(f64::MIN, f64::max);
                let w: Vec<f64> = (0..seq)
                    .map(|j| {
                        if kept(j) {
                            (scores[j] - max).exp()
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let sum: f64 = w.iter().sum();
                for c in 0..d {
                    let want: f64 = (0..seq)
                        .map(|j| w[j] / sum * round(row(j)[2 * h + head * d + c]))
                        .sum();
                    let got = out[(b * seq + t) * h + head * d + c] as f64;
                    // The weights in bf16 (2^-8 of each), values of at
                    // most 2.
                    assert!(
                        (got - want).abs() < 2.0 * 4e-3,
                        "sequence {b} head {head} token {t} dim {c}: {got}, want {want}"
                    );
                }
            }
        }
    }
}

/// The largest difference between two results of the same shape.
fn worst(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "results of one shape");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max)
}

/// How far a blocking may move an output (LayerNorm's, about 1): not bit
/// for bit, because the engine's narrow tiles (a product's last few
/// columns, here a block's last rows, where B is packed) sum the depth in
/// several sets of accumulators to hide the multiply-add's latency, so a
/// row's last bits follow how many rows share its tile. On Zen 3 (AVX2,
/// 16-row panels: the tiny model's 192- and 256-wide products pack B) the
/// blocks moved values by 1e-6 in f32 and bf16 alike; on AVX-512 (48-row
/// panels read B in place, one set) not at all. A block that lost, mixed
/// or repeated rows moves them by about 1. In bf16 a last-bit change can
/// turn an activation's rounding: one bf16 step.
fn within(precision: Precision) -> f32 {
    match precision {
        Precision::Bf16 => 1e-2,
        _ => 1e-5,
    }
}
