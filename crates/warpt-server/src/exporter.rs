//! `warpt monitor --prometheus`: the latest telemetry sample in the
//! Prometheus text exposition format, served on axum at every path.

use std::sync::{Arc, Mutex};

use warpt_export::formats::Prometheus;
use warpt_model::TelemetrySample;

/// Serves `latest` (in [`Prometheus`]'s format) on `listener` from a
/// background thread, until the process ends.
pub fn serve_prometheus(
    listener: std::net::TcpListener,
    latest: Arc<Mutex<Option<TelemetrySample>>>,
) -> std::io::Result<()> {
    serve_within(listener, latest, crate::listen::LIMITS)
}

/// [`serve_prometheus`] held to `limits`.
fn serve_within(
    listener: std::net::TcpListener,
    latest: Arc<Mutex<Option<TelemetrySample>>>,
    limits: crate::listen::Limits,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    // Time as well as I/O: `listen::serve` bounds each request and head
    // with tokio's timers (without them every connection panicked: reset).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            let app = axum::Router::new().fallback(move || {
                let latest = Arc::clone(&latest);
                async move {
                    let body = latest
                        .lock()
                        .ok()
                        .and_then(|l| l.as_ref().map(|s| Prometheus.text(s)))
                        .unwrap_or_default();
                    (
                        [(axum::http::header::CONTENT_TYPE, Prometheus::CONTENT_TYPE)],
                        body,
                    )
                }
            });
            crate::listen::serve(listener, app, limits, std::future::pending()).await;
        });
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    /// Reads until the server closes `s` (or `wait` passes): whether it
    /// closed, and what it sent.
    fn closed_within(mut s: TcpStream, wait: Duration) -> (bool, String) {
        s.set_read_timeout(Some(wait)).expect("timeout");
        let mut out = Vec::new();
        let closed = s.read_to_end(&mut out).is_ok();
        (closed, String::from_utf8_lossy(&out).into_owned())
    }

    fn get(addr: std::net::SocketAddr) -> String {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")
            .expect("write");
        closed_within(s, Duration::from_secs(30)).1
    }

    /// The exporter's own runtime must drive the limits' timers: without
    /// them every connection was reset.
    #[test]
    fn the_endpoint_answers_within_its_limits() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let sample = TelemetrySample {
            total_memory_bytes: 1 << 30,
            ..TelemetrySample::default()
        };
        let limits = crate::listen::Limits {
            connections: 2,
            header_read: Duration::from_secs(2),
            request: Duration::from_secs(5),
        };
        serve_within(listener, Arc::new(Mutex::new(Some(sample))), limits).expect("serve");

        let answer = get(addr);
        assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
        assert!(
            answer.contains("warpt_memory_total_bytes 1073741824"),
            "{answer}"
        );

        // Half a head, then silence: dropped after the header-read limit
        // while another client is answered.
        let mut half = TcpStream::connect(addr).expect("connect");
        half.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            .expect("write");
        assert!(get(addr).starts_with("HTTP/1.0 200"));
        let (closed, sent) = closed_within(half, Duration::from_secs(30));
        assert!(closed && sent.is_empty(), "half a head: {sent:?}");

        // Over the connection cap: closed unanswered; answered again once
        // the held ones go.
        let held: Vec<TcpStream> = (0..2)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        std::thread::sleep(Duration::from_millis(100));
        let (closed, sent) = closed_within(
            TcpStream::connect(addr).expect("connect"),
            Duration::from_secs(30),
        );
        assert!(closed && sent.is_empty(), "over the cap: {sent:?}");
        drop(held);
        std::thread::sleep(Duration::from_millis(100));
        assert!(get(addr).starts_with("HTTP/1.0 200"));
    }
}
