//! Whisper speech recognition: OpenAI's sizes with weights from the seed or
//! a Hugging Face `whisper` directory, the log-mel front end (OpenAI's: a
//! centred STFT on `realfft`, a Slaney mel filterbank computed here as
//! librosa and transformers compute it), synthetic audio, and greedy
//! transcription of a 30-second window on candle-transformers' Whisper.

use candle_core::{D, DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::whisper::{self as w, model::Whisper};

/// A Whisper size (OpenAI's multilingual models: 80 mel bins, a vocabulary
/// of 51 865, 1500 audio and 448 text positions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhisperPreset {
    /// whisper-tiny, about 39 M parameters.
    Tiny,
    /// whisper-base, about 74 M.
    Small,
    /// whisper-small, about 244 M.
    Base,
    /// whisper-medium, about 769 M.
    Large,
    /// whisper-large, about 1.55 B.
    Xl,
}

impl WhisperPreset {
    /// Every preset, smallest first.
    pub const ALL: [WhisperPreset; 5] = [
        WhisperPreset::Tiny,
        WhisperPreset::Small,
        WhisperPreset::Base,
        WhisperPreset::Large,
        WhisperPreset::Xl,
    ];

    /// The preset called `name`.
    pub fn parse(name: &str) -> Result<Self, String> {
        crate::model::preset_named(&Self::ALL, name, Self::name)
    }

    /// Its name in warpt's size taxonomy.
    pub fn name(self) -> &'static str {
        match self {
            WhisperPreset::Tiny => "tiny",
            WhisperPreset::Small => "small",
            WhisperPreset::Base => "base",
            WhisperPreset::Large => "large",
            WhisperPreset::Xl => "xl",
        }
    }

    /// The OpenAI checkpoint whose shape it has.
    pub fn shape_of(self) -> &'static str {
        match self {
            WhisperPreset::Tiny => "whisper-tiny",
            WhisperPreset::Small => "whisper-base",
            WhisperPreset::Base => "whisper-small",
            WhisperPreset::Large => "whisper-medium",
            WhisperPreset::Xl => "whisper-large",
        }
    }

    /// Its configuration.
    pub fn config(self) -> w::Config {
        let (d, heads, layers) = match self {
            WhisperPreset::Tiny => (384, 6, 4),
            WhisperPreset::Small => (512, 8, 6),
            WhisperPreset::Base => (768, 12, 12),
            WhisperPreset::Large => (1024, 16, 24),
            WhisperPreset::Xl => (1280, 20, 32),
        };
        w::Config {
            num_mel_bins: 80,
            max_source_positions: 1500,
            d_model: d,
            encoder_attention_heads: heads,
            encoder_layers: layers,
            vocab_size: 51_865,
            max_target_positions: 448,
            decoder_attention_heads: heads,
            decoder_layers: layers,
            suppress_tokens: Vec::new(),
        }
    }
}

/// Parameters of a Whisper of configuration `c`, counted as candle builds
/// it (the encoder's sinusoidal positions are not weights).
pub fn parameter_count(c: &w::Config) -> usize {
    let d = c.d_model;
    let block = |cross: bool| {
        let attn = 4 * d * d + 3 * d; // q, k, v, out; biases on q, v, out
        let mlp = 8 * d * d + 5 * d;
        let norms = if cross { 6 * d } else { 4 * d };
        attn * if cross { 2 } else { 1 } + mlp + norms
    };
    let encoder =
        c.num_mel_bins * d * 3 + d + d * d * 3 + d + c.encoder_layers * block(false) + 2 * d;
    let decoder =
        c.vocab_size * d + c.max_target_positions * d + c.decoder_layers * block(true) + 2 * d;
    encoder + decoder
}

/// The configuration in a `whisper` directory's config.json, checked.
pub fn check_dir(dir: &str) -> Result<w::Config, String> {
    let (mut raw, path) = crate::hf::read_config(dir)?;
    // transformers writes `suppress_tokens: null` when there are none.
    if raw["suppress_tokens"].is_null()
        && let Some(obj) = raw.as_object_mut()
    {
        obj.remove("suppress_tokens");
    }
    let c: w::Config = crate::hf::single_file_config(dir, raw, &path, "whisper", "speech_infer")?;
    if c.num_mel_bins != 80 {
        return Err(format!(
            "parameter 'model_dir': {} has {} mel bins; warpt's front end makes 80 (whisper-large-v3's 128 are not supported yet)",
            path.display(),
            c.num_mel_bins
        ));
    }
    Ok(c)
}

