//! A Llama decoder chosen by `llm_infer`'s parameters (`model`,
//! `model_dir`, `model_file`, `precision`, `device`), and the checks of
//! what it generates: what pepbench's `llm_infer` and the mlperf suite's
//! LLM system under test share.

use candle_core::Device;
use candle_core::quantized::GgmlDType;
use warpt_harness::{BenchmarkError, RunContext};
use warpt_model::{ParamValue, Params};

use crate::family::Family;
use crate::llm::{Decoder, Precision, random_prompts};
use crate::model::Preset;
use crate::reference::Reference;

/// The benchmark whose parameters these are (the key of a refusal).
const NAME: &str = "llm_infer";

/// Where the weights come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Generated from the seed.
    Preset(Preset),
    /// A Hugging Face directory (`model_dir`).
    Dir(String),
    /// A GGUF file (`model_file`) and the storage type of most of its weights.
    File(String, String),
}

/// The checked parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the weights come from.
    pub source: Source,
    /// The presets' family (`family`; a directory's or file's own family
    /// is read from it).
    pub family: Family,
    /// The precision the decoder runs in.
    pub precision: Precision,
    /// Requests per batch.
    pub batch: usize,
    /// Prompt tokens per request.
    pub prompt: usize,
    /// Tokens generated per request.
    pub n_gen: usize,
}

/// The checked parameters of `llm_infer` (and of the mlperf LLM system
/// under test), or why they do not check out.
pub fn config(params: &Params) -> Result<Config, String> {
    let s = |k: &str| params.get(k).and_then(ParamValue::as_str).unwrap_or("");
    let int = |k: &str, min: i64, max: i64| -> Result<usize, String> {
        let v = params
            .get(k)
            .and_then(ParamValue::as_i64)
            .ok_or_else(|| format!("parameter '{k}' is missing"))?;
        if (min..=max).contains(&v) {
            Ok(v as usize)
        } else {
            Err(format!(
                "parameter '{k}' must be from {min} to {max}, not {v}"
            ))
        }
    };
    let device = s("device");
    if device != "cpu" && device != "cuda" && device != "metal" {
        return Err(format!(
            "parameter 'device': '{device}' is not one of cpu, cuda, metal"
        ));
    }
    let preset = Preset::parse(s("model"))?;
    let family = match s("family") {
        "" => Family::Llama,
        name => Family::from_model_type(name)
            .filter(|f| Family::LLM.contains(f))
            .ok_or_else(|| {
                format!(
                    "parameter 'family': '{name}' is not one of {}",
                    Family::llm_list()
                )
            })?,
    };
    let mut precision = Precision::parse(s("precision"))?;
    let (dir, file) = (s("model_dir"), s("model_file"));
    let (source, context, name) = match (dir.is_empty(), file.is_empty()) {
        (true, true) => (
            Source::Preset(preset),
            preset_shape(family, preset)?.context,
            format!("{} {} model", family.model_type(), preset.name()),
        ),
        (false, true) => (
            Source::Dir(dir.to_string()),
            crate::hf::check_dir(dir)?.0.context,
            format!("model in {dir}"),
        ),
        (true, false) => {
            let info = crate::gguf::check_file(file)?;
            // The file's type is the precision; f32 (the default) means
            // "as stored", anything else must say what the file holds.
            match Precision::parse(&info.precision) {
                Ok(p) => {
                    if precision != p && precision != Precision::F32 {
                        return Err(format!(
                            "parameter 'precision': {file} holds {} weights, not {}",
                            info.precision,
                            precision.name()
                        ));
                    }
                    precision = p;
                }
                Err(_) if precision != Precision::F32 => {
                    return Err(format!(
                        "parameter 'precision': {file} holds {} weights, not {}",
                        info.precision,
                        precision.name()
                    ));
                }
                Err(_) => {}
            }
            (
                Source::File(file.to_string(), info.precision),
                info.shape.context,
                format!("model in {file}"),
            )
        }
        (false, false) => {
            return Err("parameters 'model_dir' and 'model_file' name two models; give one".into());
        }
    };
    let c = Config {
        source,
        family,
        precision,
        batch: int("batch", 1, 1024)?,
        prompt: int("prompt_tokens", 1, 1 << 20)?,
        n_gen: int("gen_tokens", 2, 1 << 20)?,
    };
    if c.prompt + c.n_gen > context {
        return Err(format!(
            "parameter 'prompt_tokens': {} prompt + {} generated tokens exceed the {name}'s context of {context}",
            c.prompt, c.n_gen
        ));
    }
    Ok(c)
}

