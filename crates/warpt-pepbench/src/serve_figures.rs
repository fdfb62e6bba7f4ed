//! A finished `llm_serve` run as figures: every request's TTFT, ITL, TPOT
//! and latency, the counts by how requests ended, goodput under the SLOs,
//! and whether the client kept its schedule — as warpt's metrics and
//! details.

use std::collections::BTreeMap;

use warpt_harness::{Convert, SeriesDef, SeriesMetrics};
use warpt_model::{BenchmarkMetric, ParamValue, StopReason};
use warpt_serving::load::Run;
use warpt_serving::request::Status;
use warpt_serving::timing::{Counting, Figures, figures};

/// Per-request values kept in a metric's `samples`.
const EVENTS_KEPT: usize = 20_000;

/// The SLOs goodput counts against, in milliseconds (0: none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Slos {
    /// Time to first token.
    pub ttft_ms: f64,
    /// Time per output token after the first.
    pub tpot_ms: f64,
    /// End-to-end latency.
    pub latency_ms: f64,
}

impl Slos {
    /// Whether any SLO is set.
    pub fn any(&self) -> bool {
        self.ttft_ms > 0.0 || self.tpot_ms > 0.0 || self.latency_ms > 0.0
    }

    /// Whether a request met every SLO set.
    pub fn met(&self, f: &Figures) -> bool {
        (self.ttft_ms == 0.0 || f.ttft_s * 1e3 <= self.ttft_ms)
            && (self.tpot_ms == 0.0 || f.tpot_s.is_none_or(|t| t * 1e3 <= self.tpot_ms))
            && (self.latency_ms == 0.0 || f.latency_s * 1e3 <= self.latency_ms)
    }
}

/// What a run's requests came to.
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    /// Requests sent.
    pub sent: usize,
    /// Requests by how they ended (`ok`, `failed`, `timed_out`, `cut_off`).
    pub kinds: BTreeMap<&'static str, usize>,
    /// The first failure's message.
    pub first_error: Option<String>,
    /// Every request that streamed text: its figures, and its turn.
    pub done: Vec<(Figures, usize)>,
    /// How tokens were counted (of the first request with figures).
    pub counting: Option<Counting>,
    /// Requests meeting every SLO.
    pub good: usize,
    /// Output tokens in all.
    pub tokens: u64,
    /// Start to the last response's end, seconds.
    pub wall_s: f64,
}

impl Analysis {
    /// Requests that did not end properly.
    pub fn errors(&self) -> usize {
        self.sent - self.kinds.get("ok").copied().unwrap_or(0)
    }

    /// Their percentage of all sent.
    pub fn error_pct(&self) -> f64 {
        100.0 * self.errors() as f64 / self.sent.max(1) as f64
    }

    /// Percentage of sent requests that met every SLO.
    pub fn attainment_pct(&self) -> f64 {
        100.0 * self.good as f64 / self.sent.max(1) as f64
    }

