//! The server under test: where it is, which OpenAI API it speaks, which
//! model to ask for, the API key (from an environment variable the user
//! names; held only in memory and never printed) and how to reach it
//! ([`Transport`]: HTTP version, TLS roots).

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

use crate::error::Error;
use crate::transport::{HttpClient, HttpVersion, Transport};

/// The most bytes `/v1/models` may answer with.
const MAX_MODELS: usize = 1 << 20;

/// `e` and every error under it, joined with ": " (hyper's own message is
/// only "client error (Connect)"; the reason, such as an unknown
/// certificate issuer, is underneath).
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(inner) = next {
        let s = inner.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        next = inner.source();
    }
    out
}

/// The OpenAI API a request uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `/v1/completions`: a prompt, text back.
    Completions,
    /// `/v1/chat/completions`: messages, a message back.
    Chat,
}

impl Api {
    /// The API called `name` (`completions` or `chat`).
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "completions" => Ok(Api::Completions),
            "chat" => Ok(Api::Chat),
            other => Err(format!(
                "parameter 'api': '{other}' is not one of completions, chat"
            )),
        }
    }

    /// Its path under the endpoint.
    pub fn path(self) -> &'static str {
        match self {
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
        }
    }
}

/// An API key: kept out of every `Debug` and `Display`.
#[derive(Clone)]
pub struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The server under test.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `http(s)://host:port` and any path prefix, without a trailing slash.
    pub base: String,
    /// The API requests use.
    pub api: Api,
    /// The model asked for.
    pub model: String,
    key: Option<Secret>,
    /// Longest wait for a whole response.
    pub timeout: Duration,
    /// How requests reach it.
    pub transport: Transport,
}

impl Endpoint {
    /// The endpoint at `url` (`http(s)://host:port[/prefix]`; `/v1` at its end
    /// is dropped, since every path adds it), with the key in environment
    /// variable `key_env` when that is not empty.
    pub fn new(
        url: &str,
        api: Api,
        model: &str,
        key_env: &str,
        timeout: Duration,
    ) -> Result<Self, Error> {
        let base = url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        let tls = base.starts_with("https://");
        let Some(rest) = base
            .strip_prefix("http://")
            .or_else(|| base.strip_prefix("https://"))
        else {
            return Err(Error::BadEndpoint(format!(
                "'{url}' is not an http:// or https:// URL"
            )));
        };
        if rest.is_empty() || base.parse::<hyper::Uri>().is_err() {
            return Err(Error::BadEndpoint(format!("'{url}' is not a URL")));
        }
        // Paths are appended to it: a query or fragment would swallow them
        // (`.../internal?` turns `/v1/models` into a query string), and
        // credentials in it would travel to whatever the URL names.
        let authority = rest.split('/').next().unwrap_or(rest);
        for (bad, what) in [('?', "a query"), ('#', "a fragment")] {
            if rest.contains(bad) {
                return Err(Error::BadEndpoint(format!(
                    "'{url}' has {what} ('{bad}'); give http(s)://host:port[/prefix]"
                )));
            }
        }
        if authority.contains('@') {
            return Err(Error::BadEndpoint(
                "the URL carries user information ('user:password@'); give the key's variable in api_key_env instead".into(),
            ));
        }
        let key = if key_env.is_empty() {
            None
        } else {
            match std::env::var(key_env) {
                Ok(k) if !k.is_empty() => Some(Secret(k)),
                _ => return Err(Error::MissingKey(key_env.to_string())),
            }
        };
        Ok(Endpoint {
            base: base.to_string(),
            api,
            model: model.to_string(),
            key,
            timeout,
            transport: Transport::new(HttpVersion::Auto, tls, None)?,
        })
    }

    /// The same endpoint reached with HTTP `version`, trusting the
    /// certificates in `ca_file` too (an `https://` endpoint's).
    pub fn with_transport(
        mut self,
        version: HttpVersion,
        ca_file: Option<&Path>,
    ) -> Result<Self, Error> {
        let tls = self.base.starts_with("https://");
        self.transport = Transport::new(version, tls, ca_file)?;
        Ok(self)
    }

