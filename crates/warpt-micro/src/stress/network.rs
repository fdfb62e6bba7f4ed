//! Network stress: streams of seeded payloads through the echo server,
//! every echo compared byte for byte.

use std::io::{Read, Write};
use std::net::TcpStream;

use super::{StressConfig, StressOutcome, drive};
use crate::net::protocol::{self, MAX_MESSAGE, Mode};
use crate::net::server::{Limits, Server};

pub(crate) fn run(cfg: &StressConfig<'_>) -> Result<StressOutcome, String> {
    let streams = cfg.int("streams").clamp(1, 64) as usize;
    let message = ((cfg.int("message_kb").max(1) as u32) << 10).min(MAX_MESSAGE) as usize;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    let server =
        Server::start(listener, Limits::default(), None, |_| {}).map_err(|e| e.to_string())?;
    let addr = server.addr();
    let (seed, inject) = (cfg.seed, cfg.inject());
    let out = drive(
        cfg,
        streams,
        "Gbit/s",
        |_| {
            let conn = TcpStream::connect(addr).and_then(|mut c| {
                protocol::open(
                    &mut c,
                    Mode::Echo {
                        message: message as u32,
                    },
                )?;
                Ok(c)
            });
            (conn.ok(), vec![0u8; message], vec![0u8; message], 0u64)
        },
        |t, (conn, out, back, n), tally| {
            let Some(c) = conn.as_mut() else {
                tally.error(|| format!("stream {t}: could not connect to the echo server"));
                std::thread::sleep(std::time::Duration::from_millis(100));
                return;
            };
            *n += 1;
            let mut x = seed ^ (*n << 16) ^ t as u64 | 1;
            for chunk in out.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let b = x.to_le_bytes();
                chunk.copy_from_slice(&b[..chunk.len()]);
            }
            if let Err(e) = c.write_all(out).and_then(|_| c.read_exact(back)) {
                tally.error(|| format!("stream {t}: {e}"));
                *conn = None;
                return;
            }
            if inject && t == 0 && *n == 1 {
                back[message / 2] ^= 0x01;
            }
            tally.work(2.0 * message as f64 * 8.0 / 1e9);
            tally.checked(1);
            if let Some(i) = out.iter().zip(back.iter()).position(|(a, b)| a != b) {
                tally.error(|| format!("stream {t} message {n}: echoed byte {i} differs"));
            }
        },
    );
    drop(server);
    Ok(out)
}