/// The shape of `family`'s `preset`, as its configuration gives it.
pub fn preset_shape(family: Family, preset: Preset) -> Result<crate::model::Shape, String> {
    if family == Family::Llama {
        return Ok(preset.shape());
    }
    crate::hf::parse_config(crate::family_presets::preset_config(family, preset))
        .map(|(shape, _)| shape)
        .map_err(|e| format!("the {} {} preset{e}", family.model_type(), preset.name()))
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    config(params).map(|_| ())
}

/// The device named by `device`, or why it cannot be had (see
/// [`crate::device::open`]).
pub fn device(name: &str) -> Result<Device, BenchmarkError> {
    crate::device::open(name)
}

/// A candle error as a benchmark failure saying what failed.
pub fn candle_err(what: &str) -> impl Fn(candle_core::Error) -> BenchmarkError + '_ {
    move |e| BenchmarkError::Failed(format!("{what}: {e}"))
}

/// Bytes a seeded preset of `shape` in `precision` needs at its peak,
/// estimated before anything is allocated: the weights as generated (f32),
/// twice their size in the run's format (the engine's copy and the
/// conversion into it), and the KV cache of `batch` sequences of `tokens`.
pub fn preset_bytes(
    family: Family,
    shape: &crate::model::Shape,
    precision: Precision,
    batch: usize,
    tokens: usize,
) -> u64 {
    let p = crate::family_presets::estimated_parameters(family, shape) as f64;
    let per_weight = precision.bytes_per_weight();
    let kv = 2
        * shape.layers
        * batch
        * shape.kv_heads
        * shape.head_dim
        * tokens
        * precision.dtype().size_in_bytes();
    (p * 4.0 + 2.0 * per_weight * p) as u64 + kv as u64
}

/// Why a seeded preset cannot run in the memory available now (more than
/// 80% of it needed), naming the nearest preset and precision that would:
/// the same preset in a smaller format first, then smaller presets in the
/// run's own. `None` when it fits, or when the memory cannot be read.
pub fn memory_refusal(preset: Preset, c: &Config, dev: &Device) -> Option<String> {
    let budget = crate::device::memory_budget(dev);
    let family = c.family;
    let shape = |p: Preset| preset_shape(family, p).unwrap_or_else(|_| p.shape());
    let parameters = |p: Preset| crate::family_presets::estimated_parameters(family, &shape(p));
    let bytes =
        |p: Preset, q: Precision| preset_bytes(family, &shape(p), q, c.batch, c.prompt + c.n_gen);
    let fits = |p: Preset, q: Precision| budget.fits(bytes(p, q));
    if fits(preset, c.precision) {
        return None;
    }
    let smaller_formats = [Precision::Bf16, Precision::Q8_0, Precision::Q4_0]
        .into_iter()
        .filter(|q| q.bytes_per_weight() < c.precision.bytes_per_weight())
        .filter(|q| {
            crate::support::refusal(family, q.name(), if dev.is_cpu() { "cpu" } else { "cuda" })
                .is_none()
        })
        .map(|q| (preset, q));
    let smaller_presets = Preset::ALL
        .into_iter()
        .rev()
        .filter(|&p| parameters(p) < parameters(preset))
        .map(|p| (p, c.precision));
    let nearest = smaller_formats
        .chain(smaller_presets)
        .find(|&(p, q)| fits(p, q))
        .map_or("none of the presets fits".to_string(), |(p, q)| {
            format!("model={} precision={} fits", p.name(), q.name())
        });
    let gib = crate::sampling::gib;
    Some(format!(
        "the {} {} preset ({:.2} B parameters) in {} at batch {} needs about {:.1} GiB, and {:.1} GiB of {} memory is available; {nearest}",
        family.model_type(),
        preset.name(),
        parameters(preset) as f64 / 1e9,
        c.precision.name(),
        c.batch,
        gib(bytes(preset, c.precision)),
        gib(budget.available),
        if dev.is_cpu() { "host" } else { "device" }
    ))
}