/// The Slaney mel filterbank Whisper's front end uses (librosa's
/// `filters.mel(sr=16000, n_fft=400, n_mels)`, Slaney scale and area
/// normalisation): `n_mels × 201` weights, row-major.
pub fn mel_filters(n_mels: usize) -> Vec<f32> {
    let sr = w::SAMPLE_RATE as f64;
    let bins = w::N_FFT / 2 + 1;
    // Slaney's mel scale: linear below 1 kHz, logarithmic above.
    let (f_sp, min_log_hz) = (200.0 / 3.0, 1000.0);
    let min_log_mel = min_log_hz / f_sp;
    let logstep = (6.4f64).ln() / 27.0;
    let to_mel = |hz: f64| {
        if hz >= min_log_hz {
            min_log_mel + (hz / min_log_hz).ln() / logstep
        } else {
            hz / f_sp
        }
    };
    let to_hz = |mel: f64| {
        if mel >= min_log_mel {
            min_log_hz * (logstep * (mel - min_log_mel)).exp()
        } else {
            f_sp * mel
        }
    };
    let top = to_mel(sr / 2.0);
    let points: Vec<f64> = (0..n_mels + 2)
        .map(|i| to_hz(top * i as f64 / (n_mels + 1) as f64))
        .collect();
    let mut out = vec![0f32; n_mels * bins];
    for m in 0..n_mels {
        let (lo, mid, hi) = (points[m], points[m + 1], points[m + 2]);
        let norm = 2.0 / (hi - lo);
        for k in 0..bins {
            let f = k as f64 * sr / w::N_FFT as f64;
            let weight = ((f - lo) / (mid - lo)).min((hi - f) / (hi - mid)).max(0.0);
            out[m * bins + k] = (weight * norm) as f32;
        }
    }
    out
}

/// `seconds` of synthetic 16 kHz speech-band audio from the seed: a 440 Hz
/// tone, its harmonics at 880 and 1320 Hz, and white noise 30 dB down.
pub fn synthetic_audio(seconds: f64, seed: u64) -> Vec<f32> {
    use rand_core::{RngCore, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x6175_6469_6f00);
    let n = (seconds * w::SAMPLE_RATE as f64) as usize;
    (0..n)
        .map(|i| {
            let t = i as f64 / w::SAMPLE_RATE as f64;
            let tau = std::f64::consts::TAU;
            let tone = 0.5 * (tau * 440.0 * t).sin()
                + 0.2 * (tau * 880.0 * t).sin()
                + 0.1 * (tau * 1320.0 * t).sin();
            let noise = ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.03;
            (tone + noise) as f32
        })
        .collect()
}

/// The log-mel spectrogram of `samples` over Whisper's 30-second window,
/// as OpenAI's `log_mel_spectrogram` (and transformers' feature extractor)
/// computes it: the audio zero-padded or cut to 30 s, a centred STFT
/// (reflect padding, periodic Hann window of 400, hop 160), one-sided power,
/// the mel filterbank, log10, values below the maximum less 8 raised to it,
/// then `(x + 4) / 4`. `(n_mels, 3000)` values, row-major.
pub fn log_mel(c: &w::Config, samples: &[f32], filters: &[f32]) -> Vec<f32> {
    use rayon::prelude::*;
    let (n_fft, hop, frames) = (w::N_FFT, w::HOP_LENGTH, w::N_FRAMES);
    let bins = n_fft / 2 + 1;
    let n_mels = c.num_mel_bins;
    let mut audio = samples[..samples.len().min(w::N_SAMPLES)].to_vec();
    audio.resize(w::N_SAMPLES, 0.0);
    // Centred frames: reflect the signal by half a window at each end.
    let half = n_fft / 2;
    let last = audio.len() - 1;
    let padded: Vec<f32> = (0..audio.len() + 2 * half)
        .map(|i| {
            let j = i as isize - half as isize;
            let j = if j < 0 {
                (-j) as usize
            } else if j as usize > last {
                2 * last - j as usize
            } else {
                j as usize
            };
            audio[j]
        })
        .collect();
    let window: Vec<f32> = (0..n_fft)
        .map(|i| (0.5 - 0.5 * (std::f64::consts::TAU * i as f64 / n_fft as f64).cos()) as f32)
        .collect();
    let fft = realfft::RealFftPlanner::<f32>::new().plan_fft_forward(n_fft);
    // One column of mel values per frame, computed in parallel.
    let columns: Vec<Vec<f32>> = (0..frames)
        .into_par_iter()
        .map_init(
            || {
                (
                    fft.make_input_vec(),
                    fft.make_output_vec(),
                    vec![0f32; bins],
                )
            },
            |(input, spectrum, power), f| {
                for (k, x) in input.iter_mut().enumerate() {
                    *x = padded[f * hop + k] * window[k];
                }
                if fft.process(input, spectrum).is_err() {
                    return vec![f32::NAN; n_mels];
                }
                for (p, z) in power.iter_mut().zip(spectrum.iter()) {
                    *p = z.norm_sqr();
                }
                (0..n_mels)
                    .map(|m| {
                        let row = &filters[m * bins..(m + 1) * bins];
                        let e: f32 = row.iter().zip(power.iter()).map(|(a, b)| a * b).sum();
                        e.max(1e-10).log10()
                    })
                    .collect()
            },
        )
        .collect();
    let top = columns
        .iter()
        .flatten()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    let mut mel = vec![0f32; n_mels * frames];
    for (f, col) in columns.iter().enumerate() {
        for (m, v) in col.iter().enumerate() {
            mel[m * frames + f] = (v.max(top - 8.0) + 4.0) / 4.0;
        }
    }
    mel
}