    /// The counts as `ok 10, failed 2`.
    pub fn counts(&self) -> String {
        self.kinds
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The metrics: latency distributions and per-run rates.
    pub fn metrics(&self) -> Vec<BenchmarkMetric> {
        let ms = |v: f64| v * 1e3;
        let done = &self.done;
        let series: [(&str, Vec<f64>); 4] = [
            ("ttft_ms", done.iter().map(|(f, _)| ms(f.ttft_s)).collect()),
            (
                "itl_ms",
                done.iter()
                    .flat_map(|(f, _)| f.itl_s.iter().map(|s| ms(*s)))
                    .collect(),
            ),
            (
                "tpot_ms",
                done.iter().filter_map(|(f, _)| f.tpot_s.map(ms)).collect(),
            ),
            (
                "request_latency_ms",
                done.iter().map(|(f, _)| ms(f.latency_s)).collect(),
            ),
        ];
        let mut metrics = Vec::new();
        for (name, values) in series {
            if values.is_empty() {
                continue;
            }
            let def = SeriesDef::new(name, "ms", false, &[], Convert::Time(1e3));
            metrics.extend(def.metric_of_events(&values, EVENTS_KEPT, Some(StopReason::TimeCap)));
        }
        let wall = self.wall_s.max(1e-9);
        let rate = |name: &str, v: f64, unit: &str| BenchmarkMetric::single(name, v, unit, true);
        metrics.push(rate(
            "output_tokens_per_s",
            self.tokens as f64 / wall,
            "tokens/s",
        ));
        metrics.push(rate(
            "requests_per_s",
            done.len() as f64 / wall,
            "requests/s",
        ));
        metrics.push(rate(
            "goodput_requests_per_s",
            self.good as f64 / wall,
            "requests/s",
        ));
        metrics
    }

    /// The details: counts, how tokens were counted, the client's own
    /// pace (the rate it sent at, its latest send), TTFT by turn.
    pub fn details(&self, run: &Run) -> Vec<(String, ParamValue)> {
        let n = run.requests.len();
        let mut sent: Vec<f64> = run.requests.iter().map(|s| run.sent_s(s)).collect();
        sent.sort_by(f64::total_cmp);
        let sent_rate = if n > 1 {
            (n - 1) as f64 / (sent[n - 1] - sent[0]).max(1e-9)
        } else {
            0.0
        };
        let lag_ms = run
            .requests
            .iter()
            .map(|s| (run.sent_s(s) - s.due_s) * 1e3)
            .fold(0.0, f64::max);
        let int = |v: usize| ParamValue::Int(v as i64);
        let mut details = vec![
            (
                "token_counting".into(),
                ParamValue::from(self.counting.map_or("chunks", |c| c.name())),
            ),
            ("requests".into(), int(n)),
            ("requests_good".into(), int(self.good)),
            ("error_pct".into(), ParamValue::Float(self.error_pct())),
            (
                "slo_attainment_pct".into(),
                ParamValue::Float(self.attainment_pct()),
            ),
            ("output_tokens".into(), ParamValue::Int(self.tokens as i64)),
            ("wall_s".into(), ParamValue::Float(self.wall_s)),
            ("sent_requests_per_s".into(), ParamValue::Float(sent_rate)),
            ("max_send_lag_ms".into(), ParamValue::Float(lag_ms)),
        ];
        for kind in ["ok", "failed", "timed_out", "cut_off"] {
            details.push((
                format!("requests_{kind}"),
                int(self.kinds.get(kind).copied().unwrap_or(0)),
            ));
        }
        if let Some(e) = &self.first_error {
            details.push(("first_error".into(), ParamValue::Str(e.clone())));
        }
        // The HTTP the responses came in (HTTP/1.1, HTTP/2.0; several when
        // they differed).
        let mut versions: Vec<String> = run
            .requests
            .iter()
            .filter_map(|s| s.outcome.http.map(|v| format!("{v:?}")))
            .collect();
        versions.sort();
        versions.dedup();
        if !versions.is_empty() {
            details.push(("http_version".into(), ParamValue::Str(versions.join(", "))));
        }
        let turns = self.done.iter().map(|(_, t)| t + 1).max().unwrap_or(1);
        if turns > 1 {
            let by_turn: Vec<String> = (0..turns)
                .map(|t| {
                    let mut v: Vec<f64> = self
                        .done
                        .iter()
                        .filter(|(_, turn)| *turn == t)
                        .map(|(f, _)| f.ttft_s * 1e3)
                        .collect();
                    v.sort_by(f64::total_cmp);
                    let median = v.get(v.len() / 2).copied().unwrap_or(f64::NAN);
                    format!("turn {}: {median:.2}", t + 1)
                })
                .collect();
            details.push((
                "ttft_p50_ms_by_turn".into(),
                ParamValue::Str(by_turn.join(", ")),
            ));
        }
        details
    }
}

/// Reads `run`: tokens counted with `count` (a tokenizer) when given.
pub(crate) fn analyse(run: &Run, count: Option<&dyn Fn(&str) -> usize>, slos: Slos) -> Analysis {
    let mut kinds: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut first_error = None;
    let mut done = Vec::new();
    let mut counting = None;
    for s in &run.requests {
        *kinds.entry(s.outcome.status.kind()).or_default() += 1;
        if let (None, Status::Failed(e) | Status::CutOff(e)) = (&first_error, &s.outcome.status) {
            first_error = Some(e.clone());
        }
        if let Some((f, how)) = figures(&s.outcome, count) {
            counting.get_or_insert(how);
            done.push((f, s.turn));
        }
    }
    let good = done.iter().filter(|(f, _)| slos.met(f)).count();
    let tokens = done.iter().map(|(f, _)| f.output_tokens).sum();
    Analysis {
        sent: run.requests.len(),
        kinds,
        first_error,
        done,
        counting,
        good,
        tokens,
        wall_s: run.wall_s,
    }
}
