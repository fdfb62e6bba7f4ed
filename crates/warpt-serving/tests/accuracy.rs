//! The client held to a scripted server's schedule: first token 50 ms
//! after the request arrives, then one every 10 ms (at 512 streams 200
//! and 40), every fifth chunk carrying three tokens. warpt's TTFT and
//! inter-token latencies must be what the server did, within 1 ms beyond
//! the server's own miss of its schedule (TTFT: beyond the request's trip
//! too), at concurrency 1, 64 and 512, and its open loop must send at the
//! rate asked (within 1%) up to 2,000 requests/s against a server that
//! answers at once. The tests take turns: each is a load on the machine's
//! two cores, and another one running beside it would be measured too.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use warpt_serving::load::{Arrival, Load, Plan, drive};
use warpt_serving::request::{RequestSpec, Status};
use warpt_serving::scripted::{Script, Scripted};
use warpt_serving::timing::{Counting, figures};
use warpt_serving::{Api, Endpoint};

/// Held by each test while it runs.
fn alone() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn specs(n: usize, max_tokens: u32) -> Vec<RequestSpec> {
    (0..n)
        .map(|i| RequestSpec::new(format!("request {i}"), max_tokens, true))
        .collect()
}

fn plan(load: Load, specs: Vec<RequestSpec>, seed: u64, warmup: usize) -> Plan {
    Plan {
        load,
        specs,
        turns: 1,
        seed,
        warmup,
    }
}

/// TTFT and every inter-token latency of what the server did.
fn truth_figures(truths: &[warpt_serving::scripted::Truth]) -> (Vec<f64>, Vec<f64>) {
    let (mut ttft, mut itl) = (Vec::new(), Vec::new());
    for (t, i) in truths
        .iter()
        .filter(|t| t.writes.len() > 1)
        .filter_map(|t| t.figures())
    {
        ttft.push(t);
        itl.extend(i);
    }
    (ttft, itl)
}

/// A scripted server's schedule: the first token `first_ms` after the
/// request, then one every `every_ms`.
#[derive(Clone, Copy)]
struct Pace {
    first_ms: u64,
    every_ms: u64,
}

/// At 1 and 64 streams: the first token after 50 ms, then one every 10.
const PACE: Pace = Pace {
    first_ms: 50,
    every_ms: 10,
};

/// At 512 streams, four times slower: 51,200 writes a second at 10 ms
/// apart kept a 2-vCPU guest's server off its own schedule in ten runs of
/// ten (its ITL p10 0-8 ms for 10), so the client could not be held to it.
/// The claim (the client within 1 ms of the server) is the same at any
/// pace; a quarter of the writes leaves the cores to keep it.
const PACE_512: Pace = Pace {
    first_ms: 200,
    every_ms: 40,
};

/// One closed-loop run of `n` requests at `concurrency` against
/// `server`, its structural checks asserted: every TTFT and inter-token
/// latency the client measured, in ms.
fn client_run(server: &Scripted, n: usize, concurrency: usize, api: Api) -> (Vec<f64>, Vec<f64>) {
    let words = |s: &str| s.split_whitespace().count();
    let endpoint = Endpoint::new(&server.url, api, "scripted", "", Duration::from_secs(30))
        .expect("the scripted server's endpoint");
    let run = drive(
        &endpoint,
        &plan(Load::Closed { concurrency }, specs(n, 16), 1, concurrency),
        2,
    )
    .expect("the closed loop runs");
    let (mut ttft, mut itl) = (Vec::new(), Vec::new());
    for s in &run.requests {
        assert_eq!(s.outcome.status, Status::Ok, "{:?}", s.outcome.status);
        let (f, how) = figures(&s.outcome, Some(&words)).expect("a streamed answer's figures");
        assert_eq!(how, Counting::Tokenizer);
        assert_eq!(f.output_tokens, 16);
        assert_eq!(s.outcome.completion_tokens, Some(16));
        ttft.push(f.ttft_s * 1e3);
        itl.extend(f.itl_s.iter().map(|s| s * 1e3));
    }
    (ttft, itl)
}

