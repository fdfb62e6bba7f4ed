//! The pepbench suite: ML inference measured the way ML engineers measure
//! it, on candle and Hugging Face tokenizers, with models generated from the
//! seed so nothing has to be downloaded.
//!
//! - [`llm_infer`]: LLM prefill and decode, TTFT / TPOT / tokens per second;
//! - [`llm_serve`]: an OpenAI-compatible server under load, from the client
//!   (its parameters in `serve_config`, what it sends in `serve_inputs`, its
//!   figures in `serve_figures`);
//! - [`tokenize`]: batch BPE tokenization, MB/s and tokens/s;
//! - [`embed`]: sentence embeddings (BERT, mean pooling), sentences/s (its
//!   model directories and presets in `embed_dir`);
//! - [`data_pipeline`]: JSONL to padded, shuffled batches, samples/s;
//! - [`end_to_end`]: text in, text out under closed- or open-loop load;
//! - [`vision_infer`]: Vision Transformer and CLIP inference, images per second;
//! - [`vision_model`]: the ViT or CLIP `vision_infer` loads;
//! - [`speech_infer`]: Whisper speech recognition, real-time factor;
//! - [`corpus`]: seeded English-like text.
//!
//! The models themselves (Llama, BERT, packed kernels, GGUF) are in
//! warpt-models, shared with the mlperf suite.

pub mod data_pipeline;
pub mod embed;
mod embed_dir;
pub mod end_to_end;
pub mod llm_infer;
pub mod llm_serve;
mod serve_config;
mod serve_figures;
mod serve_inputs;
pub mod speech_infer;
pub mod tokenize;
pub mod vision_infer;
pub mod vision_model;

// The model code shared with the mlperf suite (warpt-models), under the
// names this crate's benchmarks use.
use warpt_models::{bert, encoder, heap, hf, llm, model, sampling};

/// Seeded English-like text (moved to warpt-models, which the mlperf suite
/// shares; kept here under its old name).
pub use warpt_models::corpus;

use warpt_harness::{Listed, ListedSuite};

/// The suite's name.
pub const SUITE: &str = "pepbench";

/// The suite's benchmarks, in the order `list` shows them.
const BENCHMARKS: &[Listed] = &[
    Listed::new(llm_infer::spec, || Box::new(llm_infer::LlmInfer::default())),
    Listed::new(llm_serve::spec, || Box::new(llm_serve::LlmServe::default())),
    Listed::new(tokenize::spec, || Box::new(tokenize::Tokenize::default())),
    Listed::new(embed::spec, || Box::new(embed::Embed::default())),
    Listed::new(data_pipeline::spec, || {
        Box::new(data_pipeline::DataPipeline::default())
    }),
    Listed::new(end_to_end::spec, || {
        Box::new(end_to_end::EndToEnd::default())
    }),
    Listed::new(vision_infer::spec, || {
        Box::new(vision_infer::VisionInfer::default())
    }),
    Listed::new(speech_infer::spec, || {
        Box::new(speech_infer::SpeechInfer::default())
    }),
];

/// The pepbench suite, for the registry.
pub const PEPBENCH: ListedSuite = ListedSuite {
    name: SUITE,
    description: "ML inference: LLM TTFT/TPOT and tokens/s (candle), LLM servers under load, tokenization, embedding, vision, speech and input-pipeline throughput",
    benchmarks: BENCHMARKS,
};