/// The decoder `c` describes, on `dev` (the context's `device`, opened).
pub fn build(c: &Config, ctx: &RunContext, dev: &Device) -> Result<Decoder, BenchmarkError> {
    Ok(match &c.source {
        Source::Preset(preset) => {
            if let Some(why) =
                crate::support::refusal(c.family, c.precision.name(), ctx.str_param("device")?)
            {
                return Err(BenchmarkError::Skipped(why));
            }
            if let Some(why) = memory_refusal(*preset, c, dev) {
                return Err(BenchmarkError::Skipped(why));
            }
            Decoder::seeded(c.family, *preset, ctx.seed, c.precision, dev)
                .map_err(BenchmarkError::Failed)?
        }
        Source::Dir(dir) => {
            let family = crate::hf::check_dir(dir)
                .map_err(BenchmarkError::Failed)?
                .1
                .family();
            if let Some(why) =
                crate::support::refusal(family, c.precision.name(), ctx.str_param("device")?)
            {
                return Err(BenchmarkError::Skipped(why));
            }
            Decoder::from_dir(dir, c.precision, dev).map_err(BenchmarkError::Failed)?
        }
        Source::File(file, _) => {
            Decoder::from_gguf(file, dev)
                .map_err(BenchmarkError::Failed)?
                .0
        }
    })
}

/// The model the context's `model` / `model_dir` / `model_file` and
/// `precision` parameters name (as `llm_infer` takes them) on `dev` (its
/// `device`, opened), its precision, and whether its weights went through
/// the GGUF path (for [`check`]). The mlperf suite's LLM system under test
/// uses it.
pub fn decoder(
    ctx: &RunContext,
    dev: &Device,
) -> Result<(Decoder, Precision, bool), BenchmarkError> {
    let c = config(&ctx.params).map_err(BenchmarkError::invalid(NAME))?;
    let through_gguf = c.precision.quantized().is_some() || matches!(c.source, Source::File(..));
    Ok((build(&c, ctx, dev)?, c.precision, through_gguf))
}

