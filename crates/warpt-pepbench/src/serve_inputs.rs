//! What `llm_serve` sends: seeded prompts of `input_tokens` (± sd) asking
//! for `output_tokens` (± sd), the user's prompts (JSONL or ShareGPT), or a
//! recorded trace's requests at their own times; a `prefix_tokens` prefix
//! shared by every request (to exercise prefix caching); conversations of
//! `turns` turns.

use std::path::Path;

use tokenizers::Tokenizer;
use warpt_serving::request::RequestSpec;

use crate::corpus;

/// The input parameters, checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InputConfig {
    /// Requests sent (a trace: at most this many of its lines).
    pub requests: usize,
    /// Prompt tokens: mean and standard deviation.
    pub input_tokens: (usize, usize),
    /// Output tokens: mean and standard deviation.
    pub output_tokens: (usize, usize),
    /// Tokens of seeded text every prompt starts with.
    pub prefix_tokens: usize,
    /// The user's prompts, or empty.
    pub prompts_file: String,
    /// Its format.
    pub dataset_format: String,
    /// A trace to replay, or empty.
    pub trace_file: String,
    /// How much faster than recorded the trace is replayed.
    pub trace_speedup: f64,
    /// Turns per conversation.
    pub turns: usize,
    /// Send `ignore_eos` (servers that do not know it refuse the request).
    pub ignore_eos: bool,
}

/// The requests of a run and, for a trace, when each is due.
#[derive(Debug, Clone)]
pub(crate) struct Inputs {
    /// Every request, conversations' turns consecutive.
    pub specs: Vec<RequestSpec>,
    /// A trace's send times (seconds from the start), one per request.
    pub times: Option<Vec<f64>>,
    /// What a reader of the result should know (a trace cut short).
    pub warnings: Vec<String>,
}

/// Checks the combinations the parameters cannot express alone.
pub(crate) fn check(c: &InputConfig) -> Result<(), String> {
    if !c.trace_file.is_empty() && !c.prompts_file.is_empty() {
        return Err(
            "parameters 'trace_file' and 'prompts_file' exclude each other: a trace says each request's length"
                .into(),
        );
    }
    if !c.trace_file.is_empty() && c.turns > 1 {
        return Err(
            "parameter 'turns' must be 1 with a 'trace_file' (a trace's requests are independent)"
                .into(),
        );
    }
    Ok(())
}

/// Builds the requests from `seed` (the same seed, the same requests in
/// the same order).
pub(crate) fn build(
    c: &InputConfig,
    seed: u64,
    tokenizer: Option<&Tokenizer>,
) -> Result<Inputs, String> {
    check(c)?;
    let mut warnings = Vec::new();
    let mut words = Words::new(
        seed,
        c.requests * (c.input_tokens.0 + 3 * c.input_tokens.1) + c.prefix_tokens,
    );
    let prefix = if c.prefix_tokens > 0 {
        // Its own words, so the prompts after it differ from one another.
        let mut own = Words::new(seed ^ 0x7072_6566_6978, c.prefix_tokens);
        own.text(c.prefix_tokens, tokenizer) + " "
    } else {
        String::new()
    };
    let lengths = |(mean, sd): (usize, usize), salt: u64| {
        warpt_serving::prompts::lengths(mean, sd, c.requests, seed ^ salt)
    };
    let (mut specs, times) = if !c.trace_file.is_empty() {
        let trace = warpt_serving::trace::read(Path::new(&c.trace_file), c.trace_speedup)?;
        if trace.len() > c.requests {
            warnings.push(format!(
                "the trace has {} requests; the first {} were replayed (raise 'requests' for more)",
                trace.len(),
                c.requests
            ));
        }
        let lines = &trace[..trace.len().min(c.requests)];
        let specs: Vec<RequestSpec> = lines
            .iter()
            .map(|l| {
                RequestSpec::new(
                    words.text(l.input_tokens, tokenizer),
                    l.output_tokens,
                    c.ignore_eos,
                )
            })
            .collect();
        (specs, Some(lines.iter().map(|l| l.at_s).collect()))
    } else if !c.prompts_file.is_empty() {
        let all = warpt_serving::prompts::read(Path::new(&c.prompts_file), &c.dataset_format)?;
        let outputs = lengths(c.output_tokens, 2);
        let specs: Vec<RequestSpec> = warpt_serving::prompts::take(&all, c.requests, seed)
            .into_iter()
            .zip(outputs)
            .map(|(p, out)| {
                RequestSpec::new(p.text, p.output_tokens.unwrap_or(out as u32), c.ignore_eos)
            })
            .collect();
        (specs, None)
    } else {
        let specs: Vec<RequestSpec> = lengths(c.input_tokens, 1)
            .into_iter()
            .zip(lengths(c.output_tokens, 2))
            .map(|(input, out)| {
                RequestSpec::new(words.text(input, tokenizer), out as u32, c.ignore_eos)
            })
            .collect();
        (specs, None)
    };
    // The prefix opens each conversation (later turns carry it already).
    for (i, spec) in specs.iter_mut().enumerate() {
        if i % c.turns.max(1) == 0 && !prefix.is_empty() {
            spec.prompt.insert_str(0, &prefix);
        }
    }
    Ok(Inputs {
        specs,
        times,
        warnings,
    })
}

