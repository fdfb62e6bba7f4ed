//! A quantized Llama forward pass: the weights stay in their GGUF blocks,
//! the activations and the KV cache in f32. candle-transformers'
//! `quantized_llama` cannot prefill more than one sequence at a time (its
//! last-position slice is not contiguous for the quantized output
//! projection) and keeps its KV cache inside the model; this one takes
//! batches and an external cache, like the dense `llama` does.
//!
//! q8_0 and q4_0 matrices are repacked at load for warpt's integer kernels
//! ([`warpt_gemm::quant`]): every product, a decode step's (one token per
//! sequence, bound by reading the weights, which the blocks make 4-8x
//! smaller) and a prefill's (many tokens: an integer GEMM), quantizes the
//! activations to 8-bit blocks and multiplies on the blocks, as
//! llama.cpp does; no f32 copy of a weight is ever made. Other block
//! types run on candle's GGML kernels; f32, bf16 and f16 weights (GGUF
//! types F32, BF16, F16) are packed at load for warpt's engine ([`crate::packed`]),
//! a layer's query, key and value projections stacked into one matrix, and
//! its gate and up projections into another (`crate::projections`).

use std::io::{Read, Seek};

use candle_core::quantized::{GgmlDType, gguf_file};
use candle_core::{DType, Device, Tensor};

use crate::attention::{self, Dims, KvBuffer};
use crate::model::Shape;
use crate::projections::{Projections, Rope};
use crate::qlinear::{QLinear, with_f32};
use crate::residual::Residual;

/// One decoder layer's weights.
struct Layer {
    attn_norm: Tensor,
    /// The query, key and value projections.
    qkv: Projections,
    wo: QLinear,
    ffn_norm: Tensor,
    /// The MLP's gate and up projections.
    gate_up: Projections,
    down: QLinear,
}

/// The model: embeddings dequantized to f32 (a lookup, not a product),
/// every matrix in its stored blocks.
pub struct QLlama {
    embed: Tensor,
    layers: Vec<Layer>,
    norm: Tensor,
    output: QLinear,
    shape: Shape,
    eps: f32,
    cos: Tensor,
    sin: Tensor,
    /// How the layers' weights are stored (their query projection's GGML
    /// type): a bf16 model's prefill attends with bf16 operands (the
    /// precision its peers attend in), and a model stored below f32 keeps
    /// an f16 copy of its CPU cache for the decode steps.
    layer_dtype: Option<GgmlDType>,
}

/// Keys and values of the positions seen so far, per layer: in warpt's
/// growing host buffers for the blocked attention on the CPU, as device
/// tensors (`(batch, kv_heads, positions, head_dim)`) on a GPU.
pub struct Cache {
    layers: Layers,
}

enum Layers {
    Host(Vec<KvBuffer>),
    Device(Vec<Option<(Tensor, Tensor)>>),
}

impl Cache {
    /// An empty cache for `model`.
    pub fn new(model: &QLlama) -> Self {
        let n = model.layers.len();
        Cache {
            layers: if model.embed.device().is_cpu() {
                Layers::Host(vec![
                    if model.decodes_from_f16() {
                        KvBuffer::with_f16()
                    } else {
                        KvBuffer::default()
                    };
                    n
                ])
            } else {
                Layers::Device(vec![None; n])
            },
        }
    }

    /// Bytes the cache holds, room to grow included.
    pub fn bytes(&self) -> usize {
        match &self.layers {
            Layers::Host(kv) => kv.iter().map(KvBuffer::bytes).sum(),
            Layers::Device(kv) => kv
                .iter()
                .flatten()
                .map(|(k, v)| (k.elem_count() + v.elem_count()) * 4)
                .sum(),
        }
    }

    /// Layer `layer`'s attention of the new positions' queries `q`
    /// `(b, heads, n, hd)` over the cache after appending their keys `k`
    /// and values `v` `(b, kv_heads, n, hd)` at position `pos`: the
    /// output `(b, n, heads · hd)`; on the host with bf16 operands where
    /// `bf16` ([`attention::causal_bf16`]: a prefill on the AMX tiles).
    fn attend(
        &mut self,
        layer: usize,
        (q, k, v): (&Tensor, &Tensor, &Tensor),
        pos: usize,
        s: &Shape,
        bf16: bool,
    ) -> candle_core::Result<Tensor> {
        let (b, _, n, hd) = q.dims4()?;
        match &mut self.layers {
            Layers::Host(kvs) => {
                let kv = &mut kvs[layer];
                with_f32(k, |k| {
                    with_f32(v, |v| kv.append(k, v, b * s.kv_heads, n, hd, pos))
                })??;
                let dims = Dims {
                    batch: b,
                    heads: s.heads,
                    kv_heads: s.kv_heads,
                    queries: n,
                    keys: kv.len(),
                    stride: kv.stride(),
                    head_dim: hd,
                };
                let attend = if bf16 {
                    attention::causal_bf16
                } else {
                    attention::causal
                };
                let o = match kv.f16() {
                    Some((k16, v16)) if n == 1 => {
                        with_f32(q, |q| attention::decode_f16(q, k16, v16, dims))?
                    }
                    _ => with_f32(q, |q| attend(q, kv.keys(), kv.values(), dims))?,
                };
                Tensor::from_vec(o, (b, n, s.heads * hd), q.device())
            }
            Layers::Device(kvs) => {
                let slot = &mut kvs[layer];
                let (k, v) = match slot.take() {
                    Some((ck, cv)) if pos > 0 => {
                        (Tensor::cat(&[&ck, k], 2)?, Tensor::cat(&[&cv, v], 2)?)
                    }
                    _ => (k.clone(), v.clone()),
                };
                *slot = Some((k.clone(), v.clone()));
                device_attention(q, &k, &v, pos, s.heads / s.kv_heads)
            }
        }
    }
}