/// The prompt a multilingual Whisper starts from: start of transcript,
/// English, transcribe, no timestamps.
pub const PROMPT: [u32; 4] = [50_258, 50_259, 50_359, 50_363];

/// A loaded Whisper.
pub struct Speech {
    model: Whisper,
    /// Parameters, counted from the tensors.
    pub parameters: usize,
    device: Device,
}

/// One transcription's outcome.
pub struct Transcript {
    /// The tokens generated after [`PROMPT`].
    pub tokens: Vec<u32>,
    /// The logits the last token was chosen from, `(vocab,)`: a tensor,
    /// so that copying them out is left to validation.
    pub last_logits: Tensor,
}

impl Speech {
    /// The seeded model of configuration `c`.
    pub fn generated(c: w::Config, seed: u64, device: &Device) -> candle_core::Result<Self> {
        let (vb, made) = crate::seeded::var_builder(seed, DType::F32, device);
        let model = Whisper::load(&vb, c)?;
        Ok(Speech {
            model,
            parameters: made.load(std::sync::atomic::Ordering::Relaxed),
            device: device.clone(),
        })
    }

    /// The model in the Hugging Face directory `dir` (f32).
    pub fn from_dir(dir: &str, device: &Device) -> Result<Self, String> {
        let c = check_dir(dir)?;
        let path = crate::hf::single_weights(dir)?;
        let tensors = candle_core::safetensors::load(&path, device)
            .map_err(|e| format!("loading {}: {e}", path.display()))?;
        let parameters = tensors.values().map(Tensor::elem_count).sum();
        let vb = VarBuilder::from_tensors(tensors, DType::F32, device);
        let model = Whisper::load(&vb, c)
            .map_err(|e| format!("building the whisper model from {dir}: {e}"))?;
        Ok(Speech {
            model,
            parameters,
            device: device.clone(),
        })
    }

    /// Its configuration.
    pub fn config(&self) -> &w::Config {
        &self.model.config
    }

    /// The encoder's output for a log-mel spectrogram `(n_mels, 3000)`.
    pub fn encode(&mut self, mel: &[f32]) -> candle_core::Result<Tensor> {
        let n_mels = self.model.config.num_mel_bins;
        let mel = Tensor::from_slice(mel, (1, n_mels, mel.len() / n_mels), &self.device)?;
        self.model.encoder.forward(&mel, true)
    }

    /// The logits after the last of `tokens`, given the encoder's output
    /// (candle's decoder runs the whole sequence each call; it caches only
    /// the cross-attention's keys and values, dropped when `fresh`).
    pub fn logits(
        &mut self,
        tokens: &[u32],
        audio: &Tensor,
        fresh: bool,
    ) -> candle_core::Result<Tensor> {
        let t = Tensor::new(tokens, &self.device)?.unsqueeze(0)?;
        let hidden = self.model.decoder.forward(&t, audio, fresh)?;
        let last = hidden.narrow(1, tokens.len() - 1, 1)?;
        self.model
            .decoder
            .final_linear(&last)?
            .squeeze(0)?
            .squeeze(0)
    }

    /// Greedy transcription of a spectrogram: [`PROMPT`], then `n_gen`
    /// tokens (all of them: random weights never say when to stop).
    pub fn transcribe(&mut self, mel: &[f32], n_gen: usize) -> candle_core::Result<Transcript> {
        let audio = self.encode(mel)?;
        let mut tokens = PROMPT.to_vec();
        let mut last = Tensor::zeros(1, DType::F32, &self.device)?;
        for i in 0..n_gen {
            last = self.logits(&tokens, &audio, i == 0)?;
            tokens.push(last.argmax(D::Minus1)?.to_scalar::<u32>()?);
        }
        Ok(Transcript {
            tokens: tokens[PROMPT.len()..].to_vec(),
            last_logits: last,
        })
    }
}
