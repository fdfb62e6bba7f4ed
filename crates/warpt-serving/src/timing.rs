//! A request's figures as serving benchmarks report them: time to first
//! token, every inter-token latency, time per output token and end-to-end
//! latency, from the moment it was sent; and how its tokens were counted.

use std::time::Instant;

use crate::request::{Outcome, Status};

/// How a request's tokens were counted (`details.token_counting`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// Each chunk's tokens by the user's tokenizer.
    Tokenizer,
    /// Totals from the server's `usage`; inter-token latencies per chunk.
    Usage,
    /// One token per chunk (no tokenizer, no `usage`).
    Chunks,
}

impl Counting {
    /// Its name in results.
    pub fn name(self) -> &'static str {
        match self {
            Counting::Tokenizer => "tokenizer",
            Counting::Usage => "usage",
            Counting::Chunks => "chunks",
        }
    }
}

/// One completed request's figures, in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Sent to the first chunk with text.
    pub ttft_s: f64,
    /// Every inter-token latency: a chunk of `k` tokens arriving `g` after
    /// the previous one gives `k` latencies of `g / k` (the first chunk's
    /// extra tokens arrived with it: 0).
    pub itl_s: Vec<f64>,
    /// (latency − TTFT) / (output tokens − 1), for two tokens or more.
    pub tpot_s: Option<f64>,
    /// Sent to the end of the stream.
    pub latency_s: f64,
    /// Tokens generated.
    pub output_tokens: u64,
    /// Prompt tokens, where the server said (`usage`).
    pub prompt_tokens: Option<u64>,
}

/// The figures of a request that ended well and streamed text, and how its
/// tokens were counted: per chunk with `count` (a tokenizer) when given;
/// totals from `usage` when the server sent it; else a token per chunk.
pub fn figures(o: &Outcome, count: Option<&dyn Fn(&str) -> usize>) -> Option<(Figures, Counting)> {
    if o.status != Status::Ok || o.chunks.is_empty() {
        return None;
    }
    let secs = |t: Instant| t.saturating_duration_since(o.sent).as_secs_f64();
    let per_chunk: Vec<u64> = o
        .chunks
        .iter()
        .map(|(_, text)| count.map_or(1, |c| c(text).max(1) as u64))
        .collect();
    let counting = match (count.is_some(), o.completion_tokens.is_some()) {
        (true, _) => Counting::Tokenizer,
        (false, true) => Counting::Usage,
        (false, false) => Counting::Chunks,
    };
    let output_tokens = match counting {
        Counting::Tokenizer | Counting::Chunks => per_chunk.iter().sum(),
        Counting::Usage => o.completion_tokens.unwrap_or(0),
    };
    let mut itl = Vec::with_capacity(output_tokens as usize);
    itl.extend(std::iter::repeat_n(0.0, per_chunk[0] as usize - 1));
    for (w, &k) in o.chunks.windows(2).zip(&per_chunk[1..]) {
        let gap = w[1].0.saturating_duration_since(w[0].0).as_secs_f64();
        itl.extend(std::iter::repeat_n(gap / k as f64, k as usize));
    }
    let ttft_s = secs(o.chunks[0].0);
    let latency_s = secs(o.done);
    Some((
        Figures {
            ttft_s,
            itl_s: itl,
            tpot_s: (output_tokens >= 2).then(|| (latency_s - ttft_s) / (output_tokens - 1) as f64),
            latency_s,
            output_tokens,
            prompt_tokens: o.prompt_tokens,
        },
        counting,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_chunk_of_three_tokens_gives_three_latencies() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let o = Outcome {
            sent: t0,
            chunks: vec![
                (at(50), " a".into()),
                (at(60), " b".into()),
                (at(90), " c d e".into()),
                (at(100), " f".into()),
            ],
            done: at(101),
            prompt_tokens: Some(7),
            completion_tokens: Some(6),
            finish_reason: Some("length".into()),
            echo: None,
            http: None,
            status: Status::Ok,
        };
        let words = |s: &str| s.split_whitespace().count();
        let (f, how) = figures(&o, Some(&words)).unwrap();
        assert_eq!(how, Counting::Tokenizer);
        assert_eq!(f.output_tokens, 6);
        assert!((f.ttft_s - 0.050).abs() < 1e-9);
        let ms: Vec<f64> = f.itl_s.iter().map(|s| (s * 1e3).round()).collect();
        assert_eq!(ms, [10.0, 10.0, 10.0, 10.0, 10.0]);
        assert!((f.tpot_s.unwrap() - 0.051 / 5.0).abs() < 1e-9);
        // Without a tokenizer: usage's total, a latency per chunk.
        let (f, how) = figures(&o, None).unwrap();
        assert_eq!(
            (how, f.output_tokens, f.itl_s.len()),
            (Counting::Usage, 6, 3)
        );
        let bare = Outcome {
            completion_tokens: None,
            ..o.clone()
        };
        let (f, how) = figures(&bare, None).unwrap();
        assert_eq!((how, f.output_tokens), (Counting::Chunks, 4));
        let failed = Outcome {
            status: Status::TimedOut,
            ..o
        };
        assert!(figures(&failed, None).is_none());
    }
}
