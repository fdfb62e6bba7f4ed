//! `tokenize`: batch BPE encoding on every core, as a training or serving
//! pipeline runs it, in MB/s of input text and tokens/s.
//!
//! The tokenizer is a byte-level BPE trained in-process on the seeded corpus
//! (or `tokenizer=PATH`, a Hugging Face tokenizer.json); the text is the
//! seeded corpus (or `corpus=PATH`, one document per line). Validation:
//! every line decodes back to itself where the tokenizer is lossless, and
//! the parallel batch equals a single-threaded encode of each line.

use std::path::Path;

use tokenizers::models::TrainerWrapper;
use tokenizers::models::bpe::{BPE, BpeTrainer};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::{AddedToken, Tokenizer};
use warpt_harness::{
    Benchmark, BenchmarkError, Measure, MeasureResult, Measured, RunContext, SeriesDef,
};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, ParamValue, Validation};

use crate::corpus;
use crate::sampling::time_each;

/// Benchmark name within the suite.
pub const NAME: &str = "tokenize";

/// Vocabulary size of the tokenizer trained in-process.
pub const TRAINED_VOCAB: usize = 8192;
/// Lines of seeded corpus the in-process tokenizer is trained on.
const TRAIN_LINES: usize = 20_000;
/// Bytes of text encoded per sample, about.
const SAMPLE_BYTES: usize = 1 << 20;
/// Lines checked one by one in validation.
const CHECKED_LINES: usize = 2_000;

/// The spec of `tokenize`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::Cpu)
        .description(format!(
            "Batch tokenization on every core (Hugging Face tokenizers' encode_batch): about 1 MiB of text \
             per sample, `mb_per_s` (1e6 bytes of UTF-8 input per second) and `tokens_per_s`. Tokenizer: \
             byte-level BPE with {TRAINED_VOCAB} tokens trained in-process on the seeded corpus, or \
             `tokenizer` = a tokenizer.json; text: the seeded corpus, or `corpus` = a UTF-8 file, one \
             document per line. Validation: decode(encode(line)) = line where the tokenizer is lossless, \
             and the parallel ids equal a single-threaded encode."
        ))
        .duration(3.0)
        .param(Param::input_path("tokenizer", "").help(
            "a Hugging Face tokenizer.json; empty = a BPE trained in-process on the seeded corpus",
        ))
        .param(
            Param::input_path("corpus", "")
                .help("a UTF-8 text file, one document per line; empty = the seeded corpus"),
        )
        .check(check_params)
        .metric("mb_per_s")
        .metric("tokens_per_s")
        .build()
}

/// Trains the in-process byte-level BPE on `lines` (lossless: no prefix
/// space is added, so decoding returns the input byte for byte).
pub fn train_bpe(lines: &[String], vocab: usize) -> Result<Tokenizer, String> {
    let byte_level = ByteLevel::new(false, true, true);
    let mut tokenizer = Tokenizer::new(BPE::default());
    tokenizer.with_pre_tokenizer(Some(byte_level));
    tokenizer.with_decoder(Some(byte_level));
    let mut trainer: TrainerWrapper = BpeTrainer::builder()
        .vocab_size(vocab)
        .min_frequency(2)
        .show_progress(false)
        .special_tokens(vec![
            AddedToken::from("<s>", true),
            AddedToken::from("</s>", true),
            AddedToken::from("<pad>", true),
        ])
        .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
        .build()
        .into();
    tokenizer
        .train(&mut trainer, lines.iter())
        .map_err(|e| format!("training the BPE tokenizer: {e}"))?;
    Ok(tokenizer)
}

/// The tokenizer named by `path`, or the in-process BPE trained on the
/// corpus of `seed`.
pub fn load_or_train(path: &str, seed: u64) -> Result<(Tokenizer, String), String> {
    if path.is_empty() {
        let t = train_bpe(&corpus::lines(seed, TRAIN_LINES), TRAINED_VOCAB)?;
        Ok((
            t,
            format!("byte-level BPE, {TRAINED_VOCAB} tokens, trained in-process"),
        ))
    } else {
        Ok((load_file(Path::new(path))?, path.to_string()))
    }
}

