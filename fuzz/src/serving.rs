//! What an OpenAI-compatible endpoint sends back, and the prompt and trace
//! files `llm_serve` reads.

use std::time::Duration;

use warpt_serving::sse::{Event, MAX_LINE, Parser};
use warpt_serving::{Api, Endpoint, prompts, trace};

use crate::scratch;

/// A streamed answer, fed to the SSE parser in pieces whose lengths the
/// first bytes choose (a network read ends anywhere), for both APIs.
/// Property: the events do not depend on where the reads ended.
pub fn sse_stream(data: &[u8]) {
    let (cuts, stream) = data.split_at(data.len().min(4));
    for api in [Api::Chat, Api::Completions] {
        let whole = Parser::new().feed(stream, api);
        let mut parser = Parser::new();
        let mut pieces = Vec::new();
        let mut rest = stream;
        let mut i = 0;
        while !rest.is_empty() {
            let n = (usize::from(cuts.get(i % cuts.len().max(1)).copied().unwrap_or(7)) % 17 + 1)
                .min(rest.len());
            pieces.extend(parser.feed(&rest[..n], api));
            rest = &rest[n..];
            i += 1;
        }
        let overlong = whole
            .iter()
            .any(|e| matches!(e, Event::Error(m) if m.contains("longer than")));
        if !overlong && stream.len() <= MAX_LINE {
            assert_eq!(whole, pieces, "the same stream read in other pieces");
        }
    }
}

/// The text after the selector byte as what the endpoint's side takes
/// from a caller or a server: an `endpoint` URL, a `/v1/models` answer,
/// a JSONL or ShareGPT prompts file, a trace.
pub fn serving_inputs(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match which % 4 {
        0 => {
            let _ = Endpoint::new(&text, Api::Chat, "m", "", Duration::from_secs(1));
        }
        1 => {
            let path = scratch::file("prompts.jsonl", rest);
            if let Ok(p) = prompts::read(&path, "jsonl") {
                assert!(!p.is_empty());
                let _ = prompts::take(&p, 3, 1);
            }
        }
        2 => {
            let path = scratch::file("prompts.json", rest);
            let _ = prompts::read(&path, "sharegpt");
        }
        _ => {
            let path = scratch::file("trace.jsonl", rest);
            if let Ok(lines) = trace::read(&path, 2.0) {
                // Times from the first request, in order, finite.
                assert!(lines.windows(2).all(|w| w[0].at_s <= w[1].at_s));
                assert!(lines.iter().all(|l| l.at_s.is_finite() && l.at_s >= 0.0));
            }
        }
    }
}
