//! `bert_infer`: MLPerf's BERT question answering as a system under test —
//! BERT (base by default, large selectable) on SQuAD-shaped inputs
//! (`[CLS] question [SEP] context [SEP]`, padded to `seq` = 384), start
//! and end logits from a QA head, on pepbench's packed encoder.

use std::collections::HashMap;

use candle_core::{Device, Tensor};
use candle_transformers::models::bert;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use warpt_harness::{Benchmark, BenchmarkError, Measure, MeasureResult, RunContext};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, ParamValue, Params, Validation};
use warpt_models::bert_dense::DenseBert;
use warpt_models::device::{self, MemoryPeak};
use warpt_models::encoder::{PackedBert, mean_pool_unit};
use warpt_models::model::tensor_values;
use warpt_models::packed::Precision;

use crate::bench::{self, ModelRules, Outcome, SpecParts};
use crate::loadgen::{QuerySample, Responder, Response, Scenario, SystemUnderTest};

/// Benchmark name within the suite.
pub const NAME: &str = "bert_infer";

const MODEL: ModelRules = ModelRules {
    name: "bert",
    server_latency_ms: 130.0,
    offline_min_count: 10833,
    library: 10833,
    token_bounds_ms: None,
};

/// The spec of `bert_infer`.
pub fn spec() -> BenchmarkSpec {
    bench::scenario_spec(SpecParts {
        name: NAME,
        scenario: Scenario::Offline,
        batch: Some(4),
        components: vec![BenchmarkComponent::Cpu, BenchmarkComponent::Gpu],
        description: "MLPerf BERT question answering: BERT-base (or large) on SQuAD-shaped seeded inputs padded to `seq`, \
             start/end logits per token, under the chosen LoadGen scenario (default Offline: samples/s). Weights \
             from the seed, or `model_dir` (Hugging Face config.json + model.safetensors). Validation: the encoder \
             against a plain f64 forward on a short input, a sample served in a batch equals it served alone, and \
             the QA head against an f64 product. `precision=bf16` rounds the operands of every product (linear layers and attention's) to bf16 \
             (products summed in f32, as PyTorch's autocast; AVX512_BF16 where the CPU has it). `dataset=FILE` (SQuAD v1.1 \
             JSON) makes its questions the samples; an accuracy run over it scores the answers' F1 (SQuAD's \
             evaluation) and fails below 99% of `reference_accuracy` (MLPerf's quality target).",
        devices: &["cpu", "cuda", "metal"],
        params: vec![
            Param::choice("model", "base", &["base", "large"]).help("base or large (BERT's shapes)"),
            Param::int("seq", 384, 8..=512).help("tokens per sample, padded (SQuAD: 384)"),
            Param::input_path("dataset", "").help(
                "a SQuAD v1.1 JSON file: its questions are the samples (words hashed to token ids); with accuracy=true the answers are scored (f1)",
            ),
            Param::float("reference_accuracy", 0.0, 0.0..=100.0).help(
                "the reference model's F1 (90.874 for BERT-large in FP32): an F1 below 99% of it fails (MLPerf's quality target); 0 = no target",
            ),
            Param::choice("precision", "f32", Precision::NAMES).help(
                "f32, bf16 or f16: the operands of every product, linear layers' and attention's (bf16, f16: rounded, sums in f32; softmax, norms and GELU in f32)",
            ),
        ],
        check: check_params,
        metrics: &[],
    })
}

/// BERT's configuration for `name` (`base` or `large`).
pub fn config(name: &str) -> Result<bert::Config, String> {
    let mut c = warpt_models::bert::minilm_config();
    let (hidden, layers, heads) = match name {
        "base" => (768, 12, 12),
        "large" => (1024, 24, 16),
        other => return Err(format!("parameter 'model': '{other}' is not base or large")),
    };
    c.hidden_size = hidden;
    c.num_hidden_layers = layers;
    c.num_attention_heads = heads;
    c.intermediate_size = 4 * hidden;
    Ok(c)
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    bench::check_common(params)?;
    let s = |k: &str| params.get(k).and_then(ParamValue::as_str).unwrap_or("");
    config(s("model"))?;
    bench::precision(params)?;
    let dataset = s("dataset");
    if !dataset.is_empty() && !std::path::Path::new(dataset).is_file() {
        return Err(format!("parameter 'dataset': {dataset} is not a file"));
    }
    let (accuracy, reference) = crate::quality::requested(params);
    if reference > 0.0 && (!accuracy || dataset.is_empty()) {
        return Err(
            "parameter 'reference_accuracy': F1 is scored in an accuracy run (accuracy=true) over a SQuAD dataset (dataset=FILE)"
                .into(),
        );
    }
    Ok(())
}

