//! Quantized Llama models in GGUF, llama.cpp's file format: written from
//! Hugging Face–named weights (seeded or a `model_dir`), read for
//! `model_file`, and loaded into [`QLlama`].
//!
//! Naming and layout follow llama.cpp's converter: `blk.N.attn_q.weight`
//! and friends, with the rows of the query and key projections permuted
//! from Hugging Face's rotate-half RoPE layout to the interleaved one GGUF
//! Llama models use. Norm weights stay f32; every matrix whose rows divide
//! into the type's blocks is quantized (embedding and output included, as
//! llama.cpp's q8_0 and q4_0 files do).

use std::collections::HashMap;
use std::io::{Read, Seek, Write};
use std::path::Path;

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use crate::qllama::QLlama;

use crate::model::{RMS_EPS, ROPE_THETA, Shape};

/// What a GGUF file holds, read from its header alone.
#[derive(Debug, Clone)]
pub struct Info {
    /// The model's shape.
    pub shape: Shape,
    /// Parameters, counted from the tensors' shapes.
    pub parameters: usize,
    /// Bytes of the tensors as stored.
    pub model_bytes: usize,
    /// The storage type of most parameters, as llama.cpp names it (`q8_0`).
    pub precision: String,
}

/// llama.cpp's name for a storage type (`q8_0`, `q4_k`, `f16`).
pub fn type_name(t: GgmlDType) -> String {
    let debug = format!("{t:?}").to_ascii_lowercase();
    match debug.strip_suffix('k') {
        Some(stem) if stem.starts_with('q') && !stem.ends_with('_') => format!("{stem}_k"),
        _ => debug,
    }
}

/// The GGUF name of a Hugging Face Llama tensor, if it is one.
fn gguf_name(hf: &str) -> Option<String> {
    let fixed = match hf {
        "model.embed_tokens.weight" => Some("token_embd.weight"),
        "model.norm.weight" => Some("output_norm.weight"),
        "lm_head.weight" => Some("output.weight"),
        _ => None,
    };
    if let Some(n) = fixed {
        return Some(n.to_string());
    }
    let rest = hf.strip_prefix("model.layers.")?;
    let (layer, part) = rest.split_once('.')?;
    let part = match part {
        "input_layernorm.weight" => "attn_norm.weight",
        "self_attn.q_proj.weight" => "attn_q.weight",
        "self_attn.k_proj.weight" => "attn_k.weight",
        "self_attn.v_proj.weight" => "attn_v.weight",
        "self_attn.o_proj.weight" => "attn_output.weight",
        "post_attention_layernorm.weight" => "ffn_norm.weight",
        "mlp.gate_proj.weight" => "ffn_gate.weight",
        "mlp.up_proj.weight" => "ffn_up.weight",
        "mlp.down_proj.weight" => "ffn_down.weight",
        _ => return None,
    };
    Some(format!("blk.{layer}.{part}"))
}

/// Reorders the rows of a query or key projection (`[heads × head_dim,
/// in]`) from rotate-half pairs (i, i + d/2) to interleaved pairs (2i, 2i+1).
fn interleave_rope_rows(w: &Tensor, heads: usize) -> candle_core::Result<Tensor> {
    let (out, inp) = w.dims2()?;
    let half = out / heads / 2;
    w.reshape((heads, 2, half, inp))?
        .transpose(1, 2)?
        .contiguous()?
        .reshape((out, inp))
}

/// `t` quantized to `qtype`, or kept f32 where it is a vector or its rows
/// do not divide into `qtype`'s blocks.
pub fn quantize(t: &Tensor, qtype: GgmlDType) -> candle_core::Result<QTensor> {
    let dims = t.dims();
    let fits = dims.len() == 2 && dims[1].is_multiple_of(qtype.block_size());
    QTensor::quantize(t, if fits { qtype } else { GgmlDType::F32 })
}

