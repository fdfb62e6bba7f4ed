//! What a scripted completion writes, and when: the response head at
//! once, the prompt back at once when `echo` asked for it, then each chunk
//! when its last token is due, then the usage and `[DONE]`.

use std::time::Instant;

use super::Script;

/// One write of a streamed response.
#[derive(Debug)]
pub(super) struct Planned {
    /// When it is due.
    pub(super) due: Instant,
    /// The bytes (one HTTP chunk: size line, SSE event, CRLF).
    pub(super) bytes: Vec<u8>,
    /// The tokens it carries (0: not a token chunk).
    pub(super) tokens: usize,
}

/// An HTTP chunk carrying the SSE event `data: {json}`: one write, so
/// each chunk leaves in one segment as a server's would.
fn event(json: &str) -> Vec<u8> {
    let data_len = json.len() + "data: \n\n".len();
    format!("{data_len:x}\r\ndata: {json}\n\n\r\n").into_bytes()
}

/// The writes answering the request `body`, its schedule starting at
/// `start`.
pub(super) fn plan(body: &[u8], script: Script, start: Instant) -> Vec<Planned> {
    let req: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let n = req["max_tokens"].as_u64().unwrap_or(16).max(1) as usize;
    let chat = req.get("messages").is_some();
    let now = |bytes: Vec<u8>| Planned {
        due: start,
        bytes,
        tokens: 0,
    };
    let mut out = vec![now(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec(),
    )];
    // Chunks shaped as OpenAI's (id, object, created, model), which some
    // clients check; formatted from a template, not built as JSON values.
    let object = if chat {
        "chat.completion.chunk"
    } else {
        "text_completion"
    };
    let model = serde_json::to_string(req["model"].as_str().unwrap_or("scripted"))
        .unwrap_or_else(|_| "\"scripted\"".into());
    let head = format!(
        r#"{{"id":"cmpl-scripted","object":"{object}","created":0,"model":{model},"choices":"#
    );
    let piece = |text: &str, finish: Option<&str>| {
        let text = serde_json::to_string(text).unwrap_or_default();
        let finish = finish.map_or("null".to_string(), |f| format!("\"{f}\""));
        event(&if chat {
            format!(
                r#"{head}[{{"index":0,"delta":{{"role":"assistant","content":{text}}},"finish_reason":{finish}}}]}}"#
            )
        } else {
            format!(
                r#"{head}[{{"index":0,"text":{text},"logprobs":null,"finish_reason":{finish}}}]}}"#
            )
        })
    };
    // `echo` (completions): the prompt comes back first, at once, as
    // vLLM streams it.
    if !chat && req["echo"].as_bool() == Some(true) {
        out.push(now(piece(req["prompt"].as_str().unwrap_or(""), None)));
    }
    let (mut sent, mut chunk) = (0usize, 0usize);
    let mut due = start;
    while sent < n {
        chunk += 1;
        // The first chunk is one token; every bundle_every-th later one three.
        let k = if chunk > 1 && script.bundle_every > 0 && chunk % script.bundle_every == 0 {
            3.min(n - sent)
        } else {
            1
        };
        let last_token = sent + k - 1;
        due = start + script.first + script.every * last_token as u32;
        sent += k;
        out.push(Planned {
            due,
            bytes: piece(&" tok".repeat(k), (sent == n).then_some("length")),
            tokens: k,
        });
    }
    let mut tail = event(&format!(
        r#"{head}[],"usage":{{"prompt_tokens":8,"completion_tokens":{n},"total_tokens":{}}}}}"#,
        8 + n
    ));
    let done = "data: [DONE]\n\n";
    tail.extend_from_slice(format!("{:x}\r\n{done}\r\n0\r\n\r\n", done.len()).as_bytes());
    out.push(Planned {
        due,
        bytes: tail,
        tokens: 0,
    });
    out
}