    /// A client for this endpoint's requests.
    pub fn client(&self) -> HttpClient {
        self.transport.client()
    }

    /// A request to `path` with `body` (a GET when it is `None`), the key
    /// attached.
    pub fn request(
        &self,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<hyper::Request<Full<Bytes>>, Error> {
        let uri = format!("{}{path}", self.base);
        let mut b = hyper::Request::builder()
            .uri(&uri)
            .method(if body.is_some() { "POST" } else { "GET" });
        if body.is_some() {
            b = b.header("content-type", "application/json");
        }
        if let Some(Secret(k)) = &self.key {
            b = b.header("authorization", format!("Bearer {k}"));
        }
        let bytes = body.map(|v| v.to_string()).unwrap_or_default();
        b.body(Full::new(Bytes::from(bytes)))
            .map_err(|e| Error::BadEndpoint(format!("{uri}: {e}")))
    }

    /// The first model `/v1/models` lists: what to ask for when the user
    /// named none. The whole exchange is bounded: the endpoint's time
    /// limit, and at most 1 MiB of answer.
    pub async fn first_model(&self, client: &HttpClient) -> Result<String, Error> {
        tokio::time::timeout(self.timeout, self.models(client))
            .await
            .map_err(|_| Error::Timeout(self.timeout.as_secs_f64()))?
    }

    async fn models(&self, client: &HttpClient) -> Result<String, Error> {
        let req = self.request("/v1/models", None)?;
        let res = client
            .request(req)
            .await
            .map_err(|e| Error::Http(format!("GET {}/v1/models: {}", self.base, chain(&e))))?;
        if res.status() != hyper::StatusCode::OK {
            return Err(Error::status(res.status()));
        }
        let body = http_body_util::Limited::new(res.into_body(), MAX_MODELS)
            .collect()
            .await
            .map_err(|e| {
                Error::Protocol(format!(
                    "/v1/models: {e} (at most {} MiB is read)",
                    MAX_MODELS >> 20
                ))
            })?
            .to_bytes();
        let v: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| Error::Protocol(format!("/v1/models is not JSON: {e}")))?;
        v["data"][0]["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| Error::Protocol("/v1/models lists no model".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_checked_and_keys_never_shown() {
        let t = Duration::from_secs(1);
        let e = Endpoint::new("http://127.0.0.1:8000/v1/", Api::Chat, "m", "", t).unwrap();
        assert_eq!(e.base, "http://127.0.0.1:8000");
        for bad in [
            "127.0.0.1:8000",
            "ftp://x",
            "http://",
            "https://",
            "http://127.0.0.1:8080/internal?",
            "http://127.0.0.1:8080/x#frag",
            "http://user:pw@127.0.0.1:8080",
        ] {
            let err = Endpoint::new(bad, Api::Chat, "m", "", t)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("parameter 'endpoint'"), "{bad}: {err}");
        }
        let err = Endpoint::new("http://h:1", Api::Chat, "m", "WARPT_TEST_NO_SUCH_KEY", t)
            .unwrap_err()
            .to_string();
        assert!(err.contains("WARPT_TEST_NO_SUCH_KEY is not set"), "{err}");
        // SAFETY: a test-only variable no other test reads.
        unsafe { std::env::set_var("WARPT_TEST_SERVING_KEY", "sk-very-secret") };
        let e = Endpoint::new("http://h:1", Api::Chat, "m", "WARPT_TEST_SERVING_KEY", t).unwrap();
        assert!(!format!("{e:?}").contains("very-secret"));
        let req = e.request("/v1/models", None).unwrap();
        assert_eq!(req.headers()["authorization"], "Bearer sk-very-secret");
        assert_eq!(Api::parse("chat").unwrap().path(), "/v1/chat/completions");
        assert!(Api::parse("embeddings").is_err());
    }
}