/// The Hugging Face–named weights of a model of `shape`, quantized to
/// `qtype` and written as a GGUF Llama file to `w`.
pub fn write<W: Write + Seek>(
    w: &mut W,
    shape: &Shape,
    tensors: &HashMap<String, Tensor>,
    qtype: GgmlDType,
) -> Result<(), String> {
    let mut named: Vec<(String, QTensor)> = Vec::with_capacity(tensors.len());
    let mut names: Vec<&String> = tensors.keys().collect();
    names.sort();
    for hf in names {
        let Some(name) = gguf_name(hf) else { continue };
        let t = &tensors[hf];
        let t = if hf.ends_with("q_proj.weight") {
            interleave_rope_rows(t, shape.heads)
        } else if hf.ends_with("k_proj.weight") {
            interleave_rope_rows(t, shape.kv_heads)
        } else {
            Ok(t.clone())
        };
        let q = t
            .and_then(|t| quantize(&t, qtype))
            .map_err(|e| format!("quantizing {hf}: {e}"))?;
        named.push((name, q));
    }
    let u32v = |v: usize| Value::U32(v as u32);
    let file_type = match qtype {
        GgmlDType::Q8_0 => 7,
        GgmlDType::Q4_0 => 2,
        GgmlDType::F16 => 1,
        GgmlDType::BF16 => 32,
        _ => 0,
    };
    let metadata: Vec<(&str, Value)> = vec![
        ("general.architecture", Value::String("llama".into())),
        ("general.name", Value::String("warpt seeded llama".into())),
        ("general.file_type", Value::U32(file_type)),
        ("llama.vocab_size", u32v(shape.vocab)),
        ("llama.context_length", u32v(shape.context)),
        ("llama.embedding_length", u32v(shape.hidden)),
        ("llama.block_count", u32v(shape.layers)),
        ("llama.feed_forward_length", u32v(shape.intermediate)),
        ("llama.rope.dimension_count", u32v(shape.head_dim)),
        ("llama.attention.head_count", u32v(shape.heads)),
        ("llama.attention.head_count_kv", u32v(shape.kv_heads)),
        (
            "llama.attention.layer_norm_rms_epsilon",
            Value::F32(RMS_EPS as f32),
        ),
        ("llama.rope.freq_base", Value::F32(ROPE_THETA)),
        // Token ids in, token ids out: llama.cpp accepts a file without a
        // vocabulary under this name.
        ("tokenizer.ggml.model", Value::String("no_vocab".into())),
    ];
    let md: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (*k, v)).collect();
    let ts: Vec<(&str, &QTensor)> = named.iter().map(|(k, v)| (k.as_str(), v)).collect();
    gguf_file::write(w, &md, &ts).map_err(|e| format!("writing GGUF: {e}"))
}

