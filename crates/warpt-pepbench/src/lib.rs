//! The pepbench suite: ML inference measured the way ML engineers measure
//! it, on candle and Hugging Face tokenizers, with models generated from the
//! seed so nothing has to be downloaded.
//!
//! - [`llm_infer`]: LLM prefill and decode, TTFT / TPOT / tokens per second;
//! - [`tokenize`]: batch BPE tokenization, MB/s and tokens/s;
//! - [`embed`]: sentence embeddings (BERT, mean pooling), sentences/s;
//! - [`data_pipeline`]: JSONL to padded, shuffled batches, samples/s;
//! - [`end_to_end`]: text in, text out under closed- or open-loop load;
//! - [`bert`]: the MiniLM-shaped encoder's weights and its f64 reference;
//! - [`encoder`]: the BERT forward pass on the packed kernel (f32 `embed`);
//! - [`fastmath`]: vectorized GELU and softmax;
//! - [`model`]: Llama presets and their seeded weights;
//! - [`llm`]: the decoder engine the LLM benchmarks share;
//! - [`heap`]: keeping freed memory in the process, as inference engines do;
//! - [`hf`]: Hugging Face model directories, read and written;
//! - [`gguf`]: quantized GGUF models, read and written;
//! - [`qllama`]: the batched Llama forward pass on GGUF weights (f32, q8_0, q4_0);
//! - [`packed`]: f32 weights packed once, and the product of decode steps and prefills;
//! - [`reference`]: a plain f64 Llama forward pass that checks candle's;
//! - [`sampling`]: timing one piece of work per sample, shared parameter values;
//! - [`corpus`]: seeded English-like text.

pub mod bert;
pub mod corpus;
pub mod data_pipeline;
pub mod embed;
pub mod encoder;
pub mod end_to_end;
pub mod fastmath;
pub mod gguf;
pub mod heap;
pub mod hf;
pub mod llm;
pub mod llm_infer;
pub mod model;
pub mod packed;
pub mod qllama;
pub mod reference;
pub mod sampling;
pub mod tokenize;

use warpt_harness::{Benchmark, Suite};
use warpt_model::{BenchmarkSpec, Params};

/// The suite's name.
pub const SUITE: &str = "pepbench";

/// The pepbench suite, for the registry.
pub struct PepbenchSuite;

impl Suite for PepbenchSuite {
    fn name(&self) -> &'static str {
        SUITE
    }

    fn description(&self) -> &'static str {
        "ML inference: LLM TTFT/TPOT and tokens/s (candle), tokenization, embedding and input-pipeline throughput"
    }

    fn specs(&self) -> Vec<BenchmarkSpec> {
        vec![
            llm_infer::spec(),
            tokenize::spec(),
            embed::spec(),
            data_pipeline::spec(),
            end_to_end::spec(),
        ]
    }

    fn create(&self, name: &str) -> Option<Box<dyn Benchmark>> {
        match name {
            llm_infer::NAME => Some(Box::new(llm_infer::LlmInfer::new())),
            tokenize::NAME => Some(Box::new(tokenize::Tokenize::new())),
            embed::NAME => Some(Box::new(embed::Embed::new())),
            data_pipeline::NAME => Some(Box::new(data_pipeline::DataPipeline::new())),
            end_to_end::NAME => Some(Box::new(end_to_end::EndToEnd::new())),
            _ => None,
        }
    }

    fn check_params(&self, name: &str, params: &Params) -> Result<(), String> {
        match name {
            llm_infer::NAME => llm_infer::check_params(params),
            tokenize::NAME => tokenize::check_params(params),
            embed::NAME => embed::check_params(params),
            data_pipeline::NAME => data_pipeline::check_params(params),
            end_to_end::NAME => end_to_end::check_params(params),
            _ => Ok(()),
        }
    }
}
