//! What arrives over a pipe or a socket: the benchmark protocol's replies
//! from an adapter, `warpt serve`'s run requests, and `warpt net-server`'s
//! hello.

use std::sync::OnceLock;

use warpt_micro::net::protocol::{HELLO_LEN, Mode};
use warpt_run::PlanBase;
use warpt_run::config::Config;
use warpt_server::Access;
use warpt_server::runs_api::check_submission;
use warpt_userbench::driver::{Output, Timed, parse_reply};

/// One reply line from an adapter, read as the reply to each request it
/// could answer (`load`, `run` of a number of calls the first byte says,
/// `output`, `validate`).
pub fn protocol_reply(data: &[u8]) {
    let Some((&calls, rest)) = data.split_first() else {
        return;
    };
    let line = String::from_utf8_lossy(rest);
    let Ok(reply) = parse_reply("run", &line) else {
        return;
    };
    if let Ok(t) = Timed::from_reply(&reply, u64::from(calls)) {
        assert!(!t.samples_ns.is_empty() && t.calls > 0);
        let _ = t.total_ns();
    }
    if let Ok(out) = Output::from_reply(&reply) {
        let _ = out.ttft_times_ms.iter().sum::<f64>();
    }
}

/// A `POST /api/v1/runs` body, read and planned as the server does under
/// its default grants (no commands, no paths). Property: the answer is
/// queued, 400 or 403, never a 500.
pub fn run_body(data: &[u8]) {
    static BASE: OnceLock<PlanBase> = OnceLock::new();
    let base = BASE.get_or_init(|| {
        PlanBase::new(Config::defaults(), crate::config::registry(Vec::new()))
            .expect("the default configuration plans")
    });
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = check_submission(body, base, &Access::default()) {
        assert!(
            e.status.is_client_error(),
            "{body:?} answered {}: {}",
            e.status,
            e.message
        );
    }
}

/// The first bytes a `warpt net-server` reads from a client. Property: a
/// hello it accepts is the one a client of that mode sends.
pub fn net_hello(data: &[u8]) {
    let Some(hello) = data.first_chunk::<HELLO_LEN>() else {
        return;
    };
    if let Ok(mode) = Mode::parse(hello) {
        assert_eq!(Mode::parse(&mode.hello()), Ok(mode));
    }
}
