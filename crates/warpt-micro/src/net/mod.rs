//! Network benchmarks: TCP throughput (`net_bandwidth`) and request/response
//! round-trip time (`net_latency`), against a `warpt net-server` on another
//! machine (`--param host=ADDR[:PORT]`) or, by default, one started inside
//! the benchmark on 127.0.0.1 (nothing leaves the machine).

mod bandwidth;
mod latency;
pub mod protocol;
pub mod server;

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};

pub use bandwidth::{NAME as BANDWIDTH, NetBandwidth, spec as bandwidth_spec};
pub use latency::{NAME as LATENCY, NetLatency, spec as latency_spec};
use warpt_harness::BenchmarkError;
use warpt_model::{ParamValue, Params};

/// Help text of the `host` parameter both network benchmarks take.
pub(crate) const HOST_HELP: &str = "ADDR[:PORT] of a `warpt net-server` (port 7420 by default); empty = a server of our own on 127.0.0.1";

/// Where the benchmark connects, and the local server if it started one.
pub(crate) struct Target {
    pub addr: SocketAddr,
    pub local: Option<server::Server>,
}

impl Target {
    /// `host` as given, or a server of our own on loopback.
    pub fn from_params(params: &Params) -> Result<Target, BenchmarkError> {
        let host = params
            .get("host")
            .and_then(ParamValue::as_str)
            .unwrap_or("");
        if host.is_empty() {
            let listener = TcpListener::bind("127.0.0.1:0")
                .map_err(|e| BenchmarkError::Failed(format!("cannot listen on 127.0.0.1: {e}")))?;
            let server = server::Server::start(listener, server::Limits::default(), None, |_| {})
                .map_err(|e| {
                BenchmarkError::Failed(format!("cannot start the local server: {e}"))
            })?;
            return Ok(Target {
                addr: server.addr(),
                local: Some(server),
            });
        }
        Ok(Target {
            addr: resolve(host).map_err(BenchmarkError::invalid("host"))?,
            local: None,
        })
    }

    /// Where the peer is, for details.
    pub fn describe(&self) -> String {
        match self.local {
            Some(_) => format!("warpt's own server on {}", self.addr),
            None => format!("warpt net-server at {}", self.addr),
        }
    }
}

/// `ADDR[:PORT]` to a socket address, port defaulting to 7420.
pub fn resolve(host: &str) -> Result<SocketAddr, String> {
    let with_port = if host.parse::<SocketAddr>().is_ok()
        || host
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.contains(':') && p.parse::<u16>().is_ok())
    {
        host.to_string()
    } else if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{}", protocol::DEFAULT_PORT)
    } else {
        format!("{host}:{}", protocol::DEFAULT_PORT)
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve '{host}': {e}"))?
        .next()
        .ok_or_else(|| format!("'{host}' resolves to no address"))
}

/// Checks `host` before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    match params.get("host").and_then(ParamValue::as_str) {
        Some(h) if !h.is_empty() => resolve(h)
            .map(|_| ())
            .map_err(|e| format!("parameter 'host': {e}")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_get_the_default_port() {
        assert_eq!(resolve("127.0.0.1").unwrap().port(), protocol::DEFAULT_PORT);
        assert_eq!(resolve("127.0.0.1:9").unwrap().port(), 9);
        assert_eq!(resolve("::1").unwrap().port(), protocol::DEFAULT_PORT);
        assert_eq!(resolve("[::1]:8").unwrap().port(), 8);
        assert!(resolve("no.such.host.invalid").is_err());
    }
}