/// One attempt at `concurrency` against `server` (paced by `pace`): the
/// timing checks' failure found.
fn schedule_kept(server: &Scripted, pace: Pace, concurrency: usize, api: Api) -> Result<(), Miss> {
    let n = (concurrency * 3).max(20);
    server.take_truths();
    let (mut ttft, mut itl) = client_run(server, n, concurrency, api);
    let (mut true_ttft, mut true_itl) = truth_figures(&server.take_truths());
    assert_eq!(true_ttft.len(), n);
    let q = |v: &mut Vec<f64>| [quantile(v, 0.1), quantile(v, 0.5), quantile(v, 0.9)];
    let (t, tt) = (quantile(&mut ttft, 0.5), quantile(&mut true_ttft, 0.5));
    let (i, ti) = (q(&mut itl), q(&mut true_itl));
    eprintln!(
        "concurrency {concurrency}: TTFT p50 {t:.3} ms (server {tt:.3}, schedule {}); ITL p10/p50/p90 \
         {:.3}/{:.3}/{:.3} ms (server {:.3}/{:.3}/{:.3}, schedule {})",
        pace.first_ms, i[0], i[1], i[2], ti[0], ti[1], ti[2], pace.every_ms
    );
    // No token is seen before the server wrote it: never excused by noise.
    assert!(
        t > tt - 1.0,
        "concurrency {concurrency}: TTFT p50 {t} before the server's {tt}"
    );
    // The server's own miss of its schedule, figure by figure: a host
    // that stalls the process for a burst of writes (512 streams' tokens
    // fall due together, as a batching server's do: a 2-vCPU KVM guest
    // wrote a burst over 1-2 ms) stalls the client's reads as much. The
    // client is held to the server within 1 ms beyond that miss; a server
    // more than `HOST_SLACK_MS` off (a neighbour took the cores: a guest
    // once saw it 28 ms late) says nothing of the client.
    let (first, every) = (pace.first_ms as f64, pace.every_ms as f64);
    let (miss_t, miss_i) = ((tt - first).abs(), ti.map(|v| (v - every).abs()));
    if miss_t.max(miss_i[0]).max(miss_i[1]).max(miss_i[2]) > HOST_SLACK_MS {
        return Err(Miss::Host(format!(
            "concurrency {concurrency}: the server itself off its schedule: TTFT p50 {tt}, ITL {ti:?}"
        )));
    }
    // The client sees what the server did, within 1 ms beyond the
    // server's own miss: the ITL's p10, p50 and p90, and TTFT p50 (no
    // earlier than the server's, asserted above, and no later than 1 ms
    // past the trip's slack). Measured on a 2-core Zen 4: TTFT 0.10-0.25
    // ms off at every concurrency, the ITL's quantiles at most 0.3 ms off
    // at 512 streams.
    if t - tt >= 1.0 + miss_t + TRIP_SLACK_MS {
        return Err(Miss::Client(format!(
            "concurrency {concurrency}: TTFT p50 {t} vs the server's {tt} (its own miss {miss_t:.3} ms)"
        )));
    }
    if (0..3).any(|k| (i[k] - ti[k]).abs() >= 1.0 + miss_i[k]) {
        return Err(Miss::Client(format!(
            "concurrency {concurrency}: ITL p10/p50/p90 {i:?} vs the server's {ti:?} (its own misses {miss_i:?} ms)"
        )));
    }
    Ok(())
}

/// The most a server may miss its own schedule by (any of TTFT p50 and
/// the ITL's p10, p50 and p90) for an attempt to hold the client to it.
const HOST_SLACK_MS: f64 = 3.0;

/// The request's trip to the server and the first token's back are in the
/// client's TTFT, not in the server's (which starts at the request's
/// arrival): 0.1-0.25 ms on a quiet 2-core Zen 4; on a 2-vCPU KVM guest
/// whose idle vCPUs wake late, 0.2-2.7 ms at 64 streams with the server on
/// its schedule. A client that queued requests itself would be tens of ms
/// late at 64 and 512 streams.
const TRIP_SLACK_MS: f64 = 2.0;