/// A tokenizer.json with its own padding and truncation switched off: the
/// benchmarks pad, cut and mask themselves, and a file that pads to a
/// fixed length would otherwise change every count.
///
/// The JSON is parsed here first, and the tokenizers library's reading of
/// it is caught if it panics: it does on some malformed parts (a `decoder`
/// of the wrong shape) instead of returning an error (found by fuzzing).
pub fn load_file(path: &Path) -> Result<Tokenizer, String> {
    let shown = path.display();
    let bad = |why: String| format!("{shown} is not a tokenizer.json: {why}");
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {shown}: {e}"))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let mut t = std::panic::catch_unwind(|| serde_json::from_value::<Tokenizer>(json))
        .map_err(|_| bad("the tokenizers library could not read it".into()))?
        .map_err(|e| bad(e.to_string()))?;
    t.with_padding(None);
    t.with_truncation(None)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(t)
}

/// Checks `tokenizer` and `corpus` before anything runs.
pub fn check_params(params: &warpt_model::Params) -> Result<(), String> {
    for key in ["tokenizer", "corpus"] {
        let path = params.get(key).and_then(ParamValue::as_str).unwrap_or("");
        if !path.is_empty() && !Path::new(path).is_file() {
            return Err(format!("parameter '{key}': {path} is not a readable file"));
        }
    }
    Ok(())
}

/// The running benchmark.
#[derive(Default)]
pub struct Tokenize {
    tokenizer: Option<Tokenizer>,
    source: String,
    lines: Vec<String>,
    /// Lines per sample (the first ones, about [`SAMPLE_BYTES`]).
    batch: usize,
    /// Ids the parallel batch produced for the first lines, kept for validation.
    batch_ids: Vec<Vec<u32>>,
}

fn failed(what: &str, e: impl std::fmt::Display) -> BenchmarkError {
    BenchmarkError::Failed(format!("{what}: {e}"))
}

