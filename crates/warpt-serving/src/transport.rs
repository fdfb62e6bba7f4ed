//! How requests reach the server: HTTP/1.1 keep-alive on `http://`; on
//! `https://`, TLS (rustls on ring; the system's roots plus the user's
//! `ca_file`) with HTTP/2 when the server offers it by ALPN, else
//! HTTP/1.1. `http_version=2` asks for HTTP/2 only: by ALPN on `https://`,
//! with prior knowledge (h2c) on `http://`; `1.1` keeps to HTTP/1.1.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{ClientConfig, RootCertStore};

use crate::error::Error;

/// The HTTP client every request of a run shares: pooled keep-alive
/// connections (one multiplexed connection per server on HTTP/2), Nagle
/// off, TLS where the URL says `https://`.
pub type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Which HTTP the client speaks (`http_version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.1 on `http://`; on `https://` HTTP/2 when the server offers
    /// it, else HTTP/1.1.
    Auto,
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 only (h2c with prior knowledge on `http://`).
    Http2,
}

impl HttpVersion {
    /// The version called `name` (`auto`, `1.1` or `2`).
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "auto" | "" => Ok(HttpVersion::Auto),
            "1.1" => Ok(HttpVersion::Http1),
            "2" => Ok(HttpVersion::Http2),
            other => Err(format!(
                "parameter 'http_version': '{other}' is not one of auto, 1.1, 2"
            )),
        }
    }
}

/// The connection settings of an endpoint: the HTTP version asked for and
/// the TLS configuration (the roots it trusts).
#[derive(Clone)]
pub struct Transport {
    /// Which HTTP to speak.
    pub version: HttpVersion,
    /// The extra root certificates' file, when one was given.
    pub ca_file: Option<PathBuf>,
    tls: Arc<ClientConfig>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("version", &self.version)
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

impl Transport {
    /// Settings for `version`, trusting the system's roots when `tls` (an
    /// `https://` endpoint) and the PEM certificates in `ca_file`.
    pub fn new(version: HttpVersion, tls: bool, ca_file: Option<&Path>) -> Result<Self, Error> {
        let mut roots = RootCertStore::empty();
        if tls {
            // Unreadable system certificates are skipped: the user's
            // `ca_file` may be all that is needed.
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
        if let Some(file) = ca_file {
            if !tls {
                return Err(Error::BadParam(
                    "ca_file",
                    format!("{}: a CA file needs an https:// endpoint", file.display()),
                ));
            }
            let certs = CertificateDer::pem_file_iter(file)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| Error::BadParam("ca_file", format!("{}: {e}", file.display())))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(Error::BadParam(
                    "ca_file",
                    format!("{}: no PEM certificate in it", file.display()),
                ));
            }
        }
        Ok(Transport {
            version,
            ca_file: ca_file.map(Path::to_path_buf),
            tls: Arc::new(config(roots)?),
        })
    }

    /// A client with these settings.
    pub fn client(&self) -> HttpClient {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        // The TLS layer sees https:// before this connector does.
        http.enforce_http(false);
        let builder = HttpsConnectorBuilder::new()
            .with_tls_config((*self.tls).clone())
            .https_or_http();
        let connector = match self.version {
            HttpVersion::Auto => builder.enable_http1().enable_http2().wrap_connector(http),
            HttpVersion::Http1 => builder.enable_http1().wrap_connector(http),
            HttpVersion::Http2 => builder.enable_http2().wrap_connector(http),
        };
        Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(usize::MAX)
            .http2_only(self.version == HttpVersion::Http2)
            .build(connector)
    }
}

/// rustls on ring (the provider warpt-store's TLS uses too) with the
/// protocol versions it deems safe; ALPN is left to the connector.
fn config(roots: RootCertStore) -> Result<ClientConfig, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Http(format!("TLS setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
