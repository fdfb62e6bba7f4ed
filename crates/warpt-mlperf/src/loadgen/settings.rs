//! What a LoadGen test asks for: the scenario, the rules it is held to, and
//! every effective setting (LoadGen's `TestSettingsInternal`).

use std::time::Duration;

/// LoadGen's four scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// One sample per query; the next query when the previous completes.
    SingleStream,
    /// `samples_per_query` samples per query, issued back to back.
    MultiStream,
    /// One-sample queries arriving as a Poisson process.
    Server,
    /// Every sample in one query.
    Offline,
}

impl Scenario {
    /// Every scenario, in LoadGen's order.
    pub const ALL: [Scenario; 4] = [
        Scenario::SingleStream,
        Scenario::MultiStream,
        Scenario::Server,
        Scenario::Offline,
    ];

    /// LoadGen's name (`SingleStream`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Scenario::SingleStream => "SingleStream",
            Scenario::MultiStream => "MultiStream",
            Scenario::Server => "Server",
            Scenario::Offline => "Offline",
        }
    }

    /// The scenario called `name` (case-insensitive, `-`/`_` ignored).
    pub fn parse(name: &str) -> Result<Self, String> {
        let key: String = name
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        Scenario::ALL
            .into_iter()
            .find(|s| s.name().to_ascii_lowercase() == key)
            .ok_or_else(|| {
                format!("unknown scenario '{name}': SingleStream, MultiStream, Server or Offline")
            })
    }
}

/// Which rule set fills the settings the user did not give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    /// Minutes, not hours: the run's `--duration` as the minimum duration
    /// and LoadGen's library default of 100 queries.
    Quick,
    /// MLPerf's submission rules: 600 s and `mlperf.conf`'s query counts.
    Official,
}

impl Rules {
    /// `quick` or `official`.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "quick" => Ok(Rules::Quick),
            "official" => Ok(Rules::Official),
            other => Err(format!("unknown rules '{other}': quick or official")),
        }
    }

    /// The name as the parameter takes it.
    pub fn name(self) -> &'static str {
        match self {
            Rules::Quick => "quick",
            Rules::Official => "official",
        }
    }
}

/// LoadGen's test modes that warpt runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Timed: latencies and throughput, validity.
    PerformanceOnly,
    /// Every sample of the library once, every response logged.
    AccuracyOnly,
    /// Server only: the highest target QPS that stays valid.
    FindPeakPerformance,
}

impl Mode {
    /// LoadGen's name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::PerformanceOnly => "PerformanceOnly",
            Mode::AccuracyOnly => "AccuracyOnly",
            Mode::FindPeakPerformance => "FindPeakPerformance",
        }
    }
}

/// The latency bounds of an LLM in the Server scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBounds {
    /// Time to first token.
    pub ttft: Duration,
    /// Time per output token.
    pub tpot: Duration,
}

/// The effective settings of one test.
#[derive(Debug, Clone, PartialEq)]
pub struct TestSettings {
    /// The scenario.
    pub scenario: Scenario,
    /// The mode.
    pub mode: Mode,
    /// The rule set the defaults came from.
    pub rules: Rules,
    /// Samples per query (MultiStream 8, Offline all of them, else 1).
    pub samples_per_query: u64,
    /// Server: the arrival rate; Offline: the expected throughput;
    /// SingleStream / MultiStream: 1 / expected latency.
    pub target_qps: f64,
    /// Server: the latency bound (`None` elsewhere, and for LLMs, which
    /// are bound by `token_bounds`).
    pub target_latency: Option<Duration>,
    /// The percentile the metric and the bound are about.
    pub target_latency_percentile: f64,
    /// LLMs: TTFT and TPOT are recorded and bound (Server).
    pub token_bounds: Option<TokenBounds>,
    /// The run lasts at least this long.
    pub min_duration: Duration,
    /// No query is issued after this (`None`: no limit).
    pub max_duration: Option<Duration>,
    /// The run issues at least this many queries.
    pub min_query_count: u64,
    /// Samples loaded for the performance run.
    pub performance_sample_count: u64,
    /// Samples in the whole library (AccuracyOnly issues each once).
    pub total_sample_count: u64,
    /// Seed of the sample indices.
    pub sample_index_rng_seed: u64,
    /// Seed of the Server arrival schedule.
    pub schedule_rng_seed: u64,
    /// FindPeakPerformance: decimals of QPS the search resolves.
    pub find_peak_decimals: u32,
    /// FindPeakPerformance: each widening multiplies QPS by `1 + step`.
    pub find_peak_step: f64,
}

