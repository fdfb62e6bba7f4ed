//! `net_bandwidth`: TCP goodput with one stream and with `streams` streams.

use std::io::{Read, Write};
use std::net::TcpStream;

use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasurePolicy, MeasureResult, Measured,
    RunContext, SeriesDef,
};
use warpt_model::{BenchmarkComponent, BenchmarkSpec, Param, ParamKind, ParamValue, Validation};

use super::Target;
use super::protocol::{self, Mode};
use crate::team::{run_team, unpinned};

/// Benchmark name within the micro suite.
pub const NAME: &str = "net_bandwidth";

/// Bytes each stream sends per acknowledged round (one sample).
const ROUND: u32 = 32 << 20;
/// Write size.
const CHUNK: usize = protocol::BLOCK;

/// The spec of `net_bandwidth`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::Network)
        .description(
            "TCP goodput like iperf3: each stream sends 32 MiB rounds that the server acknowledges once \
             received, so a sample counts only bytes that arrived. One stream, then `streams` in \
             parallel. Metric `throughput` in Gbit/s (1e9 bits/s), tagged `streams`. Default peer: a \
             server inside warpt on 127.0.0.1; `host=ADDR[:PORT]` targets `warpt net-server`. \
             Validation: every acknowledgement matches the bytes sent.",
        )
        .duration(6.0)
        .param(Param::names(ParamKind::Address, "host", "").help(super::HOST_HELP))
        .param(Param::int("streams", 4, 1..=64).help("parallel streams for the second series"))
        .check(super::check_params)
        .metric("throughput")
        .build()
}

/// One stream's connection and what it has seen.
struct Stream {
    conn: Option<TcpStream>,
    sent: u64,
    error: Option<String>,
}

impl Stream {
    fn round(&mut self, chunk: &[u8]) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        let r = (|| -> std::io::Result<()> {
            let mut left = ROUND as usize;
            while left > 0 {
                let n = left.min(chunk.len());
                conn.write_all(&chunk[..n])?;
                left -= n;
            }
            self.sent += ROUND as u64;
            let mut ack = [0u8; 8];
            conn.read_exact(&mut ack)?;
            let acked = u64::from_le_bytes(ack);
            if acked != self.sent {
                return Err(std::io::Error::other(format!(
                    "server acknowledged {acked} bytes, {} were sent",
                    self.sent
                )));
            }
            Ok(())
        })();
        if let Err(e) = r {
            self.error.get_or_insert(e.to_string());
            self.conn = None;
        }
    }
}

/// The running benchmark.
#[derive(Default)]
pub struct NetBandwidth {
    target: Option<Target>,
    streams: usize,
    rounds_checked: u64,
    errors: Vec<String>,
}

impl NetBandwidth {
    fn series(
        &mut self,
        ctx: &RunContext,
        measure: &mut Measure<'_>,
        streams: usize,
    ) -> Result<warpt_model::BenchmarkMetric, BenchmarkError> {
        let addr = self
            .target
            .as_ref()
            .map(|t| t.addr)
            .ok_or_else(BenchmarkError::not_prepared)?;
        let mut conns = Vec::new();
        for _ in 0..streams {
            let mut s = TcpStream::connect(addr)
                .map_err(|e| BenchmarkError::Failed(format!("connecting to {addr}: {e}")))?;
            protocol::open(&mut s, Mode::Sink { round: ROUND })
                .map_err(|e| BenchmarkError::Failed(format!("{addr}: {e}")))?;
            conns.push(Some(s));
        }
        let chunk: Vec<u8> = (0..CHUNK).map(|i| (i * 131 % 251) as u8).collect();
        let policy = MeasurePolicy::share_of(ctx, 2);
        let bits = ROUND as f64 * 8.0 * streams as f64;
        let def = SeriesDef::new(
            "throughput",
            "Gbit/s",
            true,
            &[("streams", streams.to_string())],
            Convert::Rate(bits / 1e9),
        );
        let conns = std::sync::Mutex::new(conns);
        let label = format!("{streams} stream(s)");
        let (m, states) = run_team(
            &unpinned(streams),
            |i| Stream {
                conn: conns.lock().ok().and_then(|mut c| c[i].take()),
                sent: 0,
                error: None,
            },
            |_, s: &mut Stream, _| s.round(&chunk),
            |rounds| {
                measure.run(&policy, &label, std::slice::from_ref(&def), |out| {
                    out[0] = rounds.round(0).as_secs_f64()
                })
            },
        );
        for s in states {
            if let Some(e) = s.error {
                self.errors.push(e);
            } else {
                self.rounds_checked += s.sent / ROUND as u64;
            }
        }
        if let Some(e) = self.errors.first() {
            return Err(BenchmarkError::Failed(format!("stream failed: {e}")));
        }
        m.metrics
            .into_iter()
            .next()
            .ok_or_else(|| BenchmarkError::Failed("no samples".into()))
    }
}

impl Benchmark for NetBandwidth {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        self.streams = ctx.int_param("streams", 1)? as usize;
        self.target = Some(Target::from_params(&ctx.params)?);
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let mut metrics = vec![self.series(ctx, measure, 1)?];
        if self.streams > 1 {
            metrics.push(self.series(ctx, measure, self.streams)?);
        }
        let peer = self
            .target
            .as_ref()
            .map(|t| t.describe())
            .unwrap_or_default();
        Ok(Measured {
            metrics,
            details: vec![
                ("peer".into(), ParamValue::Str(peer)),
                ("round_bytes".into(), ParamValue::Int(ROUND as i64)),
            ],
            warnings: Vec::new(),
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        if !self.errors.is_empty() {
            Validation::fail(self.errors.join("; "))
        } else if self.rounds_checked == 0 {
            Validation::fail("no round was acknowledged")
        } else {
            Validation::pass(format!(
                "all {} rounds of {} MiB were acknowledged by the server with the exact byte count",
                self.rounds_checked,
                ROUND >> 20
            ))
        }
    }
}
