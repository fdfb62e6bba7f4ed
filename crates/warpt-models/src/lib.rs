//! The model code warpt's ML suites share (pepbench and mlperf): neither
//! reaches into the other's benchmarks for it.
//!
//! - [`family`]: model families by `config.json`'s `model_type`, and which run;
//! - [`family_presets`]: each generating family's size presets, as config.json;
//! - [`model`]: Llama presets and their seeded weights;
//! - [`llm`]: the decoder engine the LLM benchmarks share;
//! - [`gpt2`]: GPT-2, on candle's tensor operations;
//! - [`t5`]: T5, the encoder-decoder, on candle's tensor operations;
//! - [`device`]: the device a benchmark runs on (CPU, CUDA), its name, sync and memory peak;
//! - [`select`]: the decoder `llm_infer`'s parameters choose, and the checks of what it generates;
//! - [`reference`]: a plain f64 Llama forward pass that checks candle's;
//! - [`packed`]: f32 weights packed once, and the product of decode steps and prefills;
//! - [`qllama`]: the batched Llama forward pass on GGUF weights (f32, q8_0, q4_0);
//! - `qlinear`: a layer's product by f32, q8_0, q4_0 or other GGUF weights;
//! - `projections`: several products of one input (Q, K, V; gate and up), stacked;
//! - `residual`: a decoder's residual stream, products added into it in place;
//! - [`attention`]: causal attention over a KV cache, blocked (flash-style), a
//!   bf16 prefill on the AMX tiles;
//! - [`gguf`]: quantized GGUF models, read and written;
//! - [`hf`]: Hugging Face model directories, read and written;
//! - [`bert`]: the MiniLM-shaped encoder's weights and its f64 reference;
//! - [`encoder`]: the BERT forward pass on the packed kernel;
//! - [`bert_dense`]: the BERT forward pass on candle's operations, any dtype;
//! - [`vision`]: Vision Transformers: presets, directories, an f64 reference;
//! - [`clip`]: CLIP's image and text towers and their similarity;
//! - [`whisper`]: Whisper speech recognition: presets, mel front end, greedy transcription;
//! - [`seeded`]: seeded weights for any candle model, built at its configuration's size;
//! - [`support`]: which family runs in which precision on which device here;
//! - [`fastmath`]: vectorized GELU, exp, softmax, LayerNorm and SwiGLU;
//! - [`heap`]: keeping freed memory in the process, as inference engines do;
//! - `uninit`: vectors a pass fills, built without zeroing them first;
//! - [`sampling`]: timing one piece of work per sample, shared parameter values;
//! - [`corpus`]: seeded English-like text (prompts, sentences, documents).

pub mod attention;
pub mod bert;
pub mod bert_dense;
pub mod clip;
pub mod corpus;
pub mod device;
pub mod encoder;
pub mod family;
pub mod family_presets;
pub mod fastmath;
pub mod gguf;
pub mod gpt2;
pub mod heap;
pub mod hf;
pub mod llm;
pub mod model;
pub mod packed;
mod projections;
mod qlinear;
pub mod qllama;
pub mod reference;
mod residual;
pub mod sampling;
pub mod seeded;
pub mod select;
pub mod support;
pub mod t5;
mod uninit;
pub mod vision;
pub mod whisper;
