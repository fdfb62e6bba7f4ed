//! `warpt net-server`: the peer for `net_bandwidth` / `net_latency` runs on
//! another machine.

use std::net::TcpListener;
use std::time::Duration;

use anyhow::Result;
use warpt_micro::net::server::{Limits, Server};

use crate::cli::NetServerArgs;
use crate::{Outcome, UsageError};

/// Listens on `--bind` and serves sessions until stopped (or `--max-sessions`).
pub fn run(args: &NetServerArgs) -> Result<Outcome> {
    let listener = TcpListener::bind(&args.bind).map_err(|e| {
        UsageError(format!(
            "cannot listen on '{}': {e}; give --bind ADDR:PORT",
            args.bind
        ))
    })?;
    let limits = Limits {
        session_time: Duration::from_secs(args.session_seconds),
        ..Limits::default()
    };
    let server = Server::start(listener, limits, args.max_sessions, |msg| {
        eprintln!("net-server: {msg}")
    })?;
    // On stdout, so a script can read the port when --bind asked for port 0.
    println!("listening on {}", server.addr());
    server.wait();
    Ok(Outcome::Success)
}
