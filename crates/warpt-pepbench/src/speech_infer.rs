//! `speech_infer`: speech recognition with Whisper — synthetic audio to
//! the log-mel spectrogram, the encoder over the 30-second window, then
//! `gen_tokens` greedy decoding steps — reported as the real-time factor
//! (processing time over audio time: below 1 is faster than real time) and
//! the latency per clip.
//!
//! The model is a preset by size (OpenAI's tiny to large shapes) with
//! weights from the seed, or a Hugging Face `whisper` directory. A preset
//! too large for the free memory is skipped before anything is allocated.
//! Validation: the front end finds the audio's 440 Hz tone in the mel bin
//! that holds 440 Hz; the measured model transcribes the same clip to the
//! same tokens twice, and its last step's logits equal those of the same
//! tokens decoded afresh.

use std::time::Instant;

use candle_core::Device;
use candle_transformers::models::whisper as w;
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasureResult, Measured, RunContext, SeriesDef,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkKind, BenchmarkSpec, Param, ParamValue, Params, StageLimits,
    Validation,
};
use warpt_models::device::{self, MemoryPeak};
use warpt_models::sampling::{DEVICES, gib, time_each};
use warpt_models::whisper::{self, Speech, WhisperPreset};

/// Benchmark name within the suite.
pub const NAME: &str = "speech_infer";
/// The presets `model` takes.
const PRESETS: &[&str] = &["tiny", "small", "base", "large", "xl"];

/// The spec of `speech_infer`.
pub fn spec() -> BenchmarkSpec {
    let sizes: Vec<String> = WhisperPreset::ALL
        .iter()
        .map(|p| {
            format!(
                "{} = {}'s shape ({:.0} M parameters)",
                p.name(),
                p.shape_of(),
                whisper::parameter_count(&p.config()) as f64 / 1e6
            )
        })
        .collect();
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .components([BenchmarkComponent::Cpu, BenchmarkComponent::Ram, BenchmarkComponent::Gpu])
        .kind(BenchmarkKind::Application)
        .description(format!(
            "Speech recognition with Whisper (candle-transformers): `audio_seconds` of synthetic 16 kHz audio \
             per sample to an 80-bin log-mel spectrogram, the encoder over Whisper's 30-second window, then \
             `gen_tokens` greedy decoding steps; `real_time_factor` (processing time / audio time, below 1 is \
             faster than real time) and `latency_ms` per clip. Presets, weights from the seed: {}; or \
             `model_dir` = a Hugging Face whisper directory. A preset the free memory cannot hold is skipped \
             before allocating. Validation: the 440 Hz tone in its mel bin, the same tokens twice, the last \
             step's logits = the same tokens decoded afresh. Runs here: {}.",
            sizes.join("; "),
            warpt_models::support::summary("pepbench/speech_infer")
        ))
        .duration(10.0)
        .param(Param::choice("model", "tiny", PRESETS).help(
            "preset: tiny (whisper-tiny), small (whisper-base), base (whisper-small), large (whisper-medium), xl (whisper-large)",
        ))
        .param(Param::input_path("model_dir", "").help(
            "a Hugging Face whisper directory (config.json, model.safetensors; 80 mel bins); overrides model",
        ))
        .param(Param::choice("device", "cpu", DEVICES).help(warpt_models::device::HELP))
        .param(
            Param::int("audio_seconds", 10, 1..=30)
                .unit("s")
                .help("seconds of audio per clip (one Whisper window at most)"),
        )
        // The prompt and the generated tokens share the 448 text positions.
        .param(
            Param::int("gen_tokens", 32, 1..=448 - whisper::PROMPT.len() as i64).help(
                "tokens decoded per clip after the 4-token prompt (random weights never stop early; \
                 with the prompt, within Whisper's 448 text positions)",
            ),
        )
        .check(check_params)
        .timeouts(StageLimits {
            setup: Some(600.0),
            validate: Some(300.0),
            ..StageLimits::default()
        })
        .metric("real_time_factor")
        .metric("latency_ms")
        .build()
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    let dir = params
        .get("model_dir")
        .and_then(ParamValue::as_str)
        .unwrap_or("");
    if dir.is_empty() {
        let model = params
            .get("model")
            .and_then(ParamValue::as_str)
            .unwrap_or("");
        WhisperPreset::parse(model)?;
    } else {
        whisper::check_dir(dir)?;
    }
    Ok(())
}