/// Causal attention on device tensors: queries `(b, heads, n, hd)` at
/// positions `pos..pos + n` over keys and values `(b, kv_heads, keys, hd)`
/// (each key-value head shared by `group` query heads), scores in f32;
/// the output `(b, n, heads · hd)`.
fn device_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    pos: usize,
    group: usize,
) -> candle_core::Result<Tensor> {
    let (b, heads, n, hd) = q.dims4()?;
    let keys = k.dim(2)?;
    let repeat = |t: &Tensor| -> candle_core::Result<Tensor> {
        if group == 1 {
            return Ok(t.clone());
        }
        let (b, kvh, len, hd) = t.dims4()?;
        t.unsqueeze(2)?
            .expand((b, kvh, group, len, hd))?
            .reshape((b, kvh * group, len, hd))
    };
    let (k, v) = (repeat(k)?, repeat(v)?);
    let scores = (q.contiguous()?.matmul(&k.t()?.contiguous()?)? / (hd as f64).sqrt())?;
    let scores = if n > 1 {
        // Query i (at pos + i) sees keys 0..=pos + i.
        let mask: Vec<f32> = (0..n)
            .flat_map(|i| (0..keys).map(move |j| if j > pos + i { f32::NEG_INFINITY } else { 0.0 }))
            .collect();
        let mask = Tensor::from_vec(mask, (n, keys), q.device())?;
        scores.broadcast_add(&mask)?
    } else {
        scores
    };
    let p = candle_nn::ops::softmax_last_dim(&scores)?;
    p.matmul(&v.contiguous()?)?
        .transpose(1, 2)?
        .reshape((b, n, heads * hd))
}

impl QLlama {
    /// Whether a prefill's attention runs in bf16 on the AMX tiles
    /// ([`attention::causal_bf16`]): bf16 weights, on a CPU with AMX.
    pub fn prefill_attends_in_bf16(&self) -> bool {
        self.attends_in_bf16()
            && self.embed.device().is_cpu()
            && warpt_gemm::attention::Tiles::new().is_some()
    }

    /// Whether attention runs with bf16 operands where it can: bf16
    /// weights.
    fn attends_in_bf16(&self) -> bool {
        self.layer_dtype == Some(GgmlDType::BF16)
    }

    /// Whether a decode step on the CPU reads the KV cache's f16 copy
    /// ([`KvBuffer::with_f16`]): weights stored below f32 (whose
    /// tolerance the f16 rounding of keys and values stays far inside; an
    /// f32 model's cache stays f32) and the kernel for the heads here.
    pub fn decodes_from_f16(&self) -> bool {
        self.layer_dtype.is_some_and(|t| t != GgmlDType::F32)
            && self.embed.device().is_cpu()
            && crate::fastmath::attends_f16(self.shape.head_dim)
    }