impl Benchmark for Tokenize {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let (tokenizer, source) = load_or_train(ctx.str_param("tokenizer")?, ctx.seed)
            .map_err(BenchmarkError::invalid("tokenizer"))?;
        let corpus_path = ctx.str_param("corpus")?;
        self.lines = if corpus_path.is_empty() {
            // Held-out text: a different stream from the training lines.
            corpus::lines(ctx.seed.wrapping_add(1), 12_000)
        } else {
            std::fs::read_to_string(corpus_path)
                .map_err(|e| failed(&format!("reading {corpus_path}"), e))?
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        };
        if self.lines.is_empty() {
            return Err(BenchmarkError::InvalidParam {
                key: "corpus".into(),
                reason: format!("{corpus_path} has no non-empty line"),
            });
        }
        let mut bytes = 0;
        self.batch = self
            .lines
            .iter()
            .take_while(|l| {
                bytes += l.len();
                bytes < SAMPLE_BYTES
            })
            .count()
            .max(1);
        self.tokenizer = Some(tokenizer);
        self.source = source;
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let tokenizer = warpt_harness::prepared(&self.tokenizer)?;
        let batch: Vec<&str> = self.lines[..self.batch]
            .iter()
            .map(String::as_str)
            .collect();
        let bytes: usize = batch.iter().map(|l| l.len()).sum();
        let first = tokenizer
            .encode_batch(batch.clone(), false)
            .map_err(|e| failed("encoding", e))?;
        let tokens: usize = first.iter().map(|e| e.get_ids().len()).sum();
        self.batch_ids = first
            .iter()
            .take(CHECKED_LINES)
            .map(|e| e.get_ids().to_vec())
            .collect();
        let defs = [
            SeriesDef::rate("mb_per_s", "MB/s", bytes as f64 / 1e6),
            SeriesDef::rate("tokens_per_s", "tokens/s", tokens as f64),
        ];
        let m = time_each(measure, ctx, NAME, &defs, || {
            tokenizer
                .encode_batch(batch.clone(), false)
                .map_err(|e| e.to_string())
        })
        .map_err(|e| failed("encoding", e))?;
        Ok(Measured {
            metrics: m.metrics,
            details: vec![
                ("tokenizer".into(), ParamValue::Str(self.source.clone())),
                (
                    "vocab_size".into(),
                    ParamValue::Int(tokenizer.get_vocab_size(true) as i64),
                ),
                (
                    "lines_per_sample".into(),
                    ParamValue::Int(batch.len() as i64),
                ),
                ("bytes_per_sample".into(), ParamValue::Int(bytes as i64)),
                ("tokens_per_sample".into(), ParamValue::Int(tokens as i64)),
                (
                    "threads".into(),
                    ParamValue::Int(
                        std::thread::available_parallelism().map_or(1, |n| n.get()) as i64
                    ),
                ),
            ],
            warnings: Vec::new(),
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let Some(tokenizer) = &self.tokenizer else {
            return Validation::fail("nothing was encoded");
        };
        let mut lossy = 0usize;
        for (line, ids) in self.lines.iter().zip(&self.batch_ids) {
            let single = match tokenizer.encode(line.as_str(), false) {
                Ok(e) => e,
                Err(e) => return Validation::fail(format!("single-threaded encode failed: {e}")),
            };
            if single.get_ids() != ids.as_slice() {
                return Validation::fail(format!(
                    "the parallel batch's ids differ from a single-threaded encode of {line:?}"
                ));
            }
            match tokenizer.decode(ids, false) {
                Ok(text) if text == *line => {}
                Ok(_) => lossy += 1,
                Err(e) => return Validation::fail(format!("decode failed: {e}")),
            }
        }
        let n = self.batch_ids.len();
        if self.source.contains("trained in-process") && lossy > 0 {
            return Validation::fail(format!(
                "{lossy} of {n} lines did not decode back to themselves with the lossless byte-level BPE"
            ));
        }
        let note = if lossy > 0 {
            format!(
                "; {lossy} lines did not round-trip (this tokenizer is lossy: normalisation or unknown tokens)"
            )
        } else {
            String::new()
        };
        Validation::pass(format!(
            "{n} lines: the parallel ids equal a single-threaded encode, and decode(encode(line)) = line for {}{note}",
            n - lossy
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest tokenizer.json the tokenizers library reads: a word-level model.
    fn word_level(decoder: &str) -> String {
        format!(
            r#"{{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
            "normalizer":null,"pre_tokenizer":{{"type":"Whitespace"}},"post_processor":null,
            "decoder":{decoder},
            "model":{{"type":"WordLevel","vocab":{{"[UNK]":0,"a":1,"b":2}},"unk_token":"[UNK]"}}}}"#
        )
    }

    fn load(text: &str) -> Result<Tokenizer, String> {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("tokenizer.json");
        std::fs::write(&path, text).expect("write");
        load_file(&path)
    }

    #[test]
    fn a_well_formed_file_loads_and_encodes() {
        let t = load(&word_level("null")).expect("loads");
        let ids = t.encode("a b a", false).expect("encodes");
        assert_eq!(ids.get_ids(), &[1, 2, 1]);
    }

    /// Found by `scripts/fuzz tokenizer_json`: tokenizers 0.23 reads the decoder
    /// with `expect("Helper")`, so a decoder that is not JSON panicked inside
    /// `Tokenizer::from_file` instead of returning its error.
    #[test]
    fn a_broken_decoder_is_an_error_naming_the_file_not_a_panic() {
        for decoder in [
            r#"{"type": "ByteLevel", "x": ]"#,
            r#"{"type": 1e99999}"#,
            "[1,",
        ] {
            let err = load(&word_level(decoder)).expect_err("refused");
            assert!(err.contains("is not a tokenizer.json"), "{err}");
        }
        let err = load(&word_level(r#"{"type": "NoSuchDecoder"}"#)).expect_err("refused");
        assert!(err.contains("is not a tokenizer.json"), "{err}");
    }
}
