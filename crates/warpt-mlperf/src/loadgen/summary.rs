//! LoadGen's `PerformanceSummary`: percentiles, the scenario's metric, and
//! the validity decision with LoadGen's own recommendation texts.

use super::early_stopping::{Estimate, MinPassingQueries, percentile_estimate, server_check};
use super::engine::PerformanceResult;
use super::settings::{Mode, Scenario, TestSettings};

/// The percentiles LoadGen reports beside its target percentile.
pub const PERCENTILES: [f64; 6] = [0.50, 0.90, 0.95, 0.97, 0.99, 0.999];

/// Sorted latencies (ns) and their statistics, as LoadGen computes them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Latencies {
    /// Ascending.
    pub sorted: Vec<u64>,
    /// Integer mean (LoadGen divides integers).
    pub mean: u64,
}

impl Latencies {
    /// From unsorted values.
    pub fn new(mut values: Vec<u64>) -> Self {
        values.sort_unstable();
        let mean = if values.is_empty() {
            0
        } else {
            (values.iter().map(|&v| v as u128).sum::<u128>() / values.len() as u128) as u64
        };
        Latencies {
            sorted: values,
            mean,
        }
    }

    /// LoadGen's percentile: the element at `floor(n * p)`.
    pub fn percentile(&self, p: f64) -> u64 {
        let n = self.sorted.len();
        if n == 0 {
            return 0;
        }
        self.sorted[((n as f64 * p) as usize).min(n - 1)]
    }

    /// The smallest.
    pub fn min(&self) -> u64 {
        self.sorted.first().copied().unwrap_or(0)
    }

    /// The largest.
    pub fn max(&self) -> u64 {
        self.sorted.last().copied().unwrap_or(0)
    }
}

/// One of LoadGen's validity conditions.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Whether it holds.
    pub met: bool,
    /// LoadGen's recommendation when it does not (empty when it does).
    pub recommendation: String,
}

/// The verdict and every number of one test.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The SUT's name.
    pub sut_name: String,
    /// The effective settings.
    pub settings: TestSettings,
    /// The raw result.
    pub result: PerformanceResult,
    /// Per-sample latencies.
    pub samples: Latencies,
    /// MultiStream: per-query latencies.
    pub queries: Latencies,
    /// LLMs: time to first token per sample.
    pub ttft: Latencies,
    /// LLMs: time per output token per sample.
    pub tpot: Latencies,
    /// LLMs: output tokens in all.
    pub token_count: u64,
    /// Minimum duration.
    pub min_duration: Check,
    /// Minimum query (and sample) count.
    pub min_queries: Check,
    /// Server's latency bound (always met elsewhere).
    pub perf_constraints: Check,
    /// Early stopping.
    pub early_stopping: Check,
    /// The early-stopping text (LoadGen's "Early Stopping Result"), or the
    /// TTFT and TPOT texts for LLMs.
    pub early_stopping_text: Vec<(String, String)>,
    /// SingleStream: the early-stopping estimate of the target percentile.
    pub early_stopping_latency_ss: Option<u64>,
    /// SingleStream: of the 99th percentile; MultiStream: of the target.
    pub early_stopping_latency_ms: Option<u64>,
    /// Server queries over the latency bound.
    pub overlatency_count: u64,
}

impl Summary {
    /// Whether every condition holds: LoadGen's `Result is : VALID`.
    pub fn valid(&self) -> bool {
        self.min_duration.met
            && self.min_queries.met
            && self.perf_constraints.met
            && self.early_stopping.met
    }

    /// Whether the scenario has a performance constraint (Server).
    pub fn has_perf_constraints(&self) -> bool {
        self.settings.scenario == Scenario::Server
    }

    /// Samples issued.
    pub fn sample_count(&self) -> u64 {
        self.samples.sorted.len() as u64
    }

    /// Offline: samples per second over the run.
    pub fn samples_per_second(&self) -> f64 {
        self.sample_count() as f64 / self.result.max_latency_s
    }

    /// Server: samples completed per second (LoadGen counts n - 1).
    pub fn completed_qps(&self) -> f64 {
        (self.sample_count().saturating_sub(1)) as f64 / self.result.final_query_done_s
    }

    /// Server: samples scheduled per second.
    pub fn scheduled_qps(&self) -> f64 {
        (self.sample_count().saturating_sub(1)) as f64 / self.result.final_query_scheduled_s
    }

    /// Tokens per second: Offline over the run, Server as completed.
    pub fn tokens_per_second(&self) -> f64 {
        match self.settings.scenario {
            Scenario::Offline => self.token_count as f64 / self.result.max_latency_s,
            Scenario::Server => self.token_count as f64 / self.result.final_query_done_s,
            _ => self.token_count as f64 / self.result.final_query_issued_s,
        }
    }