    /// The instruction set of warpt's kernels its matrices multiply on
    /// (the output projection's, which every layer's storage matches),
    /// `None` when candle's kernels run them.
    pub fn isa(&self) -> Option<&'static str> {
        self.output.isa()
    }

    /// The model in a GGUF stream whose header `content` was read from it,
    /// of the given `shape` (see [`crate::gguf::Info`]).
    pub fn from_gguf<R: Read + Seek>(
        content: &gguf_file::Content,
        r: &mut R,
        shape: Shape,
        device: &Device,
    ) -> candle_core::Result<Self> {
        let md_f32 = |k: &str, default: f32| {
            content
                .metadata
                .get(k)
                .and_then(|v| v.to_f32().ok())
                .unwrap_or(default)
        };
        let eps = md_f32("llama.attention.layer_norm_rms_epsilon", 1e-5);
        let theta = md_f32("llama.rope.freq_base", 10_000.0);
        let mut get = |name: &str| content.tensor(r, name, device);
        let embed_q = get("token_embd.weight")?;
        let embed = embed_q.dequantize(device)?;
        let norm = get("output_norm.weight")?.dequantize(device)?;
        // Tied embeddings: llama.cpp omits output.weight.
        let output = match get("output.weight") {
            Ok(t) => QLinear::new(t, device)?,
            Err(_) => QLinear::new(embed_q, device)?,
        };
        let mut layers = Vec::with_capacity(shape.layers);
        for i in 0..shape.layers {
            let mut t = |part: &str| content.tensor(r, &format!("blk.{i}.{part}.weight"), device);
            let qkv = vec![t("attn_q")?, t("attn_k")?, t("attn_v")?];
            let gate_up = vec![t("ffn_gate")?, t("ffn_up")?];
            let (wo, down) = (t("attn_output")?, t("ffn_down")?);
            layers.push(Layer {
                qkv: Projections::new(qkv, device)?,
                wo: QLinear::new(wo, device)?,
                gate_up: Projections::new(gate_up, device)?,
                down: QLinear::new(down, device)?,
                attn_norm: content
                    .tensor(r, &format!("blk.{i}.attn_norm.weight"), device)?
                    .dequantize(device)?,
                ffn_norm: content
                    .tensor(r, &format!("blk.{i}.ffn_norm.weight"), device)?
                    .dequantize(device)?,
            });
        }
        let hd = shape.head_dim;
        let inv: Vec<f32> = (0..hd / 2)
            .map(|i| 1.0 / theta.powf(2.0 * i as f32 / hd as f32))
            .collect();
        let inv = Tensor::from_vec(inv, (1, hd / 2), device)?;
        let positions = Tensor::arange(0u32, shape.context as u32, device)?
            .to_dtype(DType::F32)?
            .reshape((shape.context, 1))?;
        let angles = positions.matmul(&inv)?;
        Ok(QLlama {
            embed,
            layers,
            norm,
            output,
            shape,
            eps,
            cos: angles.cos()?,
            sin: angles.sin()?,
            layer_dtype: content
                .tensor_infos
                .get("blk.0.attn_q.weight")
                .map(|t| t.ggml_dtype),
        })
    }

    /// Token ids `(batch, n)` at position `pos` onward: the logits after
    /// the last of them, `(batch, vocab)`.
    pub fn forward(
        &self,
        ids: &Tensor,
        pos: usize,
        cache: &mut Cache,
    ) -> candle_core::Result<Tensor> {
        // Off the CPU every operation stays on the calling thread: candle
        // queues CUDA work on the thread's own default stream, and a pool
        // thread's stream is not ordered after the caller's uploads, nor
        // the caller's read of the logits after the pool thread's kernels.
        if rayon::current_thread_index().is_some() || !ids.device().is_cpu() {
            return self.forward_in_pool(ids, pos, cache);
        }
        // On one of rayon's threads, so the products' tasks split between
        // it and the others, with no thread waiting outside the pool: a
        // caller outside it would sleep and wake at every product (a
        // decode step has ~85), a third thread on the CPUs' two.
        rayon::scope(|_| self.forward_in_pool(ids, pos, cache))
    }

    /// [`Self::forward`] on a thread of rayon's pool.
    fn forward_in_pool(
        &self,
        ids: &Tensor,
        pos: usize,
        cache: &mut Cache,
    ) -> candle_core::Result<Tensor> {
        let (b, n) = ids.dims2()?;
        let s = self.shape;
        let (hd, h) = (s.head_dim, s.hidden);
        let (cos, sin) = (self.cos.narrow(0, pos, n)?, self.sin.narrow(0, pos, n)?);
        // The queries and keys rotated, not the values.
        let rope = Rope {
            outputs: 2,
            cos: &cos,
            sin: &sin,
        };
        let mut x = Residual::new(
            self.embed
                .index_select(&ids.flatten_all()?, 0)?
                .reshape((b, n, h))?,
        )?;
        for (i, layer) in self.layers.iter().enumerate() {
            let y = x.rms_norm(&layer.attn_norm, self.eps)?;
            let counts = [s.heads, s.kv_heads, s.kv_heads];
            let [q, k, v]: [Tensor; 3] = layer
                .qkv
                .forward(&y)?
                .heads((b, n), &counts, hd, rope, y.device())?
                .try_into()
                .map_err(|_| candle_core::Error::Msg("three projections".into()))?;
            let o = cache.attend(i, (&q, &k, &v), pos, &s, self.attends_in_bf16())?;
            x.add_product(&layer.wo, &o)?;
            let y = x.rms_norm(&layer.ffn_norm, self.eps)?;
            let act = layer.gate_up.forward(&y)?.swiglu(y.device())?;
            x.add_product(&layer.down, &act)?;
        }
        let last = candle_nn::ops::rms_norm(&x.last()?, &self.norm, self.eps)?;
        self.output.forward(&last.unsqueeze(1)?)?.squeeze(1)
    }
}