/// Seeded text, handed out a prompt at a time.
struct Words {
    words: Vec<String>,
    next: usize,
}

impl Words {
    /// About `tokens` words of seeded text (reused from the start when a
    /// run asks for more).
    fn new(seed: u64, tokens: usize) -> Self {
        let words: Vec<String> = corpus::lines(seed, tokens / 8 + 2)
            .iter()
            .flat_map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
            .collect();
        Words { words, next: 0 }
    }

    /// The next `tokens` words; with `tokenizer`, cut to exactly `tokens`
    /// tokens where the words make more.
    fn text(&mut self, tokens: usize, tokenizer: Option<&Tokenizer>) -> String {
        let mut out = Vec::with_capacity(tokens);
        for _ in 0..tokens {
            out.push(self.words[self.next % self.words.len()].as_str());
            self.next += 1;
        }
        let text = out.join(" ");
        match tokenizer.and_then(|t| t.encode(text.as_str(), false).ok()) {
            Some(enc) if enc.get_ids().len() > tokens => {
                let end = enc.get_offsets()[tokens - 1].1;
                text[..end].to_string()
            }
            _ => text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> InputConfig {
        InputConfig {
            requests: 6,
            input_tokens: (12, 0),
            output_tokens: (5, 0),
            prefix_tokens: 0,
            prompts_file: String::new(),
            dataset_format: "jsonl".into(),
            trace_file: String::new(),
            trace_speedup: 1.0,
            turns: 1,
            ignore_eos: true,
        }
    }

    #[test]
    fn prompts_have_their_lengths_the_prefix_and_repeat_from_the_seed() {
        let c = config();
        let a = build(&c, 3, None).unwrap();
        assert_eq!(a.specs.len(), 6);
        assert!(
            a.specs
                .iter()
                .all(|s| s.prompt.split_whitespace().count() == 12)
        );
        assert!(a.specs.iter().all(|s| s.max_tokens == 5));
        assert_eq!(a.specs, build(&c, 3, None).unwrap().specs);
        assert_ne!(a.specs[0].prompt, a.specs[1].prompt);
        let c = InputConfig {
            prefix_tokens: 7,
            turns: 2,
            output_tokens: (40, 10),
            ..config()
        };
        let b = build(&c, 3, None).unwrap();
        let prefix: Vec<&str> = b.specs[0].prompt.split_whitespace().take(7).collect();
        for (i, s) in b.specs.iter().enumerate() {
            let words: Vec<&str> = s.prompt.split_whitespace().collect();
            // Each conversation opens with the prefix; its later turns do not repeat it.
            assert_eq!(words.len(), if i % 2 == 0 { 19 } else { 12 }, "{i}");
            assert_eq!(i % 2 == 0, words[..7] == prefix[..]);
        }
        assert!(b.specs.iter().any(|s| s.max_tokens != 40));
    }

    #[test]
    fn a_trace_gives_lengths_and_times_and_says_when_it_was_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            (0..10)
                .map(|i| {
                    format!(
                        "{{\"timestamp\": {}, \"input_length\": {}, \"output_length\": 3}}\n",
                        i * 100,
                        i + 1
                    )
                })
                .collect::<String>(),
        )
        .unwrap();
        let c = InputConfig {
            trace_file: path.display().to_string(),
            trace_speedup: 2.0,
            ..config()
        };
        let t = build(&c, 1, None).unwrap();
        assert_eq!(t.times.unwrap(), [0.0, 0.05, 0.1, 0.15, 0.2, 0.25]);
        assert_eq!(t.specs[3].prompt.split_whitespace().count(), 4);
        assert_eq!(t.specs[3].max_tokens, 3);
        assert!(t.warnings[0].contains("10 requests"), "{:?}", t.warnings);
        let both = InputConfig {
            prompts_file: "p.jsonl".into(),
            ..c.clone()
        };
        assert!(build(&both, 1, None).unwrap_err().contains("exclude"));
        let turns = InputConfig { turns: 2, ..c };
        assert!(build(&turns, 1, None).unwrap_err().contains("turns"));
    }
}
