//! Serving benchmarks from the client's side: an OpenAI-compatible HTTP
//! client that timestamps every streamed chunk, and the load that drives
//! it. What pepbench's `llm_serve` measures, and what the mlperf suite's
//! server scenarios can drive.
//!
//! - [`endpoint`]: the server, its API (completions or chat), the model, the
//!   key (read from the environment, never printed);
//! - [`error`]: what can go wrong talking to the server;
//! - [`transport`]: HTTP/1.1 or HTTP/2, TLS and the roots it trusts;
//! - [`sse`]: the server-sent events of a streamed response, chunk by chunk;
//! - [`request`]: one streamed request and what was seen of it, when;
//! - [`prompts`]: the user's prompts, JSONL or ShareGPT;
//! - [`timing`]: a request's TTFT, inter-token latencies, TPOT and token
//!   counts, and how the tokens were counted;
//! - [`scripted`]: a scripted server streaming on a known schedule (the truth
//!   a client is held to);
//! - [`trace`]: recorded traces (Mooncake's shape) to replay;
//! - [`load`]: arrival schedules (Poisson, constant, gamma), the closed-
//!   and open-loop and replay drivers, multi-turn conversations;
//! - [`search`]: the highest rate that still meets a test (the
//!   maximum-throughput search).

pub mod endpoint;
pub mod error;
pub mod load;
pub mod prompts;
pub mod request;
pub mod scripted;
pub mod search;
pub mod sse;
pub mod timing;
pub mod trace;
pub mod transport;

pub use endpoint::{Api, Endpoint};
pub use error::Error;
pub use transport::{HttpClient, HttpVersion};