/// Writes the weights to `path` (via a temporary file beside it, renamed
/// into place, so a failure leaves nothing half-written).
pub fn save(
    path: &Path,
    shape: &Shape,
    tensors: &HashMap<String, Tensor>,
    qtype: GgmlDType,
) -> Result<(), String> {
    let tmp = path.with_extension("gguf.partial");
    let result = (|| {
        let file =
            std::fs::File::create(&tmp).map_err(|e| format!("creating {}: {e}", tmp.display()))?;
        let mut out = std::io::BufWriter::new(file);
        write(&mut out, shape, tensors, qtype)?;
        out.flush()
            .map_err(|e| format!("writing {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, path).map_err(|e| format!("renaming to {}: {e}", path.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The header of the GGUF file at `path`, checked: a GGUF whose
/// architecture is Llama, with the metadata candle needs.
pub fn check_file(path: &str) -> Result<Info, String> {
    let bad = |why: String| format!("parameter 'model_file': {path}: {why}");
    let mut file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let len = file.metadata().map_err(|e| bad(e.to_string()))?.len();
    let content = gguf_file::Content::read(&mut file)
        .map_err(|e| bad(format!("not a readable GGUF file ({e})")))?;
    info(&content, len).map_err(bad)
}

/// Every tensor of `c` checked against the file's `len` bytes: its element
/// count and bytes computed without overflow, a whole number of blocks,
/// its data inside the file. The (elements, bytes) of each, by name.
fn tensor_sizes(c: &gguf_file::Content, len: u64) -> Result<HashMap<&str, (usize, usize)>, String> {
    let mut out = HashMap::with_capacity(c.tensor_infos.len());
    for (name, t) in &c.tensor_infos {
        let dims = t.shape.dims();
        let n = dims
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| format!("tensor {name}: dimensions {dims:?} overflow"))?;
        let (block, size) = (t.ggml_dtype.block_size(), t.ggml_dtype.type_size());
        if !n.is_multiple_of(block) {
            return Err(format!(
                "tensor {name}: {n} elements are not whole blocks of {block}"
            ));
        }
        let bytes = (n / block)
            .checked_mul(size)
            .ok_or_else(|| format!("tensor {name}: its size overflows"))?;
        c.tensor_data_offset
            .checked_add(t.offset)
            .and_then(|s| s.checked_add(bytes as u64))
            .filter(|&end| end <= len)
            .ok_or_else(|| {
                format!(
                    "tensor {name}: {bytes} bytes at offset {} run past the file's {len}",
                    t.offset
                )
            })?;
        out.insert(name.as_str(), (n, bytes));
    }
    Ok(out)
}

fn info(c: &gguf_file::Content, len: u64) -> Result<Info, String> {
    let sizes = tensor_sizes(c, len)?;
    let arch = c
        .metadata
        .get("general.architecture")
        .and_then(|v| v.to_string().ok())
        .cloned()
        .unwrap_or_default();
    if arch != "llama" {
        return Err(format!(
            "general.architecture is '{arch}'; the LLM benchmarks run Llama-architecture decoders"
        ));
    }
    let get = |k: &str| -> Result<usize, String> {
        c.metadata
            .get(k)
            .and_then(|v| v.to_u32().ok())
            .map(|v| v as usize)
            .ok_or_else(|| format!("metadata has no {k}"))
    };
    let dims = |name: &str| -> Result<Vec<usize>, String> {
        c.tensor_infos
            .get(name)
            .map(|t| t.shape.dims().to_vec())
            .ok_or_else(|| format!("has no tensor {name}"))
    };
    let embd = dims("token_embd.weight")?;
    let gate = dims("blk.0.ffn_gate.weight")?;
    let (hidden, heads) = (
        get("llama.embedding_length")?,
        get("llama.attention.head_count")?,
    );
    if heads == 0 || !hidden.is_multiple_of(heads) {
        return Err(format!(
            "{heads} attention heads do not divide the hidden size {hidden}"
        ));
    }
    // The header's sizes, held to what the tensors hold.
    if embd.get(1) != Some(&hidden) {
        return Err(format!(
            "llama.embedding_length is {hidden} but token_embd.weight is {embd:?}"
        ));
    }
    let layers = get("llama.block_count")?;
    let held = (0..)
        .take_while(|i| {
            c.tensor_infos
                .contains_key(&format!("blk.{i}.attn_q.weight"))
        })
        .count();
    if layers == 0 || layers > held {
        return Err(format!(
            "llama.block_count is {layers} but the file holds {held} blocks (blk.N.attn_q.weight)"
        ));
    }
    let context = get("llama.context_length")?;
    if context == 0 || context > crate::model::MAX_CONTEXT {
        return Err(format!(
            "llama.context_length is {context}; warpt runs 1 to {} positions",
            crate::model::MAX_CONTEXT
        ));
    }
    let kv_heads = get("llama.attention.head_count_kv")?;
    if kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
        return Err(format!(
            "{kv_heads} key-value heads do not divide the {heads} attention heads"
        ));
    }
    let shape = Shape {
        vocab: embd.first().copied().unwrap_or(0),
        hidden,
        intermediate: gate.first().copied().unwrap_or(0),
        layers,
        heads,
        kv_heads,
        head_dim: hidden / heads,
        context,
    };
    check_tensor_shapes(&shape, &dims)?;
    let mut by_type: HashMap<GgmlDType, usize> = HashMap::new();
    let (mut parameters, mut model_bytes) = (0usize, 0usize);
    for (name, t) in &c.tensor_infos {
        let (n, bytes) = sizes[name.as_str()];
        parameters = parameters.saturating_add(n);
        model_bytes = model_bytes.saturating_add(bytes);
        *by_type.entry(t.ggml_dtype).or_default() += n;
    }
    let precision = by_type
        .into_iter()
        .max_by_key(|&(_, n)| n)
        .map_or_else(|| "empty".to_string(), |(t, _)| type_name(t));
    Ok(Info {
        shape,
        parameters,
        model_bytes,
        precision,
    })
}

/// Every tensor the model reads has the shape `shape` gives it (rows =
/// output features first): a matrix of another width would meet
/// activations it does not fit in the middle of a forward pass.
fn check_tensor_shapes(
    shape: &Shape,
    dims: &dyn Fn(&str) -> Result<Vec<usize>, String>,
) -> Result<(), String> {
    let Shape {
        vocab,
        hidden,
        intermediate,
        layers,
        kv_heads,
        head_dim,
        ..
    } = *shape;
    if vocab == 0 || intermediate == 0 {
        return Err(format!(
            "token_embd.weight ({vocab} tokens) and blk.0.ffn_gate.weight ({intermediate} features) must not be empty"
        ));
    }
    let expect = |name: &str, want: &[usize]| -> Result<(), String> {
        let got = dims(name)?;
        if got != want {
            return Err(format!(
                "tensor {name} is {got:?}; this model needs {want:?}"
            ));
        }
        Ok(())
    };
    expect("output_norm.weight", &[hidden])?;
    if dims("output.weight").is_ok() {
        expect("output.weight", &[vocab, hidden])?;
    }
    let kv = kv_heads * head_dim;
    for i in 0..layers {
        for (part, want) in [
            ("attn_q", vec![hidden, hidden]),
            ("attn_k", vec![kv, hidden]),
            ("attn_v", vec![kv, hidden]),
            ("attn_output", vec![hidden, hidden]),
            ("ffn_gate", vec![intermediate, hidden]),
            ("ffn_up", vec![intermediate, hidden]),
            ("ffn_down", vec![hidden, intermediate]),
            ("attn_norm", vec![hidden]),
            ("ffn_norm", vec![hidden]),
        ] {
            expect(&format!("blk.{i}.{part}.weight"), &want)?;
        }
    }
    Ok(())
}

/// The quantized Llama in a GGUF stream, with what its header says.
pub fn load<R: Read + Seek>(r: &mut R, device: &Device) -> Result<(QLlama, Info), String> {
    let len = r
        .seek(std::io::SeekFrom::End(0))
        .and_then(|len| r.seek(std::io::SeekFrom::Start(0)).map(|_| len))
        .map_err(|e| format!("reading the GGUF stream: {e}"))?;
    let content =
        gguf_file::Content::read(r).map_err(|e| format!("not a readable GGUF file ({e})"))?;
    let info = info(&content, len)?;
    let model = QLlama::from_gguf(&content, r, info.shape, device)
        .map_err(|e| format!("loading the tensors: {e}"))?;
    Ok((model, info))
}

/// The quantized Llama in the GGUF file at `path`.
pub fn load_file(path: &str, device: &Device) -> Result<(QLlama, Info), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    load(&mut std::io::BufReader::new(file), device).map_err(|e| format!("{path}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::DType;

    #[test]
    fn names_follow_llama_cpp() {
        assert_eq!(type_name(GgmlDType::Q8_0), "q8_0");
        assert_eq!(type_name(GgmlDType::Q4K), "q4_k");
        assert_eq!(type_name(GgmlDType::F16), "f16");
        assert_eq!(
            gguf_name("model.layers.3.mlp.down_proj.weight").as_deref(),
            Some("blk.3.ffn_down.weight")
        );
        assert_eq!(gguf_name("model.layers.3.rotary.inv_freq"), None);
    }

    /// A tiny Llama as a GGUF file's bytes, its metadata changed by
    /// `change` before it is written again.
    fn tiny_gguf(change: impl FnOnce(&mut HashMap<String, Value>)) -> Vec<u8> {
        let shape = crate::model::TEST_SHAPE;
        let cpu = Device::Cpu;
        let tensors = crate::model::generate(&shape, 1, &cpu).unwrap();
        let mut buf = std::io::Cursor::new(Vec::new());
        write(&mut buf, &shape, &tensors, GgmlDType::Q8_0).unwrap();
        buf.set_position(0);
        let mut c = gguf_file::Content::read(&mut buf).unwrap();
        change(&mut c.metadata);
        let qs: Vec<(String, QTensor)> = c
            .tensor_infos
            .keys()
            .map(|n| (n.clone(), c.tensor(&mut buf, n, &cpu).unwrap()))
            .collect();
        let md: Vec<(&str, &Value)> = c.metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let ts: Vec<(&str, &QTensor)> = qs.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let mut out = std::io::Cursor::new(Vec::new());
        gguf_file::write(&mut out, &md, &ts).unwrap();
        out.into_inner()
    }

    fn load_bytes(bytes: Vec<u8>) -> Result<Info, String> {
        load(&mut std::io::Cursor::new(bytes), &Device::Cpu).map(|(_, info)| info)
    }

    #[test]
    fn hostile_headers_are_refused_by_name_before_anything_is_sized() {
        // The honest file loads.
        let info = load_bytes(tiny_gguf(|_| {})).unwrap();
        assert_eq!((info.shape.layers, info.shape.vocab), (2, 64));
        let set = |k: &'static str, v: Value| {
            move |m: &mut HashMap<String, Value>| {
                m.insert(k.to_string(), v);
            }
        };
        for (bytes, says) in [
            (
                tiny_gguf(set("general.alignment", Value::U32(0))),
                "alignment is 0",
            ),
            (
                tiny_gguf(set("llama.block_count", Value::U32(u32::MAX))),
                "holds 2 blocks",
            ),
            (
                tiny_gguf(set("llama.context_length", Value::U32(1 << 22))),
                "context_length",
            ),
            (
                tiny_gguf(set("llama.embedding_length", Value::U32(48))),
                "token_embd.weight is",
            ),
            (
                tiny_gguf(set("llama.attention.head_count_kv", Value::U32(0))),
                "key-value heads",
            ),
        ] {
            let e = load_bytes(bytes).unwrap_err();
            assert!(e.contains(says), "{says}: {e}");
        }
        // Dimensions whose product wraps to 0 in 64 bits, and a file cut
        // short: the sizes are computed with checks against the file.
        let mut bytes = tiny_gguf(|_| {});
        let name = b"token_embd.weight";
        let at = bytes.windows(name.len()).position(|w| w == name).unwrap() + name.len();
        // n_dims (u32), then the dimensions (u64 each).
        for d in 0..2 {
            let o = at + 4 + 8 * d;
            bytes[o..o + 8].copy_from_slice(&(1u64 << 32).to_le_bytes());
        }
        let e = load_bytes(bytes).unwrap_err();
        assert!(e.contains("overflow"), "{e}");
        let mut short = tiny_gguf(|_| {});
        short.truncate(short.len() - 100);
        let e = load_bytes(short).unwrap_err();
        assert!(e.contains("run past the file"), "{e}");
    }

    /// Found by `scripts/fuzz gguf_file`: a layer's matrix of another
    /// width than the header's passed the checks and panicked the forward
    /// pass (`1 rows of 37`).
    #[test]
    fn every_matrix_has_the_shape_the_header_gives() {
        let shape = crate::model::TEST_SHAPE;
        let cpu = Device::Cpu;
        for (hf, dims, says) in [
            (
                "model.layers.1.mlp.down_proj.weight",
                (32, 37),
                "blk.1.ffn_down.weight is [32, 37]; this model needs [32, 64]",
            ),
            (
                "model.layers.0.self_attn.k_proj.weight",
                (32, 32),
                "blk.0.attn_k.weight is [32, 32]; this model needs [16, 32]",
            ),
            (
                "model.norm.weight",
                (1, 31),
                "output_norm.weight is [1, 31]; this model needs [32]",
            ),
        ] {
            let mut tensors = crate::model::generate(&shape, 1, &cpu).unwrap();
            tensors.insert(hf.into(), Tensor::zeros(dims, DType::F32, &cpu).unwrap());
            let mut buf = std::io::Cursor::new(Vec::new());
            write(&mut buf, &shape, &tensors, GgmlDType::F32).unwrap();
            let e = load_bytes(buf.into_inner()).unwrap_err();
            assert!(e.contains(says), "{hf}: {e}");
        }
    }

    /// Found by `scripts/fuzz gguf_file`: candle's debug assertions wanted
    /// an even number of blocks per row in the Q4_1, Q5_0 and Q5_1 dot
    /// products, which run block by block (patched in vendor/candle-core):
    /// a Q4_1 model 32 wide panicked in a debug build.
    #[test]
    fn block_types_run_rows_of_one_block() {
        let shape = Shape {
            vocab: 64,
            hidden: 32,
            intermediate: 32,
            layers: 1,
            heads: 4,
            kv_heads: 2,
            head_dim: 8,
            context: 16,
        };
        let cpu = Device::Cpu;
        let tensors = crate::model::generate(&shape, 1, &cpu).unwrap();
        let dir = tempfile::tempdir().unwrap();
        for qtype in [GgmlDType::Q4_1, GgmlDType::Q5_0, GgmlDType::Q5_1] {
            let path = dir.path().join("m.gguf");
            save(&path, &shape, &tensors, qtype).unwrap();
            let (model, _) = crate::llm::Decoder::from_gguf(path.to_str().unwrap(), &cpu).unwrap();
            let out = model.generate(&[vec![1, 2]], 2).unwrap();
            assert_eq!(out.tokens[0].len(), 2, "{qtype:?}");
        }
    }

    #[test]
    fn rope_rows_interleave_within_each_head() {
        // 2 heads of dimension 4, one input column: rows 0..8.
        let w = Tensor::arange(0f32, 8., &Device::Cpu)
            .and_then(|t| t.reshape((8, 1)))
            .unwrap();
        let p = interleave_rope_rows(&w, 2).unwrap();
        let rows: Vec<f32> = p.flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(rows, [0., 2., 1., 3., 4., 6., 5., 7.]);
    }
}
