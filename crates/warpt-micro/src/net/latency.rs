//! `net_latency`: request/response round-trip time of small TCP messages.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use warpt_harness::SeriesMetrics;
use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkMetric, BenchmarkSpec, Param, ParamKind, ParamValue, Validation,
};

use super::Target;
use super::protocol::{self, MAX_MESSAGE, Mode};

/// Benchmark name within the micro suite.
pub const NAME: &str = "net_latency";

/// Round trips per sample.
const PER_SAMPLE: usize = 200;
/// Round-trip times kept in the metric's `samples`.
const RTTS_KEPT: usize = 20_000;

/// The spec of `net_latency`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::Network)
        .description(
            "TCP request/response round trips of `message_bytes` (TCP_NODELAY, one connection, one \
             message in flight), like netperf TCP_RR. Metric `rtt_us`: per-message round-trip time \
             with p50/p99/p99.9; `transactions` per second per sample. Default peer: a server inside \
             warpt on 127.0.0.1; `host=ADDR[:PORT]` targets `warpt net-server`. Validation: every echo \
             equals the message sent.",
        )
        .duration(3.0)
        .param(Param::names(ParamKind::Address, "host", "").help(super::HOST_HELP))
        .param(
            Param::int("message_bytes", 64, 1..=i64::from(MAX_MESSAGE))
                .unit("B")
                .help("bytes per message"),
        )
        .param(Param::flag("busy_poll", false).help(
            "spin on a non-blocking socket instead of sleeping in read (no wake-up \
             latency; one CPU kept busy)",
        ))
        .check(super::check_params)
        .metric("rtt_us")
        .metric("transactions")
        .build()
}

/// One round trip on a non-blocking socket: write all of `out`, then read
/// `back` full, spinning instead of sleeping whenever the socket would block.
fn spin_round_trip(conn: &mut TcpStream, out: &[u8], back: &mut [u8]) -> std::io::Result<()> {
    use std::io::ErrorKind::{Interrupted, WouldBlock};
    let mut sent = 0;
    while sent < out.len() {
        match conn.write(&out[sent..]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => sent += n,
            Err(e) if matches!(e.kind(), WouldBlock | Interrupted) => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
    }
    let mut got = 0;
    while got < back.len() {
        match conn.read(&mut back[got..]) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), WouldBlock | Interrupted) => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The running benchmark.
#[derive(Default)]
pub struct NetLatency {
    target: Option<Target>,
    message: usize,
    busy_poll: bool,
    echoes: u64,
    mismatches: u64,
    error: Option<String>,
}

impl Benchmark for NetLatency {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        self.message = ctx.int_param("message_bytes", 1)? as usize;
        self.busy_poll = ctx.bool_param("busy_poll")?;
        self.target = Some(Target::from_params(&ctx.params)?);
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let target = warpt_harness::prepared(&self.target)?;
        let addr = target.addr;
        let mut conn = TcpStream::connect(addr)
            .map_err(|e| BenchmarkError::Failed(format!("connecting to {addr}: {e}")))?;
        conn.set_nodelay(true)
            .map_err(|e| BenchmarkError::Failed(e.to_string()))?;
        let busy_poll = self.busy_poll;
        protocol::open(
            &mut conn,
            Mode::Echo {
                message: self.message as u32,
            },
        )
        .map_err(|e| BenchmarkError::Failed(format!("{addr}: {e}")))?;
        if busy_poll {
            conn.set_nonblocking(true)
                .map_err(|e| BenchmarkError::Failed(e.to_string()))?;
        }
        let mut out = vec![0u8; self.message];
        let mut back = vec![0u8; self.message];
        let mut seq = 0u64;
        let mut rtts: Vec<f64> = Vec::new();
        let (mut echoes, mut mismatches, mut error) = (0u64, 0u64, None::<String>);
        let policy = MeasurePolicy::share_of(ctx, 1);
        let def = SeriesDef::rate("transactions", "1/s", PER_SAMPLE as f64);
        let m = measure.run(&policy, "round trips", std::slice::from_ref(&def), |slot| {
            let start = Instant::now();
            for _ in 0..PER_SAMPLE {
                seq += 1;
                for (i, b) in out.iter_mut().enumerate() {
                    *b = (seq as usize).wrapping_add(i) as u8;
                }
                let t = Instant::now();
                let r = if busy_poll {
                    spin_round_trip(&mut conn, &out, &mut back)
                } else {
                    conn.write_all(&out)
                        .and_then(|_| conn.read_exact(&mut back))
                };
                rtts.push(t.elapsed().as_secs_f64() * 1e6);
                match r {
                    Ok(()) => {
                        echoes += 1;
                        if back != out {
                            mismatches += 1;
                        }
                    }
                    Err(e) => {
                        error.get_or_insert(e.to_string());
                        break;
                    }
                }
            }
            slot[0] = start.elapsed().as_secs_f64().max(1e-9);
        });
        self.echoes = echoes;
        self.mismatches = mismatches;
        if let Some(e) = error {
            self.error = Some(e.clone());
            return Err(BenchmarkError::Failed(format!("round trip failed: {e}")));
        }
        // The warm-up samples' round trips are not part of the measurement.
        let skip = (m.warmup_samples * PER_SAMPLE).min(rtts.len());
        let mut metrics: Vec<BenchmarkMetric> = Vec::new();
        let rtt = SeriesDef::new(
            "rtt_us",
            "us",
            false,
            &[("message_bytes", self.message.to_string())],
            Convert::Time(1e6),
        );
        metrics.extend(rtt.metric_of_events(&rtts[skip..], RTTS_KEPT, Some(m.stop_reason)));
        metrics.extend(m.metrics);
        Ok(Measured {
            metrics,
            details: vec![
                ("peer".into(), ParamValue::Str(target.describe())),
                ("busy_poll".into(), ParamValue::Bool(busy_poll)),
            ],
            warnings: Vec::new(),
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        match (&self.error, self.mismatches, self.echoes) {
            (Some(e), _, _) => Validation::fail(e.clone()),
            (None, 0, 0) => Validation::fail("no message came back"),
            (None, 0, n) => Validation::pass(format!("all {n} echoes equalled the message sent")),
            (None, bad, n) => Validation::fail(format!(
                "{bad} of {n} echoes differed from the message sent"
            )),
        }
    }
}
