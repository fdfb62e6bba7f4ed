//! What can go wrong talking to an OpenAI-compatible server, for the
//! transport and the endpoint alike.

/// What can go wrong talking to the server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The endpoint is not an `http(s)://host:port[/prefix]` URL.
    #[error("parameter 'endpoint': {0}")]
    BadEndpoint(String),
    /// Another connection parameter (named) is wrong.
    #[error("parameter '{0}': {1}")]
    BadParam(&'static str, String),
    /// The API key's variable is unset or empty.
    #[error("parameter 'api_key_env': the environment variable {0} is not set")]
    MissingKey(String),
    /// The connection failed or broke.
    #[error("{0}")]
    Http(String),
    /// The server answered with an error status (its body is never read
    /// or kept: only the status and its standard reason).
    #[error("HTTP {0} {1}")]
    Status(u16, &'static str),
    /// No answer within the time limit.
    #[error("no response within {0:.1} s")]
    Timeout(f64),
    /// The answer was not what the API promises.
    #[error("unexpected response: {0}")]
    Protocol(String),
}

impl Error {
    /// An error status as [`Error::Status`].
    pub fn status(s: hyper::StatusCode) -> Self {
        Error::Status(
            s.as_u16(),
            s.canonical_reason().unwrap_or("(no standard reason)"),
        )
    }
}
