//! What every request passes before its handler, against what a web page
//! in the user's browser could try:
//!
//! - DNS rebinding: a page on `evil.example` whose name now points at
//!   127.0.0.1 reaches the server with `Host: evil.example`. Only IP
//!   addresses, `localhost` and names given by `--allow-host` are answered;
//!   anything else gets 421.
//! - Cross-site requests and WebSockets: a request whose `Origin` is not
//!   the server's own (the `Host` it was sent to) gets 403.
//! - `--token-for-reads`: every route but the dashboard's static files
//!   needs the token (a WebSocket may carry it as `?token=`, since a
//!   browser cannot set its headers).
//! - Headers: `nosniff` on every answer; an HTML answer that sets no
//!   policy of its own gets one that runs no script and cannot be framed.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// The policy of HTML answers that set none (the HTML report): inline
/// styles and inline SVG, nothing else; never in a frame.
const HTML_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
                        base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Checks `Host`, `Origin` and (with `--token-for-reads`) the token, then
/// adds the security headers to the answer.
pub async fn guard(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if !host_allowed(&host, &state.access.allow_hosts) {
        return ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "this server does not answer to the host name '{host}'; use its IP address or localhost, \
                 or start warpt serve with --allow-host {}",
                strip_port(&host)
            ),
        )
        .into_response();
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("null");
        if !same_origin(origin, &host) {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                format!("requests from another site ({origin}) are refused"),
            )
            .into_response();
        }
    }
    let path = request.uri().path();
    let public = path == "/" || path.starts_with("/assets/");
    if state.access.token_for_reads
        && !public
        && crate::state::authorize(&state, headers).is_err()
        && !query_token(&state, request.uri().query())
    {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "this server needs 'Authorization: Bearer <token>' on every request (--token-for-reads)",
        )
        .into_response();
    }
    let mut response = next.run(request).await;
    secure(response.headers_mut());
    response
}

/// Adds `nosniff`, and a policy to HTML that has none.
fn secure(headers: &mut HeaderMap) {
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let html = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/html"));
    if html {
        if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
            headers.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(HTML_CSP),
            );
        }
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
}

/// Whether `?token=` carries the server's token.
fn query_token(state: &AppState, query: Option<&str>) -> bool {
    query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter_map(|kv| kv.strip_prefix("token="))
        .any(|t| state.token.admits(Some(&format!("Bearer {t}"))))
}

/// The host of a `Host` header, without its port.
fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    match host.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    }
}

/// Whether a request sent to `host` is one the server answers: an IP
/// address (a rebinding page always uses a name), `localhost`, or a name
/// the operator allowed.
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let name = strip_port(host).to_ascii_lowercase();
    if name.is_empty() {
        return false;
    }
    name.parse::<std::net::IpAddr>().is_ok() || name == "localhost" || allowed.contains(&name)
}

/// Whether `origin` (`scheme://host[:port]`) is the site at `host`.
fn same_origin(origin: &str, host: &str) -> bool {
    origin
        .split_once("://")
        .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_addresses_localhost_or_allowed_names() {
        let allowed = vec!["bench.example.org".to_string()];
        for ok in [
            "127.0.0.1:8321",
            "127.0.0.1",
            "[::1]:8321",
            "localhost:8321",
            "LOCALHOST",
            "10.0.0.5:80",
            "bench.example.org:8321",
        ] {
            assert!(host_allowed(ok, &allowed), "{ok}");
        }
        for bad in [
            "evil.example:8321",
            "",
            "127.0.0.1.evil.example",
            "localhost.evil",
        ] {
            assert!(!host_allowed(bad, &allowed), "{bad}");
        }
    }

    #[test]
    fn origins_must_be_the_server_itself() {
        assert!(same_origin("http://127.0.0.1:8321", "127.0.0.1:8321"));
        assert!(!same_origin("https://evil.example", "127.0.0.1:8321"));
        assert!(!same_origin("null", "127.0.0.1:8321"));
        assert!(!same_origin("http://127.0.0.1:9999", "127.0.0.1:8321"));
    }
}
