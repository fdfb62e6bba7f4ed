//! `data_pipeline`: the input side of training or batch inference — JSONL
//! records parsed, tokenized, shuffled with a seed, padded or cut to
//! `seq_len`, and packed into batches of ids and attention masks — in
//! samples/s and MB/s of JSONL. One measured sample is one epoch.
//!
//! Validation: a single-threaded reference pipeline gives every batch the
//! same checksum, and every record appears exactly once per epoch.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use tokenizers::Tokenizer;
use warpt_harness::{
    Benchmark, BenchmarkError, Measure, MeasureResult, Measured, RunContext, SeriesDef,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkKind, BenchmarkSpec, Param, ParamValue, Params, Validation,
};

use crate::sampling::time_each;
use crate::{corpus, tokenize};

/// Benchmark name within the suite.
pub const NAME: &str = "data_pipeline";
/// The padding id (the in-process tokenizer's `<pad>`).
const PAD: u32 = 2;

/// The spec of `data_pipeline`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .components([BenchmarkComponent::Cpu, BenchmarkComponent::Ram])
        .kind(BenchmarkKind::Application)
        .description(
            "A model's input pipeline: JSONL records (`records` generated from the seed, or `input` = a JSONL \
             file whose records have a \"text\" field) parsed (serde_json), tokenized (byte-level BPE, all \
             cores), shuffled with the seed (a new order each epoch), padded or cut to `seq_len` and packed \
             into `batch`-row matrices of ids and attention masks. One sample is one epoch: `samples_per_s` \
             (records) and `mb_per_s` (1e6 bytes of JSONL). Validation: a single-threaded reference gives \
             every batch the same checksum, and each record appears once per epoch.",
        )
        .duration(4.0)
        .param(
            Param::input_path("input", "")
                .help("a JSONL file with a \"text\" field per record; empty = generated"),
        )
        .param(Param::int("records", 10_000, 1..=10_000_000).help("records generated when there is no input"))
        .param(Param::int("batch", 32, 1..=65_536).help("rows per batch"))
        .param(Param::int("seq_len", 128, 1..=65_536).help("tokens per row (padded or cut)"))
        .check(check_params)
        .metric("samples_per_s")
        .metric("mb_per_s")
        .build()
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    let input = params
        .get("input")
        .and_then(ParamValue::as_str)
        .unwrap_or("");
    if !input.is_empty() && !std::path::Path::new(input).is_file() {
        return Err(format!("parameter 'input': {input} is not a readable file"));
    }
    Ok(())
}

/// The seeded JSONL: one record per corpus line, with an id and a label.
pub fn generate_jsonl(seed: u64, records: usize) -> String {
    let mut out = String::new();
    for (i, text) in corpus::lines(seed ^ 3, records).into_iter().enumerate() {
        let record = serde_json::json!({ "id": i, "text": text, "label": i % 7 });
        out.push_str(&record.to_string());
        out.push('\n');
    }
    out
}

fn parse(line: &str, number: usize) -> Result<String, String> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("line {number}: not JSON: {e}"))?;
    v.get("text")
        .and_then(|t| t.as_str())
        .map(str::to_string)
        .ok_or_else(|| format!("line {number}: no string field \"text\""))
}

/// The epoch's record order: Fisher-Yates with the seed and epoch.
fn order(seed: u64, epoch: u64, n: usize) -> Vec<usize> {
    let mut rng =
        Xoshiro256PlusPlus::seed_from_u64(seed ^ epoch.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut idx: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        idx.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    idx
}

/// One epoch's batches, reduced to a checksum each (FNV-1a over ids and
/// masks), and the order records were visited in.
#[derive(Debug, Clone, PartialEq)]
pub struct Epoch {
    /// Checksum of each batch.
    pub checksums: Vec<u64>,
    /// Record indices in the order batched.
    pub order: Vec<usize>,
}

fn pack(ids: &[&[u32]], order: Vec<usize>, batch: usize, seq_len: usize) -> Epoch {
    let mut checksums = Vec::with_capacity(order.len().div_ceil(batch));
    let mut rows = vec![PAD; batch * seq_len];
    let mut mask = vec![0u8; batch * seq_len];
    for chunk in order.chunks(batch) {
        rows.fill(PAD);
        mask.fill(0);
        for (r, &i) in chunk.iter().enumerate() {
            let t = &ids[i][..ids[i].len().min(seq_len)];
            rows[r * seq_len..][..t.len()].copy_from_slice(t);
            mask[r * seq_len..][..t.len()].fill(1);
        }
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for (&id, &m) in rows.iter().zip(&mask).take(chunk.len() * seq_len) {
            h = (h ^ (id as u64 | (m as u64) << 32)).wrapping_mul(0x0100_0000_01b3);
        }
        checksums.push(h);
    }
    Epoch { checksums, order }
}

/// The pipeline on all cores.
fn epoch_parallel(p: &DataPipeline, tok: &Tokenizer, epoch: u64) -> Result<Epoch, String> {
    let lines: Vec<&str> = p.jsonl.lines().filter(|l| !l.trim().is_empty()).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = lines.len().div_ceil(threads).max(1);
    let texts: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = lines
            .chunks(per)
            .enumerate()
            .map(|(c, chunk)| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .enumerate()
                        .map(|(i, l)| parse(l, c * per + i + 1))
                        .collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a parsing thread panicked".into()))
            })
            .collect::<Result<Vec<Vec<String>>, String>>()
    })?
    .into_iter()
    .flatten()
    .collect();
    let enc = tok
        .encode_batch(texts, false)
        .map_err(|e| format!("tokenizing: {e}"))?;
    let ids: Vec<&[u32]> = enc.iter().map(|e| e.get_ids()).collect();
    Ok(pack(
        &ids,
        order(p.seed, epoch, ids.len()),
        p.batch,
        p.seq_len,
    ))
}