/// The three checks of a decoder in `precision` (`through_gguf`: its
/// weights went through the GGUF path) built from `seed`: the tiny preset
/// against the f64 reference, then repeatability and batched = alone on
/// the measured `decoder` with `prompts`. The message says what agreed and
/// by how much. The mlperf suite's LLM system under test shares it.
pub fn check(
    precision: Precision,
    through_gguf: bool,
    decoder: &Decoder,
    prompts: &[Vec<u32>],
    seed: u64,
) -> Result<String, String> {
    let err = |e: candle_core::Error| format!("generating for validation: {e}");
    // 1. The tiny preset at this precision against the f64 reference (on
    //    the same quantized weights, dequantized, for q8_0 and q4_0).
    let (plen, n_gen) = (8, 8);
    let dev = decoder.device();
    let tiny = Decoder::generated(Preset::Tiny.shape(), seed, precision, dev).map_err(err)?;
    let prompt = random_prompts(seed ^ 1, 1, plen, tiny.shape.vocab).remove(0);
    let got = tiny
        .generate(std::slice::from_ref(&prompt), n_gen)
        .map_err(err)?;
    let mut reference = match precision.quantized() {
        None => Reference::new(Preset::Tiny.shape(), seed),
        Some(qtype) => {
            let shape = Preset::Tiny.shape();
            let weights = crate::model::generate(&shape, seed, &candle_core::Device::Cpu)
                .and_then(|ts| {
                    ts.into_iter()
                        .map(|(name, t)| {
                            let q = crate::gguf::quantize(&t, qtype)?;
                            let v = q.dequantize(&candle_core::Device::Cpu)?;
                            let v = v.flatten_all()?.to_vec1::<f32>()?;
                            Ok((name, v.into_iter().map(f64::from).collect()))
                        })
                        .collect::<candle_core::Result<_>>()
                })
                .map_err(err)?;
            Reference::from_weights(shape, weights)
        }
    };
    let (want_logits, want_tokens, gaps) = reference.generate(&prompt, n_gen);
    let scale = want_logits.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let worst = relative_error(&got.first_logits, &want_logits)?;
    let tol = precision.logit_tolerance();
    if worst > tol {
        return Err(format!(
            "tiny preset in {}: logits differ from the f64 reference by {worst:.2e} of the largest (tolerance {tol:.0e})",
            precision.name()
        ));
    }
    // 1b. For q8_0 and q4_0 the activations are quantized too, so the bound
    //     above is loose; the same GGUF path in f32 blocks must then match
    //     the reference as closely as the dense f32 model does.
    let gguf_note = match through_gguf {
        false => String::new(),
        true => {
            let shape = Preset::Tiny.shape();
            let tensors = crate::model::generate(&shape, seed, dev).map_err(err)?;
            let f32_gguf = Decoder::quantized(shape, &tensors, GgmlDType::F32, dev)?;
            let got = f32_gguf
                .generate(std::slice::from_ref(&prompt), 1)
                .map_err(err)?;
            let want = Reference::new(shape, seed).generate(&prompt, 1).0;
            let off = relative_error(&got.first_logits, &want)?;
            let tol = Precision::F32.logit_tolerance();
            if off > tol {
                return Err(format!(
                    "tiny preset through GGUF in f32 blocks: logits differ from the f64 reference by {off:.2e} of the largest (tolerance {tol:.0e})"
                ));
            }
            format!("; through GGUF in f32 blocks within {off:.1e} (tolerance {tol:.0e})")
        }
    };
    // Tokens must agree while the reference chose them by more than four
    // times the error seen in the logits; past a close call the sequences
    // may rightly part.
    let firm = gaps
        .iter()
        .take_while(|&&g| g > 4.0 * worst.max(1e-9) * scale)
        .count();
    if got.tokens[0][..firm] != want_tokens[..firm] {
        // What the model's own first logits say of the two choices, for
        // the report: a token that its logits do not rank first was not
        // chosen from them.
        let first = got
            .first_logits
            .to_vec2::<f32>()
            .map_err(|e| format!("reading logits for validation: {e}"))?
            .swap_remove(0);
        let at = |t: u32| first.get(t as usize).copied().unwrap_or(f32::NAN);
        let (g, w) = (got.tokens[0][0], want_tokens[0]);
        return Err(format!(
            "tiny preset in {}: greedy tokens {:?} differ from the f64 reference's {:?} \
             (the model's first logits: {g} -> {:.4}, {w} -> {:.4}; the reference's: {:.4}, {:.4})",
            precision.name(),
            &got.tokens[0][..firm],
            &want_tokens[..firm],
            at(g),
            at(w),
            want_logits.get(g as usize).copied().unwrap_or(f64::NAN),
            want_logits.get(w as usize).copied().unwrap_or(f64::NAN),
        ));
    }
    // 1c. The last decode step, on the engine's own tokens (so a close call
    //     earlier cannot excuse it): the reference fed the prompt and every
    //     generated token but the last gives the logits the last was chosen
    //     from. For q8_0 / q4_0 this is the block kernels' own product.
    reference.reset();
    let mut want_last = Vec::new();
    for &t in prompt.iter().chain(&got.tokens[0][..n_gen - 1]) {
        want_last = reference.step(t);
    }
    let decode_off = relative_error(&got.last_logits, &want_last)?;
    if decode_off > tol {
        return Err(format!(
            "tiny preset in {}: the last decode step's logits differ from the f64 reference by {decode_off:.2e} of the largest (tolerance {tol:.0e})",
            precision.name()
        ));
    }
    // 2. Repeatability, and 3. batched = alone, on the measured model.
    let short: Vec<Vec<u32>> = prompts
        .iter()
        .map(|p| p[..p.len().min(16)].to_vec())
        .collect();
    let a = decoder.generate(&short, 4).map_err(err)?;
    let b = decoder.generate(&short, 4).map_err(err)?;
    if a.tokens != b.tokens {
        return Err("the same prompts gave different tokens on a second run".into());
    }
    // 4. The measured model's KV cache (whatever its family or engine): the
    //    last decode step's logits equal those of the same tokens prefilled
    //    in one pass without a cache.
    let fresh = decoder
        .uncached_last_logits(&short[0], &a.tokens[0])
        .map_err(err)?;
    let want_row: Vec<f64> = fresh
        .to_vec2::<f32>()
        .map_err(|e| format!("reading logits for validation: {e}"))?
        .swap_remove(0)
        .into_iter()
        .map(f64::from)
        .collect();
    let cache_off = relative_error(&a.last_logits, &want_row)?;
    let cache_tol = precision.logit_tolerance();
    if cache_off > cache_tol {
        return Err(format!(
            "the measured model's last decode step differs from the same tokens recomputed without a cache by {cache_off:.2e} of the largest logit (tolerance {cache_tol:.0e})"
        ));
    }
    // Batched and alone, a request's products run in other shapes and
    // sum in other orders; below f32 a last-bit difference can round an
    // activation the other way, so where two tokens' logits are closer
    // than the precision's tolerance the two runs may rightly choose
    // differently (a random bf16 model's request parted at its second
    // token). Tokens must agree up to such a close call.
    let mut close_calls = 0;
    if short.len() > 1 {
        for (i, p) in short.iter().enumerate() {
            let alone = decoder.generate(std::slice::from_ref(p), 4).map_err(err)?;
            let (batched, alone) = (&a.tokens[i], &alone.tokens[0]);
            let Some(at) = batched.iter().zip(alone).position(|(x, y)| x != y) else {
                continue;
            };
            let logits = decoder
                .uncached_last_logits(p, &alone[..=at])
                .map_err(err)?
                .to_vec2::<f32>()
                .map_err(|e| format!("reading logits for validation: {e}"))?
                .swap_remove(0);
            let scale = logits.iter().fold(0f32, |m, x| m.max(x.abs()));
            let logit = |t: u32| logits.get(t as usize).copied().unwrap_or(f32::NAN);
            let gap = f64::from((logit(alone[at]) - logit(batched[at])).abs() / scale);
            if gap.is_nan() || gap > cache_tol {
                return Err(format!(
                    "request {i} generated {batched:?} in the batch but {alone:?} alone: at token {at} its \
                     logits alone prefer {} to {} by {gap:.2e} of the largest (tolerance {cache_tol:.0e})",
                    alone[at], batched[at]
                ));
            }
            close_calls += 1;
        }
    }
    Ok(format!(
        "tiny preset in {}: logits within {worst:.1e} of the f64 reference's largest after the prompt and \
         {decode_off:.1e} at the last decode step (tolerance {tol:.0e}), \
         {firm} of {n_gen} greedy tokens firmly chosen and equal{gguf_note}; the measured model repeats its tokens, \
         its last decode step is within {cache_off:.1e} of the same tokens recomputed without a cache{}",
        precision.name(),
        if short.len() > 1 {
            format!(
                " and each of the {} batched requests equals it run alone{}",
                short.len(),
                match close_calls {
                    0 => String::new(),
                    n => format!(
                        " ({n} up to a close call: two tokens within the tolerance of each other)"
                    ),
                }
            )
        } else {
            String::new()
        }
    ))
}

