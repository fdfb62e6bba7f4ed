//! One streamed request: its body as the API wants it, and what came back
//! when, each chunk timestamped as its bytes arrived.

use std::time::Instant;

use bytes::Bytes;
use http_body_util::BodyExt;

use crate::endpoint::{Api, Endpoint, chain};
use crate::error::Error;
use crate::sse::{Event, Parser};
use crate::transport::HttpClient;

/// One earlier turn of a conversation: what the user said and what the
/// server answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// The user's message.
    pub user: String,
    /// The server's answer, as streamed.
    pub assistant: String,
}

/// What to ask for.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSpec {
    /// The earlier turns of its conversation, sent before the prompt
    /// (empty for a single-turn request).
    pub history: Vec<Exchange>,
    /// The prompt (the user message, for chat).
    pub prompt: String,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Ask the server to ignore end-of-sequence (vLLM, SGLang and
    /// llama.cpp honour it), so every request generates `max_tokens`.
    pub ignore_eos: bool,
    /// Ask the server to stream the prompt back first (`echo`, completions
    /// only), so the client can check it was read as sent; the echo is not
    /// counted as output.
    pub echo: bool,
}

impl RequestSpec {
    /// A single-turn request.
    pub fn new(prompt: impl Into<String>, max_tokens: u32, ignore_eos: bool) -> Self {
        RequestSpec {
            history: Vec::new(),
            prompt: prompt.into(),
            max_tokens,
            ignore_eos,
            echo: false,
        }
    }

    /// The text a completions request sends: earlier turns, each on its own
    /// paragraph, then the prompt.
    pub fn completion_text(&self) -> String {
        let mut text = String::new();
        for e in &self.history {
            text.push_str(&e.user);
            text.push_str("\n\n");
            text.push_str(&e.assistant);
            text.push_str("\n\n");
        }
        text.push_str(&self.prompt);
        text
    }

    /// The JSON body for `endpoint`: greedy, streamed, usage included in
    /// the stream. Earlier turns go first: as alternating messages (chat),
    /// or as the text so far, each turn on its own paragraph (completions).
    pub fn body(&self, endpoint: &Endpoint) -> serde_json::Value {
        let mut body = serde_json::json!({
            "model": endpoint.model,
            "max_tokens": self.max_tokens,
            "temperature": 0,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        match endpoint.api {
            Api::Completions => {
                body["prompt"] = self.completion_text().into();
                if self.echo {
                    body["echo"] = true.into();
                }
            }
            Api::Chat => {
                let mut messages = Vec::with_capacity(2 * self.history.len() + 1);
                for e in &self.history {
                    messages.push(serde_json::json!({"role": "user", "content": e.user}));
                    messages.push(serde_json::json!({"role": "assistant", "content": e.assistant}));
                }
                messages.push(serde_json::json!({"role": "user", "content": self.prompt}));
                body["messages"] = messages.into();
            }
        }
        if self.ignore_eos {
            body["ignore_eos"] = true.into();
        }
        body
    }
}

/// The most bytes one response may bring: generous for any stream of
/// tokens, and a bound on what a hostile endpoint can make the client keep.
pub const MAX_RESPONSE: usize = 64 << 20;

/// How a request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// The stream ended with `[DONE]` (or a finish reason and a clean close).
    Ok,
    /// The server refused or the connection failed.
    Failed(String),
    /// No complete answer within the time limit.
    TimedOut,
    /// The stream stopped without ending properly.
    CutOff(String),
}

impl Status {
    /// A short name for counts (`ok`, `failed`, `timed_out`, `cut_off`).
    pub fn kind(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed(_) => "failed",
            Status::TimedOut => "timed_out",
            Status::CutOff(_) => "cut_off",
        }
    }
}

/// What was seen of one request.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// When it was sent.
    pub sent: Instant,
    /// Each chunk with text: when its bytes arrived, and the text.
    pub chunks: Vec<(Instant, String)>,
    /// When the response ended (or failed).
    pub done: Instant,
    /// `usage.prompt_tokens`, when the server sent it.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`, when the server sent it.
    pub completion_tokens: Option<u64>,
    /// The last finish reason seen.
    pub finish_reason: Option<String>,
    /// Whether the server streamed the prompt back exactly, when asked to
    /// (`None`: not asked).
    pub echo: Option<bool>,
    /// The HTTP version the response came in (`HTTP/1.1`, `HTTP/2.0`),
    /// once it came.
    pub http: Option<hyper::Version>,
    /// How it ended.
    pub status: Status,
}

impl Outcome {
    /// The streamed text, every chunk's in order.
    pub fn text(&self) -> String {
        self.chunks.iter().map(|(_, t)| t.as_str()).collect()
    }
}

/// Sends `spec` to `endpoint` and reads the stream to its end.
pub async fn send(client: &HttpClient, endpoint: &Endpoint, spec: &RequestSpec) -> Outcome {
    let sent = Instant::now();
    let mut out = Outcome {
        sent,
        chunks: Vec::new(),
        done: sent,
        prompt_tokens: None,
        completion_tokens: None,
        finish_reason: None,
        echo: None,
        http: None,
        status: Status::Ok,
    };
    let status = match tokio::time::timeout(
        endpoint.timeout,
        stream(client, endpoint, spec, &mut out),
    )
    .await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => Status::Failed(e.to_string()),
        Err(_) => Status::TimedOut,
    };
    out.status = status;
    out.done = Instant::now();
    out
}

