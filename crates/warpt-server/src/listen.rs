//! Accepting connections with bounds, for `warpt serve` and the monitor's
//! Prometheus endpoint: at most [`Limits::connections`] at once (one more
//! is closed as soon as it is accepted), a request's head read within
//! [`Limits::header_read`], and a request answered within
//! [`Limits::request`]. A WebSocket keeps its connection past that: its
//! upgrade is answered at once and the socket lives on its own.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// The bounds of a server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once.
    pub connections: usize,
    /// Longest wait for a request's head (a client that sends half a
    /// header and waits is dropped).
    pub header_read: Duration,
    /// Longest time from a request's head to its answer, its body included.
    pub request: Duration,
}

/// What the Prometheus endpoint is held to, and `warpt serve` unless its
/// operator sets other bounds (`--max-connections`, `--header-timeout`,
/// `--request-timeout`).
pub const LIMITS: Limits = Limits {
    connections: 512,
    header_read: Duration::from_secs(30),
    request: Duration::from_secs(60),
};

/// Serves `router` on `listener` within `limits` until `shutdown`
/// completes; then no connection is accepted (those open end with the
/// runtime).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let request = limits.request;
    let router = router.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| async move {
            match tokio::time::timeout(request, next.run(req)).await {
                Ok(answer) => answer,
                Err(_) => too_slow(request),
            }
        },
    ));
    let slots = Arc::new(Semaphore::new(limits.connections));
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // A connection that failed before it was accepted (reset,
                // out of descriptors for a moment): take the next.
                Err(_) => continue,
            },
            () = &mut shutdown => return,
        };
        let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(limits.header_read);
            let _ = http
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades()
                .await;
        });
    }
}

fn too_slow(limit: Duration) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(serde_json::json!({
            "error": format!("the request was not answered within {} s", limit.as_secs()),
            "field": null,
        })),
    )
        .into_response()
}