/// Largest difference between the first row of `got` and `want`, relative
/// to the largest magnitude in `want`.
fn relative_error(got: &candle_core::Tensor, want: &[f64]) -> Result<f64, String> {
    let rows = got
        .to_vec2::<f32>()
        .map_err(|e| format!("reading logits for validation: {e}"))?;
    let scale = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let row = rows.first().ok_or("the model gave no logits")?;
    // A NaN would slip through a maximum of differences: refuse it first.
    if let Some(i) = row.iter().position(|v| !v.is_finite()) {
        return Err(format!("logit {i} is {}, not a number", row[i]));
    }
    let worst = row
        .iter()
        .zip(want)
        .map(|(g, w)| (*g as f64 - w).abs())
        .fold(0.0, f64::max);
    Ok(worst / scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logit_that_is_not_a_number_fails_the_comparison() {
        let cpu = candle_core::Device::Cpu;
        let want = [1.0, -2.0, 4.0];
        let close = candle_core::Tensor::new(&[[1.0f32, -2.0, 3.9]], &cpu).unwrap();
        assert!((relative_error(&close, &want).unwrap() - 0.025).abs() < 1e-6);
        // A maximum of differences would skip the NaN and call it a match.
        let nan = candle_core::Tensor::new(&[[1.0f32, f32::NAN, 4.0]], &cpu).unwrap();
        let e = relative_error(&nan, &want).unwrap_err();
        assert!(e.contains("logit 1 is NaN"), "{e}");
    }
}