async fn stream(
    client: &HttpClient,
    endpoint: &Endpoint,
    spec: &RequestSpec,
    out: &mut Outcome,
) -> Result<Status, Error> {
    let req = endpoint.request(endpoint.api.path(), Some(&spec.body(endpoint)))?;
    let res = client
        .request(req)
        .await
        .map_err(|e| Error::Http(format!("{}: {}", endpoint.base, chain(&e))))?;
    out.http = Some(res.version());
    let status = res.status();
    let mut body = res.into_body();
    if status != hyper::StatusCode::OK {
        // The body is never read: a server's error page (or what an
        // address that is not the server answers) stays there.
        return Err(Error::status(status));
    }
    let mut parser = Parser::new();
    let mut done = false;
    // What is still to come back of the prompt, when it was asked for.
    let mut echo = (spec.echo && endpoint.api == Api::Completions).then(|| Echo {
        left: spec.completion_text(),
        matched: true,
    });
    // The bytes are only timed while they arrive; parsing waits for the
    // end of the stream, so a client holding hundreds of streams spends as
    // little as it can between a chunk's arrival and its timestamp.
    // Bounded as they arrive: the response's bytes in all, and the line
    // being received (a newline search over each frame once).
    let mut arrived: Vec<(Instant, Bytes)> = Vec::new();
    let mut broke = None;
    let (mut total, mut line) = (0usize, 0usize);
    while let Some(frame) = body.frame().await {
        let at = Instant::now();
        match frame {
            Ok(f) => {
                if let Ok(data) = f.into_data() {
                    total += data.len();
                    line = match data.iter().rposition(|&b| b == b'\n') {
                        Some(i) => data.len() - i - 1,
                        None => line + data.len(),
                    };
                    if total > MAX_RESPONSE {
                        return Err(Error::Protocol(format!(
                            "the response passed {} MiB; a stream of tokens is far smaller",
                            MAX_RESPONSE >> 20
                        )));
                    }
                    if line > crate::sse::MAX_LINE {
                        return Err(Error::Protocol(format!(
                            "a stream line is longer than {} MiB without an end",
                            crate::sse::MAX_LINE >> 20
                        )));
                    }
                    arrived.push((at, data));
                }
            }
            Err(e) => {
                broke = Some(format!("the stream broke: {}", chain(&e)));
                break;
            }
        }
    }
    let deadline = out.sent + endpoint.timeout;
    for (at, data) in &arrived {
        if Instant::now() > deadline {
            return Err(Error::Timeout(endpoint.timeout.as_secs_f64()));
        }
        for event in parser.feed(data, endpoint.api) {
            match event {
                Event::Done => done = true,
                Event::Error(e) => return Err(Error::Protocol(e)),
                Event::Chunk(c) => {
                    let text = match echo.as_mut() {
                        Some(e) => e.take(c.text),
                        None => c.text,
                    };
                    if !text.is_empty() {
                        out.chunks.push((*at, text));
                    }
                    if c.finish_reason.is_some() {
                        out.finish_reason = c.finish_reason;
                    }
                    out.prompt_tokens = c.prompt_tokens.or(out.prompt_tokens);
                    out.completion_tokens = c.completion_tokens.or(out.completion_tokens);
                }
            }
        }
    }
    if let Some(why) = broke {
        return Ok(Status::CutOff(why));
    }
    out.echo = echo.map(|e| e.matched && e.left.is_empty());
    Ok(
        if done || (out.finish_reason.is_some() && parser.leftover().is_empty()) {
            Status::Ok
        } else {
            Status::CutOff("the stream ended without [DONE] or a finish reason".into())
        },
    )
}

/// The prompt coming back at the start of an echoed stream.
struct Echo {
    /// Not yet seen.
    left: String,
    /// Everything seen so far matched.
    matched: bool,
}

impl Echo {
    /// Takes what of `text` is the echo; returns the rest (output).
    fn take(&mut self, text: String) -> String {
        if self.left.is_empty() || !self.matched {
            return text;
        }
        if let Some(rest) = text.strip_prefix(self.left.as_str()) {
            let rest = rest.to_string();
            self.left.clear();
            rest
        } else if self.left.starts_with(text.as_str()) {
            self.left.drain(..text.len());
            String::new()
        } else {
            self.matched = false;
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_echo_is_taken_across_chunks_and_a_wrong_one_is_caught() {
        let mut e = Echo {
            left: "the cat sat".into(),
            matched: true,
        };
        assert_eq!(e.take("the c".into()), "");
        assert_eq!(e.take("at sat on".into()), " on");
        assert_eq!(e.take(" the mat".into()), " the mat");
        assert!(e.matched && e.left.is_empty());
        let mut e = Echo {
            left: "the cat".into(),
            matched: true,
        };
        assert_eq!(e.take("a dog".into()), "a dog");
        assert!(!e.matched);
        assert_eq!(e.take("the cat".into()), "the cat");
    }
}