/// The same pipeline, one line at a time: the reference.
fn epoch_serial(p: &DataPipeline, tok: &Tokenizer, epoch: u64) -> Result<Epoch, String> {
    let mut ids = Vec::new();
    for (n, line) in p.jsonl.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let text = parse(line, n + 1)?;
        let e = tok
            .encode(text.as_str(), false)
            .map_err(|e| format!("tokenizing: {e}"))?;
        ids.push(e.get_ids().to_vec());
    }
    let refs: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    Ok(pack(
        &refs,
        order(p.seed, epoch, refs.len()),
        p.batch,
        p.seq_len,
    ))
}

/// The running benchmark.
#[derive(Default)]
pub struct DataPipeline {
    tokenizer: Option<Tokenizer>,
    jsonl: String,
    batch: usize,
    seq_len: usize,
    seed: u64,
    /// The first epoch's outcome, for validation.
    first: Option<Epoch>,
}

impl Benchmark for DataPipeline {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let input = ctx.str_param("input")?;
        self.jsonl = if input.is_empty() {
            generate_jsonl(ctx.seed, ctx.int_param("records", 1)? as usize)
        } else {
            std::fs::read_to_string(input)
                .map_err(|e| BenchmarkError::Failed(format!("reading {input}: {e}")))?
        };
        let (tokenizer, _) =
            tokenize::load_or_train("", ctx.seed).map_err(BenchmarkError::Failed)?;
        self.tokenizer = Some(tokenizer);
        self.batch = ctx.int_param("batch", 1)? as usize;
        self.seq_len = ctx.int_param("seq_len", 1)? as usize;
        self.seed = ctx.seed;
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let tok = warpt_harness::prepared(&self.tokenizer)?;
        let first = epoch_parallel(self, tok, 0).map_err(BenchmarkError::Failed)?;
        let records = first.order.len();
        let bytes = self.jsonl.len();
        let defs = [
            SeriesDef::rate("samples_per_s", "samples/s", records as f64),
            SeriesDef::rate("mb_per_s", "MB/s", bytes as f64 / 1e6),
        ];
        let mut epoch = 0u64;
        let m = time_each(measure, ctx, NAME, &defs, || {
            epoch += 1;
            epoch_parallel(self, tok, epoch)
        })
        .map_err(BenchmarkError::Failed)?;
        let batches = first.checksums.len();
        self.first = Some(first);
        Ok(Measured {
            metrics: m.metrics,
            details: vec![
                ("records".into(), ParamValue::Int(records as i64)),
                ("jsonl_bytes".into(), ParamValue::Int(bytes as i64)),
                ("batches_per_epoch".into(), ParamValue::Int(batches as i64)),
                ("epochs".into(), ParamValue::Int(epoch as i64)),
                (
                    "stages".into(),
                    ParamValue::from(
                        "parse (serde_json) -> tokenize (BPE, all cores) -> shuffle (seed, epoch) -> pad/cut -> ids + masks",
                    ),
                ),
            ],
            warnings: Vec::new(),
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let (Some(tok), Some(first)) = (self.tokenizer.as_ref(), self.first.as_ref()) else {
            return Validation::fail("no epoch ran");
        };
        let reference = match epoch_serial(self, tok, 0) {
            Ok(r) => r,
            Err(e) => return Validation::fail(format!("the reference pipeline failed: {e}")),
        };
        if let Some(b) = first
            .checksums
            .iter()
            .zip(&reference.checksums)
            .position(|(a, b)| a != b)
        {
            return Validation::fail(format!(
                "batch {b} differs from the single-threaded reference"
            ));
        }
        if first.checksums.len() != reference.checksums.len() {
            return Validation::fail(
                "the epoch has a different number of batches than the reference",
            );
        }
        let mut seen = first.order.clone();
        seen.sort_unstable();
        if seen.iter().enumerate().any(|(i, &r)| i != r) {
            return Validation::fail("a record was skipped or repeated in the epoch");
        }
        Validation::pass(format!(
            "all {} batches equal the single-threaded reference's checksums; each of {} records appears once",
            first.checksums.len(),
            seen.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffles_differ_by_epoch_and_packing_pads_and_cuts() {
        assert_ne!(order(1, 0, 50), order(1, 1, 50));
        assert_eq!(order(1, 3, 50), order(1, 3, 50));
        let a: &[u32] = &[5, 6, 7];
        let b: &[u32] = &[9];
        let e1 = pack(&[a, b], vec![0, 1], 2, 2);
        let e2 = pack(&[&[5, 6], b], vec![0, 1], 2, 2);
        assert_eq!(e1, e2, "cut at seq_len");
        let e3 = pack(&[a, &[9, PAD]], vec![0, 1], 2, 2);
        assert_ne!(
            e1.checksums, e3.checksums,
            "a padded position differs from a real pad token"
        );
        assert!(parse("{\"text\": 3}", 4).unwrap_err().contains("line 4"));
    }
}
