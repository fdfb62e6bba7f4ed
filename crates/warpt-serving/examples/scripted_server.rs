//! The scripted OpenAI-compatible server as a process, for clients measured
//! from outside (scripts/bench-serving): streams on a fixed schedule and
//! answers `GET /truth` with what it did.
//!
//! ```text
//! cargo run --release -p warpt-serving --example scripted_server -- \
//!     [--port N] [--first-ms 50] [--every-ms 10] [--bundle-every 5] [--slots 0]
//! ```
//!
//! Prints `listening on http://127.0.0.1:PORT` and serves until killed.

use std::time::Duration;

use warpt_serving::scripted::{Script, Scripted};

fn main() -> Result<(), String> {
    let mut script = Script::steady(Duration::from_millis(50), Duration::from_millis(10));
    let mut port = 0u16;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| -> Result<f64, String> {
            v.parse::<f64>()
                .ok()
                .filter(|x| *x >= 0.0 && x.is_finite())
                .ok_or_else(|| format!("{flag}: '{v}' is not a number from 0"))
        };
        match flag.as_str() {
            "--port" => port = number(&value)? as u16,
            "--first-ms" => script.first = Duration::from_secs_f64(number(&value)? / 1e3),
            "--every-ms" => script.every = Duration::from_secs_f64(number(&value)? / 1e3),
            "--bundle-every" => script.bundle_every = number(&value)? as usize,
            "--slots" => script.slots = number(&value)? as usize,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    let server = Scripted::start_on(port, script).map_err(|e| e.to_string())?;
    println!("listening on {}", server.url);
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
