//! The client over TLS and HTTP/2, against hyper's own server behind
//! rustls with a certificate made for the test: HTTP/2 when the server
//! offers it by ALPN, HTTP/1.1 when asked, h2c with prior knowledge on
//! plain HTTP, the user's CA file trusted, an unknown issuer refused and
//! named.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::convert::Infallible;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use warpt_serving::load::{Load, Plan, drive};
use warpt_serving::request::{RequestSpec, Status};
use warpt_serving::{Api, Endpoint, HttpVersion};

/// A test server: its port, the certificate's PEM (when TLS), and the HTTP
/// version of every request it answered.
struct Server {
    port: u16,
    versions: Arc<Mutex<Vec<Version>>>,
    _runtime: tokio::runtime::Runtime,
}

/// One completion streamed as five one-token chunks 2 ms apart, usage and
/// `[DONE]`, whatever was asked.
async fn answer(
    req: Request<Incoming>,
    versions: Arc<Mutex<Vec<Version>>>,
) -> Result<
    Response<StreamBody<impl futures_util::Stream<Item = Result<Frame<Bytes>, Infallible>>>>,
    Infallible,
> {
    versions.lock().unwrap().push(req.version());
    let _ = req.into_body().collect().await;
    let events = (0..7).map(|i| match i {
        0..5 => format!(
            r#"data: {{"choices":[{{"index":0,"text":" tok","finish_reason":{}}}]}}"#,
            if i == 4 { r#""length""# } else { "null" }
        ),
        5 => r#"data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5}}"#.into(),
        _ => "data: [DONE]".into(),
    });
    let stream = futures_util::stream::unfold(events, |mut events| async move {
        let e = events.next()?;
        tokio::time::sleep(Duration::from_millis(2)).await;
        Some((Ok(Frame::data(Bytes::from(format!("{e}\n\n")))), events))
    });
    Ok(Response::builder()
        .header("content-type", "text/event-stream")
        .body(StreamBody::new(stream))
        .unwrap())
}

/// Starts a server: TLS with `cert` (its DER and key) offering h2 and
/// http/1.1 by ALPN, else plain HTTP/1.1 and h2c.
fn start(cert: Option<(CertificateDer<'static>, PrivateKeyDer<'static>)>) -> Server {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = cert.map(|(der, key)| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![der], key)
            .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    });
    let versions = Arc::new(Mutex::new(Vec::new()));
    let seen = versions.clone();
    runtime.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let (acceptor, seen) = (acceptor.clone(), seen.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |r| answer(r, seen.clone()));
                let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                let _ = match acceptor {
                    Some(a) => match a.accept(tcp).await {
                        Ok(tls) => builder.serve_connection(TokioIo::new(tls), service).await,
                        // A client that does not trust the certificate
                        // hangs up in the handshake.
                        Err(_) => return,
                    },
                    None => builder.serve_connection(TokioIo::new(tcp), service).await,
                };
            });
        }
    });
    Server {
        port,
        versions,
        _runtime: runtime,
    }
}

/// A certificate for `localhost`, its PEM written to `ca` (it is its own
/// issuer).
fn certificate(ca: &Path) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(ca, made.cert.pem()).unwrap();
    let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
    (made.cert.der().clone(), PrivateKeyDer::Pkcs8(key))
}

/// Eight requests, four at a time: their outcomes.
fn run(endpoint: &Endpoint) -> Vec<warpt_serving::request::Outcome> {
    let plan = Plan {
        load: Load::Closed { concurrency: 4 },
        specs: (0..8)
            .map(|i| RequestSpec::new(format!("q{i}"), 5, true))
            .collect(),
        turns: 1,
        seed: 1,
        warmup: 0,
    };
    drive(endpoint, &plan, 2)
        .unwrap()
        .requests
        .into_iter()
        .map(|s| s.outcome)
        .collect()
}

fn endpoint(url: &str) -> Endpoint {
    Endpoint::new(url, Api::Completions, "m", "", Duration::from_secs(10)).unwrap()
}

/// Every request streamed its five tokens in `version`, and the server saw
/// that version too.
fn assert_streamed(
    outcomes: &[warpt_serving::request::Outcome],
    server: &Server,
    version: Version,
) {
    assert_eq!(outcomes.len(), 8);
    for o in outcomes {
        assert_eq!(o.status, Status::Ok, "{:?}", o.status);
        assert_eq!(o.http, Some(version));
        assert_eq!(o.chunks.len(), 5);
        assert_eq!(o.completion_tokens, Some(5));
        // Five chunks 2 ms apart: the first after 2 ms, the last after 10.
        let last = o.chunks[4].0.duration_since(o.sent);
        assert!(last >= Duration::from_millis(10), "{last:?}");
    }
    let seen = std::mem::take(&mut *server.versions.lock().unwrap());
    assert_eq!(seen.len(), 8);
    assert!(seen.iter().all(|v| *v == version), "{seen:?}");
}

#[test]
fn https_speaks_http2_when_offered_and_http1_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    let server = start(Some(certificate(&ca)));
    let url = format!("https://localhost:{}/v1", server.port);
    let h2 = endpoint(&url)
        .with_transport(HttpVersion::Auto, Some(&ca))
        .unwrap();
    assert_streamed(&run(&h2), &server, Version::HTTP_2);
    let h1 = endpoint(&url)
        .with_transport(HttpVersion::Http1, Some(&ca))
        .unwrap();
    assert_streamed(&run(&h1), &server, Version::HTTP_11);
}

#[test]
fn plain_http_is_http1_unless_http2_is_asked_for() {
    let server = start(None);
    let url = format!("http://127.0.0.1:{}", server.port);
    assert_streamed(&run(&endpoint(&url)), &server, Version::HTTP_11);
    let h2c = endpoint(&url)
        .with_transport(HttpVersion::Http2, None)
        .unwrap();
    assert_streamed(&run(&h2c), &server, Version::HTTP_2);
}

#[test]
fn an_unknown_issuer_is_refused_and_named_and_bad_ca_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    let server = start(Some(certificate(&ca)));
    // The system's roots alone do not know the test's certificate.
    let outcomes = run(&endpoint(&format!("https://localhost:{}", server.port)));
    for o in outcomes {
        let Status::Failed(why) = &o.status else {
            panic!("{:?}", o.status)
        };
        assert!(why.contains("UnknownIssuer"), "{why}");
        assert!(o.chunks.is_empty());
    }
    assert!(server.versions.lock().unwrap().is_empty());
    let https = endpoint("https://localhost:1");
    let missing = dir.path().join("no-such.pem");
    let err = https
        .clone()
        .with_transport(HttpVersion::Auto, Some(&missing))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("parameter 'ca_file'") && err.contains("no-such.pem"),
        "{err}"
    );
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let err = https
        .with_transport(HttpVersion::Auto, Some(&empty))
        .unwrap_err()
        .to_string();
    assert!(err.contains("no PEM certificate"), "{err}");
    let err = endpoint("http://127.0.0.1:1")
        .with_transport(HttpVersion::Auto, Some(&ca))
        .unwrap_err()
        .to_string();
    assert!(err.contains("needs an https:// endpoint"), "{err}");
    assert_eq!(HttpVersion::parse("2").unwrap(), HttpVersion::Http2);
    assert!(
        HttpVersion::parse("3")
            .unwrap_err()
            .contains("http_version")
    );
}