/// The encoder a SUT runs: warpt's packed engine on the CPU, BERT on
/// candle's operations on a GPU.
enum Encoder {
    Packed(PackedBert),
    Dense {
        model: DenseBert,
        precision: Precision,
        device: Device,
        hidden: usize,
    },
}

impl Encoder {
    fn precision(&self) -> Precision {
        match self {
            Encoder::Packed(p) => p.precision(),
            Encoder::Dense { precision, .. } => *precision,
        }
    }

    /// The last hidden states, `batch × seq × hidden` row-major, on the host.
    fn forward(
        &self,
        ids: &[u32],
        mask: &[u32],
        batch: usize,
        seq: usize,
    ) -> Result<Vec<f32>, String> {
        match self {
            Encoder::Packed(p) => p.forward(ids, mask, batch, seq),
            Encoder::Dense { model, device, .. } => (|| {
                let ids = Tensor::from_slice(ids, (batch, seq), device)?;
                let mask = Tensor::from_slice(mask, (batch, seq), device)?;
                model
                    .forward(&ids, &mask)?
                    .to_dtype(candle_core::DType::F32)?
                    .flatten_all()?
                    .to_vec1::<f32>()
            })()
            .map_err(|e| format!("running the encoder: {e}")),
        }
    }

    /// Pooled unit-norm embeddings (what the f64 reference gives).
    fn embed(
        &self,
        ids: &[u32],
        mask: &[u32],
        batch: usize,
        seq: usize,
    ) -> Result<Vec<Vec<f32>>, String> {
        match self {
            Encoder::Packed(p) => p.embed(ids, mask, batch, seq),
            Encoder::Dense { hidden, .. } => Ok(mean_pool_unit(
                &self.forward(ids, mask, batch, seq)?,
                mask,
                batch,
                seq,
                *hidden,
            )),
        }
    }

    /// Largest difference from the f64 reference's pooled output that
    /// still agrees: the packed engine rounds only the linear layers'
    /// weights and inputs to bf16 (some 0.4% each); candle's bf16 BERT
    /// keeps every activation in bf16.
    fn tolerance(&self) -> f64 {
        match (self, self.precision()) {
            (_, Precision::F32) => 2e-4,
            (Encoder::Packed(_), Precision::Bf16) => 5e-3,
            (Encoder::Dense { .. }, Precision::Bf16) => 5e-2,
            // Eleven significant bits to bf16's eight: an eighth of its
            // rounding, with a margin.
            (Encoder::Packed(_), Precision::F16) => 1e-3,
            (Encoder::Dense { .. }, Precision::F16) => 1e-2,
        }
    }
}

/// The BERT SUT.
pub struct BertSut {
    encoder: Encoder,
    memory: MemoryPeak,
    /// The QA head: 2 × hidden, then its 2 biases.
    qa_weight: Vec<f32>,
    qa_bias: Vec<f32>,
    hidden: usize,
    seq: usize,
    batch: usize,
    seed: u64,
    name: String,
    /// The dataset's questions (`dataset`), else none: seeded samples.
    examples: Vec<crate::squad::Example>,
}

/// SQuAD's special token ids (bert-base-uncased's vocabulary).
const CLS: u32 = 101;
const SEP: u32 = 102;

