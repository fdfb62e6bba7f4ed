//! A SQuAD v1.1 file (`data[].paragraphs[].{context, qas[].{question,
//! answers[].text}}`) as BERT inputs, and a response's answer text back.
//!
//! Words are split at whitespace and punctuation and each maps to a token
//! id by a hash into bert-base-uncased's word range: the seeded BERT has no
//! vocabulary to honour, and a span of words maps back to the context's
//! text exactly. (A real checkpoint's WordPiece tokenizer is not applied:
//! its F1 here measures the pipeline, not the checkpoint's skill.)

use std::path::Path;

/// bert-base-uncased's `[CLS]`, `[SEP]`, and its first and last word ids.
const CLS: u32 = 101;
const SEP: u32 = 102;
const FIRST_WORD: u32 = 1996;
const VOCAB: u32 = 30522;

/// The longest answer a span may be, in words (MLPerf's `max_answer_length`).
pub const MAX_ANSWER_WORDS: usize = 30;

/// One question as a model input.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// `[CLS] question [SEP] context [SEP]`, padded with 0 to the sequence.
    pub ids: Vec<u32>,
    /// 1 for real tokens.
    pub mask: Vec<u32>,
    /// Where the context's first word sits.
    pub context_start: usize,
    /// The context's words that fit, in order.
    pub words: Vec<String>,
    /// The question's answers.
    pub answers: Vec<String>,
}

/// Words: runs of alphanumerics, and each punctuation mark alone.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        if !c.is_whitespace() {
            out.push(c.to_string());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// A word's token id (FNV-1a of its lower case, into the word range).
fn id(word: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in word.to_lowercase().bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    FIRST_WORD + h % (VOCAB - FIRST_WORD)
}

/// Every question of the SQuAD file at `path` as an input of `seq` tokens
/// (questions cut to half the window, contexts to what is left).
pub fn load(path: &Path, seq: usize) -> Result<Vec<Example>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = |what: &str| format!("{}: not SQuAD v1.1 JSON ({what})", path.display());
    let mut out = Vec::new();
    for article in doc["data"]
        .as_array()
        .ok_or_else(|| bad("no 'data' list"))?
    {
        for para in article["paragraphs"]
            .as_array()
            .ok_or_else(|| bad("an article without 'paragraphs'"))?
        {
            let context = para["context"]
                .as_str()
                .ok_or_else(|| bad("a paragraph without 'context'"))?;
            for qa in para["qas"]
                .as_array()
                .ok_or_else(|| bad("a paragraph without 'qas'"))?
            {
                let question = qa["question"]
                    .as_str()
                    .ok_or_else(|| bad("a question without 'question'"))?;
                let answers: Vec<String> = qa["answers"]
                    .as_array()
                    .ok_or_else(|| bad("a question without 'answers'"))?
                    .iter()
                    .filter_map(|a| a["text"].as_str().map(str::to_string))
                    .collect();
                out.push(example(question, context, answers, seq));
            }
        }
    }
    if out.is_empty() {
        return Err(format!("{}: no questions", path.display()));
    }
    Ok(out)
}

fn example(question: &str, context: &str, answers: Vec<String>, seq: usize) -> Example {
    let q: Vec<u32> = words(question)
        .iter()
        .map(|w| id(w))
        .take((seq.saturating_sub(3) / 2).max(1))
        .collect();
    let context_start = q.len() + 2;
    let room = seq.saturating_sub(context_start + 1);
    let words: Vec<String> = words(context).into_iter().take(room).collect();
    let mut ids = Vec::with_capacity(seq);
    ids.push(CLS);
    ids.extend(&q);
    ids.push(SEP);
    ids.extend(words.iter().map(|w| id(w)));
    ids.push(SEP);
    ids.truncate(seq);
    let mut mask = vec![1u32; ids.len()];
    ids.resize(seq, 0);
    mask.resize(seq, 0);
    Example {
        ids,
        mask,
        context_start,
        words,
        answers,
    }
}

impl Example {
    /// The answer the start/end logits (`seq × 2`, row-major) give: the
    /// context span of at most [`MAX_ANSWER_WORDS`] words whose start and
    /// end logits sum highest, as its words joined by spaces.
    pub fn answer(&self, logits: &[f32]) -> String {
        let n = self.words.len();
        let at = |w: usize, k: usize| logits[(self.context_start + w) * 2 + k];
        let mut best = (f32::NEG_INFINITY, 0, 0);
        for s in 0..n {
            for e in s..n.min(s + MAX_ANSWER_WORDS) {
                let score = at(s, 0) + at(e, 1);
                if score > best.0 {
                    best = (score, s, e);
                }
            }
        }
        if n == 0 {
            return String::new();
        }
        self.words[best.1..=best.2].join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_becomes_ids_and_a_span_its_words() {
        assert_eq!(words("Paris, France."), ["Paris", ",", "France", "."]);
        let e = example("Where?", "in Paris, France", vec!["Paris".into()], 16);
        // [CLS] Where ? [SEP] in Paris , France [SEP], padded to 16.
        assert_eq!(e.ids.len(), 16);
        assert_eq!((e.ids[0], e.ids[3], e.ids[8]), (CLS, SEP, SEP));
        assert_eq!(e.mask.iter().sum::<u32>(), 9);
        assert_eq!(e.context_start, 4);
        // Logits that favour "Paris , France" (words 1 to 3).
        let mut logits = vec![0f32; 32];
        logits[(4 + 1) * 2] = 6.0;
        logits[(4 + 3) * 2 + 1] = 4.0;
        // A higher end before the start pairs only with a lower start.
        logits[4 * 2 + 1] = 9.0;
        assert_eq!(e.answer(&logits), "Paris , France");
        // The same word, the same id, whatever its case.
        assert_eq!(id("Paris"), id("paris"));
    }

    #[test]
    fn a_file_that_is_not_squad_is_named() {
        let dir = std::env::temp_dir().join(format!("warpt-squad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("x.json");
        std::fs::write(&f, r#"{"version": "1.1"}"#).unwrap();
        assert!(load(&f, 64).unwrap_err().contains("no 'data' list"));
        std::fs::write(
            &f,
            r#"{"data": [{"paragraphs": [{"context": "Rome", "qas": [{"question": "Capital?", "answers": [{"text": "Rome"}]}]}]}]}"#,
        )
        .unwrap();
        let e = load(&f, 64).unwrap();
        assert_eq!((e.len(), e[0].words.clone()), (1, vec!["Rome".to_string()]));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
