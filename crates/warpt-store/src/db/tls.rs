//! PostgreSQL over TLS, as libpq's `sslmode` and `sslrootcert` say.
//!
//! tokio-postgres knows `sslmode=disable|prefer|require` and leaves the
//! certificate checks to the connector; this module reads both keys from
//! the store URL's query, hands tokio-postgres what it understands and
//! builds a rustls connector (on ring: no OpenSSL, no cmake) that checks
//! what libpq would:
//!
//! | sslmode | encrypted | certificate checked |
//! |---|---|---|
//! | `disable` | never | — |
//! | `prefer` (default) | when the server offers it | no (as libpq, unless `sslrootcert` is given) |
//! | `require` | always | no, unless `sslrootcert` is given (then as `verify-ca`, as libpq) |
//! | `verify-ca` | always | chain to `sslrootcert` |
//! | `verify-full` | always | chain to `sslrootcert` and the host name |
//!
//! `sslrootcert` is a PEM file, or `system` for the operating system's
//! store; `verify-ca` and `verify-full` without it read
//! `~/.postgresql/root.crt`, as libpq does.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::StoreError;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP.
    Disable,
    /// TLS when the server offers it.
    Prefer,
    /// TLS or no connection.
    Require,
    /// TLS with the chain checked against the root certificates.
    VerifyCa,
    /// [`SslMode::VerifyCa`] and the certificate names the host.
    VerifyFull,
}

/// Where the trusted root certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// A PEM file.
    File(PathBuf),
    /// The operating system's store (`sslrootcert=system`).
    System,
}

/// What the store URL asked of TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// `sslmode` (default `prefer`).
    pub mode: SslMode,
    /// `sslrootcert`, if given.
    pub roots: Option<Roots>,
}

/// Splits `sslmode` and `sslrootcert` out of a store URL: the URL as
/// tokio-postgres should read it (`verify-*` become `require`,
/// `sslrootcert` is removed) and the settings.
pub fn split(url: &str) -> Result<(String, TlsSettings), StoreError> {
    let bad = |message: String| StoreError::Postgres {
        message,
        code: None,
    };
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, q),
        None => (url, ""),
    };
    let mut settings = TlsSettings {
        mode: SslMode::Prefer,
        roots: None,
    };
    let mut kept = Vec::new();
    for field in query.split('&').filter(|f| !f.is_empty()) {
        let (key, value) = field.split_once('=').unwrap_or((field, ""));
        match key {
            "sslmode" => {
                settings.mode = match value {
                    "disable" => SslMode::Disable,
                    "allow" | "prefer" => SslMode::Prefer,
                    "require" => SslMode::Require,
                    "verify-ca" => SslMode::VerifyCa,
                    "verify-full" => SslMode::VerifyFull,
                    other => {
                        return Err(bad(format!(
                            "sslmode={other}: give disable, prefer, require, verify-ca or verify-full"
                        )));
                    }
                };
                let passed = match settings.mode {
                    SslMode::Disable => "disable",
                    SslMode::Prefer => "prefer",
                    _ => "require",
                };
                kept.push(format!("sslmode={passed}"));
            }
            "sslrootcert" => {
                let value = percent_decode(value);
                settings.roots = Some(if value == "system" {
                    Roots::System
                } else {
                    Roots::File(PathBuf::from(value))
                });
            }
            _ => kept.push(field.to_string()),
        }
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, settings))
}

/// `%XX` escapes decoded (a path in a URL query).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The rustls connector for `settings`.
pub fn connector(settings: &TlsSettings) -> Result<MakeRustlsConnect, StoreError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(format!("TLS setup: {e}")))?;
    // libpq: a root certificate given with `require` means `verify-ca`.
    let mode = match (settings.mode, &settings.roots) {
        (SslMode::Require, Some(_)) => SslMode::VerifyCa,
        (m, _) => m,
    };
    let verifier: Arc<dyn ServerCertVerifier> = match mode {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => Arc::new(Lenient {
            provider,
            chain: None,
        }),
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let roots = Arc::new(load_roots(settings.roots.as_ref())?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| tls_error(format!("sslrootcert: {e}")))?;
            if mode == SslMode::VerifyFull {
                webpki
            } else {
                Arc::new(Lenient {
                    provider,
                    chain: Some(webpki),
                })
            }
        }
    };
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

fn tls_error(message: String) -> StoreError {
    StoreError::Postgres {
        message,
        code: None,
    }
}

/// The trusted roots: `sslrootcert`'s file, the system's, or libpq's
/// default `~/.postgresql/root.crt`.
fn load_roots(roots: Option<&Roots>) -> Result<RootCertStore, StoreError> {
    let mut store = RootCertStore::empty();
    let file = match roots {
        Some(Roots::System) => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(tls_error(
                    "sslrootcert=system: the operating system's store has no certificate".into(),
                ));
            }
            return Ok(store);
        }
        Some(Roots::File(p)) => p.clone(),
        None => std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(".postgresql/root.crt"))
            .ok_or_else(|| {
                tls_error(
                    "verify-ca/verify-full need sslrootcert=FILE (no $HOME for the default)".into(),
                )
            })?,
    };
    let certs = CertificateDer::pem_file_iter(&file)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| {
            tls_error(format!(
                "sslrootcert {}: {e}; give sslrootcert=FILE (PEM) or sslrootcert=system",
                file.display()
            ))
        })?;
    let (added, _) = store.add_parsable_certificates(certs);
    if added == 0 {
        return Err(tls_error(format!(
            "sslrootcert {}: no certificate in it",
            file.display()
        )));
    }
    Ok(store)
}

/// libpq's checks short of `verify-full`: `chain` set (`verify-ca`), the
/// certificate must lead to a trusted root, its name unchecked; `chain`
/// unset (`prefer`, `require`), anyone may answer. Either way the
/// handshake's signatures are checked with the provider's algorithms, as
/// rustls' own verifier does.
#[derive(Debug)]
struct Lenient {
    provider: Arc<CryptoProvider>,
    chain: Option<Arc<WebPkiServerVerifier>>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_url_keeps_what_tokio_postgres_reads() {
        let (url, s) =
            split("postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&x=1").unwrap();
        assert_eq!(url, "postgres://u@h/db?sslmode=require&x=1");
        assert_eq!(s.mode, SslMode::VerifyFull);
        assert_eq!(s.roots, Some(Roots::File("/etc/ca.pem".into())));
        let (url, s) = split("postgres://u@h/db").unwrap();
        assert_eq!(
            (url.as_str(), s.mode),
            ("postgres://u@h/db", SslMode::Prefer)
        );
        let (_, s) = split("postgres://u@h/db?sslrootcert=system&sslmode=verify-ca").unwrap();
        assert_eq!((s.mode, s.roots), (SslMode::VerifyCa, Some(Roots::System)));
        assert!(split("postgres://u@h/db?sslmode=sometimes").is_err());
    }

    #[test]
    fn a_missing_root_file_is_named() {
        let settings = TlsSettings {
            mode: SslMode::VerifyFull,
            roots: Some(Roots::File("/nonexistent/ca.pem".into())),
        };
        let e = connector(&settings).err().unwrap().to_string();
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
        let plain = TlsSettings {
            mode: SslMode::Require,
            roots: None,
        };
        assert!(connector(&plain).is_ok());
    }
}