impl BertSut {
    /// Library sample `index`: token ids and attention mask, `seq` long.
    pub fn sample(&self, index: usize) -> (Vec<u32>, Vec<u32>) {
        if let Some(e) = self.examples.get(index) {
            return (e.ids.clone(), e.mask.clone());
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(
            self.seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        );
        let seq = self.seq;
        let mut pick = |lo: u64, hi: u64| lo + rng.next_u64() % (hi - lo);
        // SQuAD v1.1 at 384: questions of ~8–32 tokens, the whole window
        // usually full of context, sometimes not.
        let question = (pick(8, 33) as usize).min(seq.saturating_sub(4).max(1));
        let real = (pick((seq as u64) / 3, seq as u64 + 1) as usize).clamp(question + 3, seq);
        let mut ids = Vec::with_capacity(seq);
        ids.push(CLS);
        for _ in 0..question {
            ids.push(pick(1996, 30522) as u32);
        }
        ids.push(SEP);
        while ids.len() < real - 1 {
            ids.push(pick(1996, 30522) as u32);
        }
        ids.push(SEP);
        let mut mask = vec![1u32; ids.len()];
        ids.resize(seq, 0);
        mask.resize(seq, 0);
        (ids, mask)
    }

    /// Start and end logits (`seq × 2`, row-major) of each of `indices`.
    pub fn logits(&self, indices: &[usize]) -> Result<Vec<Vec<f32>>, String> {
        let (mut ids, mut mask) = (Vec::new(), Vec::new());
        for &i in indices {
            let (a, b) = self.sample(i);
            ids.extend(a);
            mask.extend(b);
        }
        let hidden = self.encoder.forward(&ids, &mask, indices.len(), self.seq)?;
        self.memory.sample();
        let h = self.hidden;
        Ok(hidden
            .chunks_exact(self.seq * h)
            .map(|sample| {
                sample
                    .chunks_exact(h)
                    .flat_map(|token| {
                        (0..2).map(move |k| {
                            let w = &self.qa_weight[k * h..][..h];
                            token.iter().zip(w).map(|(a, b)| a * b).sum::<f32>() + self.qa_bias[k]
                        })
                    })
                    .collect()
            })
            .collect())
    }
}

fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl SystemUnderTest for BertSut {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn max_batch(&self) -> usize {
        self.batch
    }

    fn process(&self, batch: &[QuerySample], responder: &Responder) -> Result<(), String> {
        let indices: Vec<usize> = batch.iter().map(|s| s.index).collect();
        let logits = self.logits(&indices)?;
        for (sample, l) in batch.iter().zip(logits) {
            responder.complete(
                sample,
                Response {
                    data: to_bytes(&l),
                    tokens: None,
                },
            );
        }
        Ok(())
    }
}

/// The encoder's tensors: from `model_dir` (Hugging Face layout) or the seed.
fn load(
    dir: &str,
    c: &mut bert::Config,
    seed: u64,
) -> Result<(HashMap<String, Tensor>, &'static str), String> {
    if dir.is_empty() {
        let t = warpt_models::bert::generate(c, seed, &Device::Cpu)
            .map_err(|e| format!("generating the weights: {e}"))?;
        return Ok((t, "seeded"));
    }
    let dir = std::path::Path::new(dir);
    let text = std::fs::read_to_string(dir.join("config.json"))
        .map_err(|e| format!("{}: {e}", dir.join("config.json").display()))?;
    *c = serde_json::from_str(&text).map_err(|e| format!("config.json: {e}"))?;
    let file = dir.join("model.safetensors");
    let t = candle_core::safetensors::load(&file, &Device::Cpu)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok((t, "model_dir"))
}

/// The running benchmark.
#[derive(Default)]
pub struct BertInfer {
    sut: Option<BertSut>,
    config: Option<bert::Config>,
    outcome: Option<Outcome>,
    /// The accuracy run's F1 x 100 over the dataset's questions.
    f1: Option<f64>,
}

/// An accuracy run's F1 x 100 over the dataset's questions (none for
/// seeded samples or a performance run).
fn f1(
    sut: &BertSut,
    outcome: &Outcome,
) -> Result<Option<crate::quality::Accuracy>, BenchmarkError> {
    if sut.examples.is_empty()
        || outcome.summary.settings.mode != crate::loadgen::Mode::AccuracyOnly
    {
        return Ok(None);
    }
    let answered: Vec<(String, Vec<String>)> = outcome
        .summary
        .result
        .samples
        .iter()
        .filter_map(|r| {
            let e = sut.examples.get(r.index)?;
            let logits: Vec<f32> = r
                .data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            (logits.len() == sut.seq * 2).then(|| (e.answer(&logits), e.answers.clone()))
        })
        .collect();
    crate::quality::squad_f1(&answered)
        .map(Some)
        .map_err(BenchmarkError::Failed)
}

impl Benchmark for BertInfer {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let dev = device::open(ctx.str_param("device")?)?;
        let memory = MemoryPeak::new(&dev);
        let model = ctx.str_param("model")?;
        let mut c = config(model).map_err(BenchmarkError::Failed)?;
        let (tensors, source) =
            load(ctx.str_param("model_dir")?, &mut c, ctx.seed).map_err(BenchmarkError::Failed)?;
        if !PackedBert::supports(&c) {
            return Err(BenchmarkError::Failed(
                "the model is not a BERT this encoder computes (GELU with erf, absolute positions)"
                    .into(),
            ));
        }
        let precision =
            bench::precision(&ctx.params).map_err(BenchmarkError::invalid("precision"))?;
        let encoder = if dev.is_cpu() {
            Encoder::Packed(
                PackedBert::load(&tensors, &c, precision).map_err(BenchmarkError::Failed)?,
            )
        } else {
            let dtype = match precision {
                Precision::F32 => candle_core::DType::F32,
                Precision::Bf16 => candle_core::DType::BF16,
                Precision::F16 => candle_core::DType::F16,
            };
            Encoder::Dense {
                model: DenseBert::load(tensors.clone(), &c, dtype, &dev)
                    .map_err(|e| BenchmarkError::Failed(format!("building BERT: {e}")))?,
                precision,
                device: dev.clone(),
                hidden: c.hidden_size,
            }
        };
        memory.sample();
        let h = c.hidden_size;
        let head = |name: &str, len: usize| -> Result<Vec<f32>, BenchmarkError> {
            match tensors.get(name) {
                Some(t) => t
                    .flatten_all()
                    .and_then(|t| t.to_vec1::<f32>())
                    .map_err(|e| BenchmarkError::Failed(format!("{name}: {e}"))),
                None => Ok(tensor_values(ctx.seed, name, len)),
            }
        };
        let qa_weight = head("qa_outputs.weight", 2 * h)?;
        let qa_bias = head("qa_outputs.bias", 2)?;
        if qa_weight.len() != 2 * h || qa_bias.len() != 2 {
            return Err(BenchmarkError::Failed(
                "qa_outputs has the wrong shape".into(),
            ));
        }
        let seq = ctx.int_param("seq", 8)? as usize;
        let dataset = ctx.str_param("dataset")?;
        let examples = if dataset.is_empty() {
            Vec::new()
        } else {
            crate::squad::load(std::path::Path::new(dataset), seq).map_err(|e| {
                BenchmarkError::InvalidParam {
                    key: "dataset".into(),
                    reason: e,
                }
            })?
        };
        self.sut = Some(BertSut {
            encoder,
            memory,
            qa_weight,
            qa_bias,
            hidden: h,
            seq,
            batch: ctx.int_param("batch", 1)? as usize,
            seed: ctx.seed,
            name: format!(
                "warpt BERT-{model} ({source} weights, {} layers, hidden {h}, seq {seq}, {}{})",
                c.num_hidden_layers,
                precision.name(),
                if examples.is_empty() {
                    String::new()
                } else {
                    format!(", {} SQuAD questions from {dataset}", examples.len())
                }
            ),
            examples,
        });
        if let Some(sut) = &self.sut {
            device::settle(&dev, || {
                let (ids, mask) = sut.sample(0);
                sut.encoder.forward(&ids, &mask, 1, sut.seq)
            })?;
            sut.memory.sample();
        }
        self.config = Some(c);
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let sut = warpt_harness::prepared(&self.sut)?;
        let mut base = bench::settings(ctx, &MODEL, 8)?;
        if !sut.examples.is_empty() && ctx.int_param("samples", 0)? == 0 {
            base.performance_sample_count = sut.examples.len() as u64;
            base.total_sample_count = sut.examples.len() as u64;
        }
        let outcome = bench::run(ctx, measure, sut, &base, NAME)?;
        let mut m = crate::metrics::measured(&outcome, measure);
        if let Some(f1) = f1(sut, &outcome)? {
            m.metrics.push(warpt_model::BenchmarkMetric::single(
                "f1", f1.value, "%", true,
            ));
            m.details
                .push(("accuracy_scored".into(), ParamValue::Int(f1.scored as i64)));
            self.f1 = Some(f1.value);
        }
        m.details.push(("sut".into(), ParamValue::from(sut.name())));
        let precision = sut.encoder.precision();
        match &sut.encoder {
            // Every product is the GEMM engine's (weights packed once).
            Encoder::Packed(_) => {
                m.details.push((
                    "engine".into(),
                    ParamValue::from(warpt_models::packed::ENGINE),
                ));
                m.details
                    .push(("isa".into(), ParamValue::from(precision.isa())));
                m.details.extend(device::details(&Device::Cpu, &sut.memory));
            }
            Encoder::Dense { device: dev, .. } => {
                m.details.push((
                    "engine".into(),
                    ParamValue::from("warpt BERT on candle operations"),
                ));
                m.details.extend(device::details(dev, &sut.memory));
            }
        }
        m.details
            .push(("precision".into(), ParamValue::from(precision.name())));
        m.details.push((
            "counting".into(),
            ParamValue::from("a sample is one SQuAD-shaped input of `seq` tokens (padded); its response is seq x 2 f32 logits"),
        ));
        self.outcome = Some(outcome);
        Ok(m)
    }