/// The running benchmark.
#[derive(Default)]
pub struct SpeechInfer {
    model: Option<Speech>,
    audio: Vec<f32>,
    filters: Vec<f32>,
    seconds: f64,
    n_gen: usize,
    device: Option<Device>,
    memory: MemoryPeak,
}

impl Benchmark for SpeechInfer {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        crate::heap::keep_freed_memory();
        let device: Device = device::open(ctx.str_param("device")?)?;
        self.memory = MemoryPeak::new(&device);
        let dir = ctx.str_param("model_dir")?;
        let model = if dir.is_empty() {
            let preset = WhisperPreset::parse(ctx.str_param("model")?)
                .map_err(BenchmarkError::invalid("model"))?;
            // f32 weights, plus the seeded values while each is made, and
            // the encoder's activations over 1500 positions.
            let c = preset.config();
            let need = (whisper::parameter_count(&c) * 4 * 2
                + 1500 * c.d_model * 4 * 16
                + c.encoder_attention_heads * 1500 * 1500 * 4 * 2) as u64;
            let budget = device::memory_budget(&device);
            if !budget.fits(need) {
                return Err(BenchmarkError::Skipped(format!(
                    "the {} preset needs about {:.1} GiB; {:.1} GiB is available (a smaller preset runs)",
                    preset.name(),
                    gib(need),
                    gib(budget.available)
                )));
            }
            Speech::generated(c, ctx.seed, &device)
                .map_err(|e| BenchmarkError::Failed(format!("building the model: {e}")))?
        } else {
            Speech::from_dir(dir, &device).map_err(BenchmarkError::Failed)?
        };
        self.filters = whisper::mel_filters(model.config().num_mel_bins);
        self.seconds = ctx.int_param("audio_seconds", 1)? as f64;
        self.audio = whisper::synthetic_audio(self.seconds, ctx.seed);
        self.n_gen = ctx.int_param("gen_tokens", 1)? as usize;
        let mut model = model;
        device::settle(&device, || {
            let mel = whisper::log_mel(model.config(), &self.audio, &self.filters);
            model.transcribe(&mel, 1).map_err(|e| e.to_string())
        })?;
        self.model = Some(model);
        self.memory.sample();
        self.device = Some(device);
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let model = warpt_harness::prepared_mut(&mut self.model)?;
        let defs = [
            SeriesDef::new(
                "real_time_factor",
                "s/s",
                false,
                &[],
                Convert::Time(1.0 / self.seconds),
            ),
            SeriesDef::new("latency_ms", "ms", false, &[], Convert::Time(1e3)),
        ];
        let (audio, filters, n_gen) = (&self.audio, &self.filters, self.n_gen);
        let memory = &self.memory;
        let m = time_each(measure, ctx, NAME, &defs, || {
            let mel = whisper::log_mel(model.config(), audio, filters);
            let text = model.transcribe(&mel, n_gen).map_err(|e| e.to_string());
            memory.sample();
            text
        })
        .map_err(|e| BenchmarkError::Failed(format!("transcribing: {e}")))?;
        // The encoder's share of a clip, timed once outside the samples.
        let encode_share = (|| -> candle_core::Result<f64> {
            let mel = whisper::log_mel(model.config(), audio, filters);
            let start = Instant::now();
            model.encode(&mel)?;
            if let Some(dev) = &self.device {
                device::sync(dev)?;
            }
            let encode = start.elapsed().as_secs_f64();
            let start = Instant::now();
            model.transcribe(&mel, n_gen)?;
            Ok(encode / start.elapsed().as_secs_f64())
        })()
        .map_err(|e| BenchmarkError::Failed(format!("timing the encoder: {e}")))?;
        let dir = ctx.str_param("model_dir")?;
        let mut details: Vec<(String, ParamValue)> = vec![
            ("family".into(), ParamValue::from("whisper")),
            (
                "engine".into(),
                ParamValue::from(
                    "candle-transformers Whisper (the decoder runs the whole sequence each step, caching the cross-attention)",
                ),
            ),
            (
                "weights".into(),
                ParamValue::Str(if dir.is_empty() {
                    format!(
                        "generated from the seed ({} preset)",
                        ctx.str_param("model")?
                    )
                } else {
                    dir.to_string()
                }),
            ),
            (
                "parameters".into(),
                ParamValue::Int(model.parameters as i64),
            ),
            ("precision".into(), ParamValue::from("f32")),
            ("audio_seconds".into(), ParamValue::Float(self.seconds)),
            (
                "sample_rate_hz".into(),
                ParamValue::Int(w::SAMPLE_RATE as i64),
            ),
            (
                "encoder_share".into(),
                ParamValue::Float((encode_share * 1000.0).round() / 1000.0),
            ),
            ("heap".into(), ParamValue::from(crate::heap::SETTING)),
        ];
        details.extend(
            self.device
                .iter()
                .flat_map(|d| device::details(d, &self.memory)),
        );
        Ok(Measured::new(m.metrics, details))
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let Some(model) = self.model.as_mut() else {
            return Validation::fail("nothing was transcribed");
        };
        match check(model, &self.audio, &self.filters, self.n_gen) {
            Ok(msg) => Validation::pass(msg),
            Err(msg) => Validation::fail(msg),
        }
    }
}

