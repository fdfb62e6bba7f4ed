//! Server-sent events as OpenAI-compatible servers stream them: `data:`
//! lines holding one JSON chunk each, ended by `data: [DONE]`. Bytes are
//! fed as they arrive (a network read may end mid-line or carry several
//! events); each complete event becomes an [`Event`].

use crate::endpoint::Api;

/// What one streamed chunk said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chunk {
    /// Generated text in it (empty for a role-only or usage-only chunk).
    pub text: String,
    /// Why generation stopped, on the last content chunk.
    pub finish_reason: Option<String>,
    /// Prompt tokens, when the chunk carries `usage`.
    pub prompt_tokens: Option<u64>,
    /// Generated tokens, when the chunk carries `usage`.
    pub completion_tokens: Option<u64>,
}

/// One event of the stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A JSON chunk.
    Chunk(Chunk),
    /// `[DONE]`: the stream ended properly.
    Done,
    /// The server reported an error inside the stream.
    Error(String),
}

/// The longest line an event may take: longer is a broken or hostile
/// stream, refused rather than buffered.
pub const MAX_LINE: usize = 1 << 20;

/// Splits a byte stream into events. Each byte is looked at once (a line
/// fed in many small pieces is not rescanned), and a line longer than
/// [`MAX_LINE`] becomes an error event instead of growing the buffer.
#[derive(Debug, Default)]
pub struct Parser {
    pending: Vec<u8>,
    /// Bytes of `pending` already searched for a newline.
    scanned: usize,
    /// A line ran past [`MAX_LINE`]: the rest of the stream is ignored.
    overlong: bool,
}

impl Parser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Parser::default()
    }

    /// The events the bytes `data` complete, in order.
    pub fn feed(&mut self, data: &[u8], api: Api) -> Vec<Event> {
        let mut events = Vec::new();
        if self.overlong {
            return events;
        }
        self.pending.extend_from_slice(data);
        // Complete lines from `start`; the search resumes where it stopped.
        let mut start = 0;
        while let Some(at) = self.pending[self.scanned..]
            .iter()
            .position(|&b| b == b'\n')
        {
            let end = self.scanned + at;
            if let Some(e) = line_event(&self.pending[start..end], api) {
                events.push(e);
            }
            start = end + 1;
            self.scanned = start;
        }
        self.pending.drain(..start);
        self.scanned = self.pending.len();
        if self.pending.len() > MAX_LINE {
            self.overlong = true;
            self.pending = Vec::new();
            self.scanned = 0;
            events.push(Event::Error(format!(
                "a stream line is longer than {} MiB without an end",
                MAX_LINE >> 20
            )));
        }
        events
    }

    /// Bytes after the last complete line (a stream that ends here was cut).
    pub fn leftover(&self) -> &[u8] {
        &self.pending
    }
}

/// The event one line makes: `data:` lines only (comments, `event:` and
/// `id:` fields and blank separators make none).
fn line_event(line: &[u8], api: Api) -> Option<Event> {
    let line = String::from_utf8_lossy(line);
    let line = line.trim_end_matches(['\n', '\r']);
    let payload = line.strip_prefix("data:")?.trim();
    if payload == "[DONE]" {
        Some(Event::Done)
    } else if payload.is_empty() {
        None
    } else {
        Some(parse_chunk(payload, api))
    }
}

fn parse_chunk(payload: &str, api: Api) -> Event {
    let v: serde_json::Value = match serde_json::from_str(payload) {
        Ok(v) => v,
        Err(e) => return Event::Error(format!("a stream chunk is not JSON ({e}): {payload:.120}")),
    };
    if let Some(err) = v.get("error") {
        return Event::Error(
            err.get("message")
                .and_then(serde_json::Value::as_str)
                .map_or_else(|| err.to_string(), str::to_string),
        );
    }
    let choice = &v["choices"][0];
    let text = match api {
        Api::Completions => choice["text"].as_str(),
        Api::Chat => choice["delta"]["content"].as_str(),
    };
    let usage = &v["usage"];
    Event::Chunk(Chunk {
        text: text.unwrap_or("").to_string(),
        finish_reason: choice["finish_reason"].as_str().map(str::to_string),
        prompt_tokens: usage["prompt_tokens"].as_u64(),
        completion_tokens: usage["completion_tokens"].as_u64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_parse_alike() {
        let stream = concat!(
            ": keep-alive\n\n",
            "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\r\n\r\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"length\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n",
            "data: [DONE]\n\n"
        );
        let whole = Parser::new().feed(stream.as_bytes(), Api::Chat);
        assert_eq!(whole.len(), 5);
        assert_eq!(whole.last(), Some(&Event::Done));
        let Event::Chunk(c) = &whole[2] else {
            panic!("{whole:?}")
        };
        assert_eq!(
            (c.text.as_str(), c.finish_reason.as_deref()),
            ("lo", Some("length"))
        );
        let Event::Chunk(u) = &whole[3] else {
            panic!("{whole:?}")
        };
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(5), Some(2)));
        // Byte by byte: the same events.
        let mut p = Parser::new();
        let mut bytewise = Vec::new();
        for b in stream.as_bytes() {
            bytewise.extend(p.feed(std::slice::from_ref(b), Api::Chat));
        }
        assert_eq!(bytewise, whole);
        assert!(p.leftover().is_empty());
        // Completions put the text in `text`; errors and bad JSON say so.
        let e = Parser::new().feed(
            b"data: {\"choices\":[{\"text\":\" x\"}]}\ndata: {\"error\":{\"message\":\"overloaded\"}}\ndata: {oops\n",
            Api::Completions,
        );
        assert_eq!(
            e[0],
            Event::Chunk(Chunk {
                text: " x".into(),
                ..Chunk::default()
            })
        );
        assert_eq!(e[1], Event::Error("overloaded".into()));
        assert!(matches!(&e[2], Event::Error(m) if m.contains("not JSON")));
    }

    #[test]
    fn an_endless_line_is_refused_without_rescanning_it() {
        let mut p = Parser::new();
        let piece = vec![b'x'; 64 << 10];
        let mut events = Vec::new();
        // 16 MiB in 64 KiB pieces, no newline: one error once past 1 MiB,
        // then nothing more is kept.
        for _ in 0..256 {
            events.extend(p.feed(&piece, Api::Chat));
        }
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(matches!(&events[0], Event::Error(m) if m.contains("longer than 1 MiB")));
        assert!(p.leftover().is_empty());
        // A line just under the cap is parsed.
        let mut p = Parser::new();
        let mut line = b"data: ".to_vec();
        line.extend(std::iter::repeat_n(b' ', MAX_LINE - 16));
        line.extend_from_slice(b"[DONE]\n");
        assert_eq!(p.feed(&line, Api::Chat), [Event::Done]);
    }
}