    /// SingleStream: queries per second with LoadGen's overhead.
    pub fn qps_with_overhead(&self) -> f64 {
        (self.sample_count().saturating_sub(1)) as f64 / self.result.final_query_issued_s
    }

    /// SingleStream: 1 / mean latency.
    pub fn qps_without_overhead(&self) -> f64 {
        1e9 / self.samples.mean as f64
    }

    /// The target-percentile latency of the scenario's headline (per
    /// query for MultiStream, per sample otherwise).
    pub fn target_latency_ns(&self) -> u64 {
        let p = self.settings.target_latency_percentile;
        match self.settings.scenario {
            Scenario::MultiStream => self.queries.percentile(p),
            _ => self.samples.percentile(p),
        }
    }
}

/// Computes the summary of `result` under `settings`, deciding validity as
/// LoadGen's `LogSummary` does.
pub fn summarize(sut_name: &str, settings: &TestSettings, result: PerformanceResult) -> Summary {
    let s = settings;
    let samples = Latencies::new(result.samples.iter().map(|r| r.latency_ns).collect());
    let queries = Latencies::new(result.query_latencies_ns.clone());
    let tokens = s.token_bounds.is_some();
    let ttft = Latencies::new(
        result
            .samples
            .iter()
            .filter_map(|r| r.first_token_ns)
            .collect(),
    );
    let tpot = Latencies::new(result.samples.iter().filter_map(|r| r.tpot_ns()).collect());
    let token_count = result.samples.iter().filter_map(|r| r.tokens).sum();

    let min_duration_met = match s.scenario {
        Scenario::Offline => result.max_latency_s >= s.min_duration.as_secs_f64(),
        Scenario::Server => result.final_query_scheduled_s >= s.min_duration.as_secs_f64(),
        _ => result.final_query_issued_s >= s.min_duration.as_secs_f64(),
    };
    let accuracy = s.mode == Mode::AccuracyOnly;
    let min_duration = Check {
        met: min_duration_met || accuracy,
        recommendation: if min_duration_met || accuracy {
            String::new()
        } else {
            match s.scenario {
                Scenario::SingleStream | Scenario::MultiStream => {
                    "Decrease the expected latency so the loadgen pre-generates more queries."
                }
                Scenario::Server => {
                    "Increase the target QPS so the loadgen pre-generates more queries."
                }
                Scenario::Offline => {
                    "Increase expected QPS so the loadgen pre-generates a larger (coalesced) query."
                }
            }
            .to_string()
        },
    };
    let queries_met = (result.queries_issued >= s.min_query_count
        && samples.sorted.len() as u64 >= s.min_sample_count())
        || accuracy;
    let min_queries = Check {
        met: queries_met,
        recommendation: if queries_met {
            String::new()
        } else {
            "The test exited early, before enough queries were issued.\n   See the detailed log for why this may have occurred.".into()
        },
    };

    let mut perf = Check {
        met: true,
        recommendation: String::new(),
    };
    if s.scenario == Scenario::Server {
        match s.token_bounds {
            None => {
                let bound = s.target_latency.map_or(u64::MAX, |d| d.as_nanos() as u64);
                if samples.percentile(s.target_latency_percentile) > bound {
                    perf.met = false;
                    perf.recommendation = "Reduce target QPS to improve latency.".into();
                }
            }
            Some(b) => {
                if ttft.percentile(s.target_latency_percentile) > b.ttft.as_nanos() as u64 {
                    perf.met = false;
                    perf.recommendation =
                        "TTFT constrain not met: Reduce target QPS to improve latency.".into();
                }
                if tpot.percentile(s.target_latency_percentile) > b.tpot.as_nanos() as u64 {
                    perf.met = false;
                    let text = "TPOT constrain not met: Reduce target QPS to improve latency.";
                    if perf.recommendation.is_empty() {
                        perf.recommendation = text.into();
                    } else {
                        perf.recommendation.push_str(&format!("\n * {text}"));
                    }
                }
            }
        }
    }

    let mut finder = MinPassingQueries::default();
    let n = result.queries_issued as i64;
    let mut early = EarlyStop::default();
    let early_met;
    let mut texts = Vec::new();
    if accuracy {
        early_met = true;
    } else if !tokens {
        let bound = s.target_latency.map(|d| d.as_nanos() as u64);
        let (met, text) = early_stopping(&mut finder, s, n, &samples, &queries, bound, &mut early);
        early_met = met;
        texts.push(("Early Stopping Result:".to_string(), text));
    } else {
        let b = s
            .token_bounds
            .map(|b| (b.ttft.as_nanos() as u64, b.tpot.as_nanos() as u64));
        let (mut tpot_early, mut ttft_early) = (EarlyStop::default(), EarlyStop::default());
        let (tpot_met, tpot_text) = early_stopping(
            &mut finder,
            s,
            n,
            &tpot,
            &queries,
            b.map(|b| b.1),
            &mut tpot_early,
        );
        // LoadGen evaluates TTFT only when TPOT passed (`&&`), leaving its
        // text empty otherwise.
        let (ttft_met, ttft_text) = if tpot_met {
            early_stopping(
                &mut finder,
                s,
                n,
                &ttft,
                &queries,
                b.map(|b| b.0),
                &mut ttft_early,
            )
        } else {
            (false, String::new())
        };
        early_met = tpot_met && ttft_met;
        early = ttft_early;
        texts.push(("TTFT Early Stopping Result:".to_string(), ttft_text));
        texts.push(("TPOT Early Stopping Result:".to_string(), tpot_text));
    }
    let overlatency_count = match (s.scenario, s.target_latency) {
        (Scenario::Server, Some(bound)) => samples
            .sorted
            .iter()
            .filter(|&&l| l > bound.as_nanos() as u64)
            .count() as u64,
        _ => 0,
    };
    Summary {
        sut_name: sut_name.to_string(),
        settings: s.clone(),
        samples,
        queries,
        ttft,
        tpot,
        token_count,
        min_duration,
        min_queries,
        perf_constraints: perf,
        early_stopping: Check {
            met: early_met,
            recommendation: String::new(),
        },
        early_stopping_text: if s.scenario == Scenario::Offline || accuracy {
            Vec::new()
        } else {
            texts
        },
        early_stopping_latency_ss: early.ss,
        early_stopping_latency_ms: early.ms,
        overlatency_count,
        result,
    }
}