/// A shared host's neighbours can stall both processes for a millisecond
/// (CI once saw the server itself 0.5 ms off its own schedule at 512
/// streams): a concurrency fails only when three runs in a row miss, which
/// a client that is really late or early always does.
const ATTEMPTS: usize = 3;

/// Attempts at most whose server itself missed its schedule (they do not
/// count against the client; a host that never lets the server keep it
/// fails the test, saying so).
const HOST_ATTEMPTS: usize = 10;

/// Why an attempt did not hold the client to the schedule.
#[derive(Debug)]
enum Miss {
    /// The client saw other times than the server wrote.
    Client(String),
    /// The server did not keep its own schedule.
    Host(String),
}

#[test]
fn ttft_and_itl_are_the_schedule_at_concurrency_1_64_and_512() {
    let _turn = alone();
    let start = |pace: Pace| {
        Scripted::start(Script {
            first: Duration::from_millis(pace.first_ms),
            every: Duration::from_millis(pace.every_ms),
            bundle_every: 5,
            slots: 0,
        })
        .unwrap()
    };
    let (server, server_512) = (start(PACE), start(PACE_512));
    for (concurrency, api, server, pace) in [
        (1, Api::Completions, &server, PACE),
        (64, Api::Chat, &server, PACE),
        (512, Api::Completions, &server_512, PACE_512),
    ] {
        let (mut misses, mut host) = (Vec::new(), Vec::new());
        while misses.len() < ATTEMPTS && host.len() < HOST_ATTEMPTS {
            match schedule_kept(server, pace, concurrency, api) {
                Ok(()) => break,
                Err(Miss::Client(m)) => misses.push(m),
                Err(Miss::Host(m)) => host.push(m),
            }
        }
        assert!(misses.len() < ATTEMPTS, "{misses:#?}");
        assert!(host.len() < HOST_ATTEMPTS, "{host:#?}");
    }
}

#[test]
fn the_open_loop_sends_at_the_rate_asked_up_to_2000_per_second() {
    let _turn = alone();
    let server = Scripted::start(Script::steady(Duration::ZERO, Duration::ZERO)).unwrap();
    let endpoint = Endpoint::new(
        &server.url,
        Api::Completions,
        "scripted",
        "",
        Duration::from_secs(30),
    )
    .unwrap();
    for rate in [200.0, 2000.0] {
        let n = (rate * 2.0) as usize;
        let load = Load::Open {
            rate,
            arrival: Arrival::Constant,
        };
        let run = drive(&endpoint, &plan(load, specs(n, 4), 3, 16), 2).unwrap();
        assert!(run.requests.iter().all(|s| s.outcome.status == Status::Ok));
        let mut sent: Vec<f64> = run.requests.iter().map(|s| run.sent_s(s)).collect();
        sent.sort_by(f64::total_cmp);
        let achieved = (n - 1) as f64 / (sent[n - 1] - sent[0]);
        eprintln!("asked {rate}/s, sent {achieved:.1}/s");
        assert!(
            (achieved / rate - 1.0).abs() < 0.01,
            "asked {rate}, sent {achieved}"
        );
        // No request left later than 50 ms behind its schedule.
        let lag = run
            .requests
            .iter()
            .map(|s| run.sent_s(s) - s.due_s)
            .fold(0.0, f64::max);
        assert!(lag < 0.05, "a request was sent {lag:.3} s late");
    }
    assert!(server.requests() >= 4400);
}

#[test]
fn a_server_that_refuses_or_is_absent_is_counted_not_dropped() {
    let _turn = alone();
    let endpoint = Endpoint::new(
        "http://127.0.0.1:9",
        Api::Completions,
        "m",
        "",
        Duration::from_secs(5),
    )
    .unwrap();
    let run = drive(
        &endpoint,
        &plan(Load::Closed { concurrency: 2 }, specs(4, 4), 1, 0),
        1,
    )
    .unwrap();
    assert_eq!(run.requests.len(), 4);
    for s in &run.requests {
        assert!(
            matches!(&s.outcome.status, Status::Failed(e) if e.contains("127.0.0.1:9")),
            "{:?}",
            s.outcome.status
        );
        assert!(figures(&s.outcome, None).is_none());
    }
}