fn check(
    model: &mut Speech,
    audio: &[f32],
    filters: &[f32],
    n_gen: usize,
) -> Result<String, String> {
    let err = |e: candle_core::Error| format!("transcribing for validation: {e}");
    // 1. The front end: in a frame in the middle of the clip, the loudest
    //    mel bin is the one whose filter weighs 440 Hz most.
    let c = model.config().clone();
    let mel = whisper::log_mel(&c, audio, filters);
    let frames = mel.len() / c.num_mel_bins;
    let frame = (audio.len() / w::HOP_LENGTH / 2).min(frames - 1);
    let loudest = (0..c.num_mel_bins)
        .max_by(|&a, &b| mel[a * frames + frame].total_cmp(&mel[b * frames + frame]))
        .unwrap_or(0);
    let bins = w::N_FFT / 2 + 1;
    let k440 = (440.0 * w::N_FFT as f64 / w::SAMPLE_RATE as f64).round() as usize;
    let tone_bin = (0..c.num_mel_bins)
        .max_by(|&a, &b| filters[a * bins + k440].total_cmp(&filters[b * bins + k440]))
        .unwrap_or(0);
    if loudest != tone_bin {
        return Err(format!(
            "the front end's loudest mel bin is {loudest}, not {tone_bin} (which holds the clip's 440 Hz tone)"
        ));
    }
    if mel.iter().any(|x| !x.is_finite()) {
        return Err("the log-mel spectrogram is not finite".into());
    }
    // 2. The same tokens twice, and 3. the last step's logits equal those
    //    of the same tokens decoded afresh (a new cross-attention cache).
    let a = model.transcribe(&mel, n_gen).map_err(err)?;
    let b = model.transcribe(&mel, n_gen).map_err(err)?;
    if a.tokens != b.tokens {
        return Err("the same clip gave different tokens on a second run".into());
    }
    let audio_features = model.encode(&mel).map_err(err)?;
    let mut tokens = whisper::PROMPT.to_vec();
    tokens.extend_from_slice(&a.tokens[..a.tokens.len() - 1]);
    let fresh = model
        .logits(&tokens, &audio_features, true)
        .and_then(|t| t.to_vec1::<f32>())
        .map_err(err)?;
    let scale = fresh.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-30);
    let last = a.last_logits.to_vec1::<f32>().map_err(err)?;
    let off = last
        .iter()
        .zip(&fresh)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max)
        / scale;
    if off > 1e-4 {
        return Err(format!(
            "the last step's logits differ from the same tokens decoded afresh by {off:.2e} of the largest"
        ));
    }
    Ok(format!(
        "the 440 Hz tone is loudest in mel bin {tone_bin}, the one that holds it; the measured model gives the \
         same {n_gen} tokens twice, its last step within {off:.1e} of the same tokens decoded afresh"
    ))
}