#[derive(Debug, Default)]
struct EarlyStop {
    ss: Option<u64>,
    ms: Option<u64>,
}

/// `PerformanceSummary::EarlyStopping` for one latency series.
fn early_stopping(
    finder: &mut MinPassingQueries,
    s: &TestSettings,
    queries_issued: i64,
    samples: &Latencies,
    queries: &Latencies,
    bound: Option<u64>,
    out: &mut EarlyStop,
) -> (bool, String) {
    let p = s.target_latency_percentile;
    let pct = |p: f64| format!("{:.1}", p * 100.0);
    let estimate = |lat: &Latencies, index: usize| lat.sorted.get(index).copied().unwrap_or(0);
    match s.scenario {
        Scenario::Offline => (true, String::new()),
        Scenario::Server => {
            let bound = bound.unwrap_or(u64::MAX);
            let over = samples.sorted.iter().filter(|&&l| l > bound).count() as i64;
            match server_check(finder, queries_issued, over, p) {
                Ok(()) => (true, " * Run successful.".into()),
                Err(more) => (
                    false,
                    format!(
                        " * Run unsuccessful.\n * Processed {queries_issued} queries.\n * Would need to run at least {more} more queries,\n with the run being successful if every additional\n query were under latency."
                    ),
                ),
            }
        }
        Scenario::SingleStream | Scenario::MultiStream => {
            let series = if s.scenario == Scenario::MultiStream {
                queries
            } else {
                samples
            };
            let (needed, discarded, index) = match percentile_estimate(finder, queries_issued, p) {
                Estimate::TooFew { needed } => {
                    return (
                        false,
                        format!(
                            " * Only processed {queries_issued} queries.\n * Need to process at least {needed} queries for early stopping."
                        ),
                    );
                }
                Estimate::Found {
                    needed,
                    discarded,
                    index,
                } => (needed, discarded, index),
            };
            let value = estimate(series, index);
            let mut text = format!(
                " * Processed at least {needed} queries ({queries_issued}).\n * Would discard {discarded} highest latency queries.\n * Early stopping {}th percentile estimate: {value}",
                pct(p)
            );
            if s.scenario == Scenario::MultiStream {
                out.ms = Some(value);
                return (true, text);
            }
            out.ss = Some(value);
            // The 99th percentile too (MultiStream inferred from SingleStream).
            match percentile_estimate(finder, queries_issued, 0.99) {
                Estimate::TooFew { needed } => text.push_str(&format!(
                    "\n * Not enough queries processed for {}th percentile\n early stopping estimate (would need to process at\n least {needed} total queries).",
                    pct(0.99)
                )),
                Estimate::Found { index, .. } => {
                    let v = estimate(samples, index);
                    out.ms = Some(v);
                    text.push_str(&format!(
                        "\n * Early stopping {}th percentile estimate: {v}",
                        pct(0.99)
                    ));
                }
            }
            (true, text)
        }
    }
}
