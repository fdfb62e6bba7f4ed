//! Where `embed`'s encoder comes from: a Hugging Face directory of a
//! BERT-architecture family (checked, and RoBERTa's tensors read as BERT's)
//! or a size preset of one.

use std::collections::HashMap;
use std::path::Path;

use candle_core::Tensor;
use candle_transformers::models::bert;
use warpt_models::bert::encoder_preset;
use warpt_models::family::Family;

/// The encoder families `embed` runs from a `model_dir`.
const ENCODERS: [Family; 3] = [Family::Bert, Family::Roberta, Family::XlmRoberta];

/// What `model_dir` must hold, checked before anything runs: its BERT-form
/// configuration (for RoBERTa the positions it can embed, see
/// [`roberta_as_bert`]) and its family.
pub(crate) fn check_model_dir(name: &str) -> Result<(bert::Config, Family), String> {
    let dir = Path::new(name);
    if !dir.is_dir() {
        return Err(format!(
            "parameter 'model_dir': {} is not a directory",
            dir.display()
        ));
    }
    for file in ["config.json", "model.safetensors", "tokenizer.json"] {
        if !dir.join(file).is_file() {
            return Err(format!(
                "parameter 'model_dir': {} has no {file}",
                dir.display()
            ));
        }
    }
    let (raw, path) = crate::hf::read_config(name)?;
    let model_type = raw["model_type"].as_str().unwrap_or("").to_string();
    let model_type = model_type.as_str();
    let Some(family) = Family::from_model_type(model_type).filter(|f| ENCODERS.contains(f)) else {
        return Err(format!(
            "parameter 'model_dir': {} says model_type '{model_type}'; embed runs {}",
            path.display(),
            ENCODERS.map(Family::model_type).join(", ")
        ));
    };
    let mut config: bert::Config = serde_json::from_value(raw).map_err(|e| {
        format!(
            "parameter 'model_dir': {} is not a {model_type} config: {e}",
            path.display()
        )
    })?;
    if family != Family::Bert {
        let skip = config.pad_token_id + 1;
        config.max_position_embeddings = config.max_position_embeddings.checked_sub(skip).ok_or_else(|| {
            format!(
                "parameter 'model_dir': {}: max_position_embeddings {} leaves no position after the padding index {}",
                path.display(),
                config.max_position_embeddings,
                config.pad_token_id
            )
        })?;
    }
    Ok((config, family))
}

/// A RoBERTa (or XLM-RoBERTa) checkpoint's tensors as BERT's: the same
/// architecture, but positions count from `pad_token_id + 1` (RoBERTa
/// numbers a sequence's tokens after the padding index and gives pads the
/// padding index itself). With sequences padded on the right, a token's
/// position is then BERT's plus `pad + 1`, so the position table without
/// its first `pad + 1` rows makes the BERT forward pass RoBERTa's; pads are
/// masked out of attention and pooling, so their positions never count.
/// The `roberta.` prefix masked-LM checkpoints carry is dropped.
pub(crate) fn roberta_as_bert(
    tensors: HashMap<String, Tensor>,
    pad: usize,
) -> Result<HashMap<String, Tensor>, String> {
    let mut out = HashMap::with_capacity(tensors.len());
    for (name, t) in tensors {
        let name = name.strip_prefix("roberta.").unwrap_or(&name).to_string();
        let t = if name == "embeddings.position_embeddings.weight" {
            let rows = t.dim(0).map_err(|e| e.to_string())?;
            t.narrow(0, pad + 1, rows.saturating_sub(pad + 1))
                .map_err(|e| format!("{name}: {e}"))?
        } else {
            t
        };
        out.insert(name, t);
    }
    Ok(out)
}

/// The preset `family` and `model` name (an empty family is BERT's).
pub(crate) fn preset_config(family: &str, model: &str) -> Result<bert::Config, String> {
    let family = match family {
        "" => Family::Bert,
        name => Family::from_model_type(name)
            .filter(|f| ENCODERS.contains(f))
            .ok_or_else(|| {
                format!("parameter 'family': '{name}' is not one of bert, roberta, xlm-roberta")
            })?,
    };
    encoder_preset(family, model)
}