impl TestSettings {
    /// LoadGen's `min_sample_count`.
    pub fn min_sample_count(&self) -> u64 {
        self.min_query_count * self.samples_per_query
    }

    /// The settings as `Test Parameters Used` lists them (name, value).
    pub fn parameters(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![
            ("samples_per_query", self.samples_per_query.to_string()),
            ("target_qps", fmt_g(self.target_qps)),
        ];
        match self.token_bounds {
            None => v.push((
                "target_latency (ns)",
                self.target_latency.map_or(0, |d| d.as_nanos()).to_string(),
            )),
            Some(b) => {
                v.push(("ttft_latency (ns)", b.ttft.as_nanos().to_string()));
                v.push(("tpot_latency (ns)", b.tpot.as_nanos().to_string()));
            }
        }
        let max_async = match self.scenario {
            Scenario::Server => 0,
            _ => 1,
        };
        v.extend([
            ("max_async_queries", max_async.to_string()),
            (
                "min_duration (ms)",
                self.min_duration.as_millis().to_string(),
            ),
            (
                "max_duration (ms)",
                self.max_duration.map_or(0, |d| d.as_millis()).to_string(),
            ),
            ("min_query_count", self.min_query_count.to_string()),
            ("max_query_count", "0".to_string()),
            ("qsl_rng_seed", "0".to_string()),
            (
                "sample_index_rng_seed",
                self.sample_index_rng_seed.to_string(),
            ),
            ("schedule_rng_seed", self.schedule_rng_seed.to_string()),
            ("accuracy_log_rng_seed", "0".to_string()),
            ("accuracy_log_probability", "0".to_string()),
            ("accuracy_log_sampling_target", "0".to_string()),
            ("print_timestamps", "0".to_string()),
            ("performance_issue_unique", "0".to_string()),
            ("performance_issue_same", "0".to_string()),
            ("performance_issue_same_index", "0".to_string()),
            (
                "performance_sample_count",
                self.performance_sample_count.to_string(),
            ),
            ("accuracy_sample_count", self.total_sample_count.to_string()),
        ]);
        v
    }
}

/// A double as C++ streams print it by default (`%g`, six significant digits).
pub fn fmt_g(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let exp = x.abs().log10().floor() as i32;
    if !(-5..6).contains(&exp) {
        let s = format!("{x:.5e}");
        let (mantissa, e) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = trim_zeros(mantissa);
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    trim_zeros(&format!("{x:.decimals$}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// The minimum query counts of MLPerf's `mlperf.conf` for a model, by
/// scenario: SingleStream and Server keep LoadGen's default of 100,
/// MultiStream needs 662, Offline the model's dataset-sized count.
pub fn official_min_query_count(scenario: Scenario, offline_count: u64) -> u64 {
    match scenario {
        Scenario::SingleStream | Scenario::Server => 100,
        Scenario::MultiStream => 662,
        Scenario::Offline => offline_count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_cpp_streams_do() {
        assert_eq!(fmt_g(500.0), "500");
        assert_eq!(fmt_g(1735.2412), "1735.24");
        assert_eq!(fmt_g(0.5), "0.5");
        assert_eq!(fmt_g(1234567.0), "1.23457e+06");
        assert_eq!(fmt_g(0.0), "0");
    }

    #[test]
    fn scenarios_parse_loosely() {
        assert_eq!(Scenario::parse("single_stream"), Ok(Scenario::SingleStream));
        assert_eq!(Scenario::parse("Offline"), Ok(Scenario::Offline));
        assert!(Scenario::parse("batch").is_err());
    }
}
