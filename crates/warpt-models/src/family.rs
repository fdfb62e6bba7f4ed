//! Model families, as a Hugging Face `config.json` names them in
//! `model_type`: which ones warpt knows, what kind of model each is, and
//! which the LLM benchmarks run today.

/// A model architecture family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Llama and its many fine-tunes.
    Llama,
    /// Mistral: Llama with sliding-window attention.
    Mistral,
    /// Qwen2: Llama with biases on the query, key and value projections.
    Qwen2,
    /// Qwen3.
    Qwen3,
    /// Phi-3.
    Phi3,
    /// Gemma.
    Gemma,
    /// Gemma 2.
    Gemma2,
    /// GPT-2.
    Gpt2,
    /// BERT.
    Bert,
    /// RoBERTa.
    Roberta,
    /// XLM-RoBERTa.
    XlmRoberta,
    /// T5 (encoder-decoder).
    T5,
    /// Vision Transformer.
    Vit,
    /// CLIP (image and text towers).
    Clip,
    /// Whisper (speech encoder-decoder).
    Whisper,
}

/// What a family's models do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Generates text one token at a time.
    Decoder,
    /// Embeds text.
    Encoder,
    /// Reads an input, then generates.
    EncoderDecoder,
    /// Reads images.
    Vision,
    /// Reads audio.
    Speech,
}

impl Family {
    /// Every family warpt knows, in the order they are listed to users.
    pub const ALL: [Family; 15] = [
        Family::Llama,
        Family::Mistral,
        Family::Qwen2,
        Family::Qwen3,
        Family::Phi3,
        Family::Gemma,
        Family::Gemma2,
        Family::Gpt2,
        Family::Bert,
        Family::Roberta,
        Family::XlmRoberta,
        Family::T5,
        Family::Vit,
        Family::Clip,
        Family::Whisper,
    ];

    /// The generating families `llm_infer` runs from a `model_dir`: the
    /// decoders and the encoder-decoder.
    pub const LLM: [Family; 9] = {
        use Family::*;
        [Llama, Mistral, Qwen2, Qwen3, Phi3, Gemma, Gemma2, Gpt2, T5]
    };

    /// The family `config.json`'s `model_type` names, if warpt knows it.
    pub fn from_model_type(model_type: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.model_type() == model_type)
    }

    /// Its `model_type`, as `config.json` spells it (and results report it
    /// in `details.family`).
    pub fn model_type(self) -> &'static str {
        match self {
            Family::Llama => "llama",
            Family::Mistral => "mistral",
            Family::Qwen2 => "qwen2",
            Family::Qwen3 => "qwen3",
            Family::Phi3 => "phi3",
            Family::Gemma => "gemma",
            Family::Gemma2 => "gemma2",
            Family::Gpt2 => "gpt2",
            Family::Bert => "bert",
            Family::Roberta => "roberta",
            Family::XlmRoberta => "xlm-roberta",
            Family::T5 => "t5",
            Family::Vit => "vit",
            Family::Clip => "clip",
            Family::Whisper => "whisper",
        }
    }

    /// What its models do.
    pub fn kind(self) -> Kind {
        match self {
            Family::Llama
            | Family::Mistral
            | Family::Qwen2
            | Family::Qwen3
            | Family::Phi3
            | Family::Gemma
            | Family::Gemma2
            | Family::Gpt2 => Kind::Decoder,
            Family::Bert | Family::Roberta | Family::XlmRoberta => Kind::Encoder,
            Family::T5 => Kind::EncoderDecoder,
            Family::Vit | Family::Clip => Kind::Vision,
            Family::Whisper => Kind::Speech,
        }
    }

    /// The families `llm_infer` runs, for an error message.
    pub fn llm_list() -> String {
        Self::LLM.map(Family::model_type).join(", ")
    }

    /// Why `llm_infer` cannot run a `model_type`, or `None` if it can.
    pub fn llm_refusal(model_type: &str) -> Option<String> {
        let runs = Self::llm_list();
        match Self::from_model_type(model_type) {
            Some(f) if Self::LLM.contains(&f) => None,
            Some(f) => Some(format!(
                "model_type '{model_type}' is {}; llm_infer runs {runs}",
                match f.kind() {
                    Kind::Encoder => "an encoder (pepbench/embed runs it)",
                    Kind::Vision => "a vision model (pepbench/vision_infer runs it)",
                    Kind::Speech => "a speech model (pepbench/speech_infer runs it)",
                    Kind::Decoder | Kind::EncoderDecoder => "a text generator",
                }
            )),
            None => Some(format!(
                "model_type '{model_type}' is not a family warpt knows; llm_infer runs {runs}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_types_round_trip_and_refusals_say_what_runs() {
        for f in Family::ALL {
            assert_eq!(Family::from_model_type(f.model_type()), Some(f));
        }
        assert_eq!(Family::from_model_type("Llama"), None);
        for f in Family::LLM {
            assert_eq!(Family::llm_refusal(f.model_type()), None);
        }
        // Every decoder family runs, and the encoder-decoder.
        for f in Family::ALL {
            let generates = matches!(f.kind(), Kind::Decoder | Kind::EncoderDecoder);
            assert_eq!(generates, Family::LLM.contains(&f), "{f:?}");
        }
        let bert = Family::llm_refusal("bert").unwrap_or_default();
        assert!(
            bert.contains("is an encoder (pepbench/embed runs it)"),
            "{bert}"
        );
        assert!(
            bert.ends_with(
                "llm_infer runs llama, mistral, qwen2, qwen3, phi3, gemma, gemma2, gpt2, t5"
            ),
            "{bert}"
        );
        let odd = Family::llm_refusal("mamba").unwrap_or_default();
        assert!(odd.contains("'mamba' is not a family warpt knows"), "{odd}");
    }
}