    fn validate(&mut self, ctx: &RunContext) -> Validation {
        let (Some(sut), Some(c), Some(outcome)) = (&self.sut, &self.config, &self.outcome) else {
            return Validation::fail("nothing was measured");
        };
        let checked = check(
            sut,
            c,
            outcome,
            ctx.seed,
            ctx.str_param("model_dir").unwrap_or("").is_empty(),
        )
        .and_then(|msg| {
            let reference = ctx.float_param("reference_accuracy").unwrap_or(0.0);
            crate::quality::with_accuracy(msg, "F1", self.f1, reference)
        });
        match checked {
            Ok(msg) => Validation::pass(msg),
            Err(msg) => Validation::fail(msg),
        }
    }
}

/// The encoder against the f64 reference (seeded weights only: the
/// reference regenerates them), a served answer against the same sample
/// alone, and the QA head against f64.
fn check(
    sut: &BertSut,
    c: &bert::Config,
    outcome: &Outcome,
    seed: u64,
    seeded: bool,
) -> Result<String, String> {
    let answers = crate::check_answers(&outcome.summary, |r| r.data.len() == sut.seq * 2 * 4)?;
    let mut notes = vec![answers];
    if seeded {
        let ids = [CLS, 2023, 2003, 1037, 3231, SEP];
        let got = sut.encoder.embed(&ids, &[1; 6], 1, ids.len())?;
        let want = warpt_models::bert::reference_embedding(c, seed, &ids);
        let worst = got[0]
            .iter()
            .zip(&want)
            .map(|(g, w)| (*g as f64 - w).abs())
            .fold(0.0, f64::max);
        let tolerance = sut.encoder.tolerance();
        if worst > tolerance {
            return Err(format!(
                "the encoder's pooled output differs from the f64 reference by {worst:.2e} (tolerance {tolerance:.0e})"
            ));
        }
        notes.push(format!(
            "encoder within {worst:.1e} of the f64 reference on a 6-token input"
        ));
    }
    let first = outcome
        .summary
        .result
        .samples
        .first()
        .ok_or("no sample was answered")?;
    let alone = sut.logits(&[first.index])?.remove(0);
    let served: Vec<f32> = first
        .data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let scale = alone.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-30);
    let off = served
        .iter()
        .zip(&alone)
        .map(|(a, b)| (a - b).abs() / scale)
        .fold(0f32, f32::max);
    // A row's figures move with the batch only in their last bits: the
    // packed engine splits a product deeper than one slice of its kernel
    // (f32's 384) between threads by rows or by columns as the batch
    // decides, which reorders the slices' partial sums (3.8e-6 on a
    // 12-layer f32 encoder, 2 threads, AVX2), and on a GPU the batch may
    // change which GEMM kernel runs. bf16 rounds the activations after
    // every product, so a last-bit difference can become one of bf16's
    // (1.6e-2 on that encoder where bf16 is emulated on the f32 tiles,
    // CPUs without AVX512_BF16, whose bf16 kernel is 1024 deep): bf16 is
    // held to its own tolerance, as f16 is.
    let batch_tol = match sut.encoder.precision() {
        Precision::Bf16 | Precision::F16 => sut.encoder.tolerance() as f32,
        Precision::F32 => 1e-4,
    };
    if off > batch_tol {
        return Err(format!(
            "sample {} served in a batch differs from it alone by {off:.2e} of the largest logit (tolerance {batch_tol:.0e})",
            first.index
        ));
    }
    // The QA head in f64 on the hidden states of that sample.
    let (ids, mask) = sut.sample(first.index);
    let hidden = sut.encoder.forward(&ids, &mask, 1, sut.seq)?;
    let h = sut.hidden;
    let head_off = hidden
        .chunks_exact(h)
        .enumerate()
        .flat_map(|(t, row)| {
            let alone = &alone;
            (0..2).map(move |k| {
                let w = &sut.qa_weight[k * h..][..h];
                let want: f64 = row
                    .iter()
                    .zip(w)
                    .map(|(a, b)| *a as f64 * *b as f64)
                    .sum::<f64>()
                    + sut.qa_bias[k] as f64;
                (alone[t * 2 + k] as f64 - want).abs() / scale as f64
            })
        })
        .fold(0f64, f64::max);
    if head_off > 1e-5 {
        return Err(format!(
            "the QA head differs from an f64 product by {head_off:.2e}"
        ));
    }
    notes.push(format!(
        "sample {} in a batch equals it alone within {off:.1e}; QA head within {head_off:.1e} of f64",
        first.index
    ));
    Ok(notes.join("; "))
}
