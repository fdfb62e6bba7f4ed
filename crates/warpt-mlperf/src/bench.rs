//! What every MLPerf benchmark of the suite shares: its parameters, the
//! settings they make under each rule set, the warm-up that sizes the
//! Offline query, the run (or the peak search), the logs and the metrics.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use warpt_harness::{BenchmarkError, Measure, RunContext};
use warpt_model::{BenchmarkComponent, BenchmarkKind, BenchmarkSpec, Param, ParamValue, Params};
use warpt_models::packed::Precision;

use crate::loadgen::{
    self, Mode, Rules, Scenario, Summary, SystemUnderTest, TestSettings, TokenBounds, logs, peak,
};

/// What differs between the suite's models.
#[derive(Debug, Clone, Copy)]
pub struct ModelRules {
    /// The model's name in `mlperf.conf` (for the log directory).
    pub name: &'static str,
    /// Server latency bound, ms (`mlperf.conf`).
    pub server_latency_ms: f64,
    /// Official Offline minimum sample count (`mlperf.conf`).
    pub offline_min_count: u64,
    /// Samples in the library.
    pub library: u64,
    /// LLMs: default TTFT and TPOT bounds, ms.
    pub token_bounds_ms: Option<(f64, f64)>,
}

/// What a scenario benchmark's spec says beyond what they all share.
pub struct SpecParts<'a> {
    /// Benchmark name.
    pub name: &'a str,
    /// Its default scenario.
    pub scenario: Scenario,
    /// `Some(batch)`: a model SUT, with `device` (one of `devices`),
    /// `model_dir` and `batch` (this default).
    pub batch: Option<i64>,
    /// The devices a model SUT runs on.
    pub devices: &'a [&'a str],
    /// Components it exercises.
    pub components: Vec<BenchmarkComponent>,
    /// What it measures and how it is validated.
    pub description: &'a str,
    /// Its own parameters.
    pub params: Vec<Param>,
    /// The rules across its parameters (calling [`check_common`]).
    pub check: fn(&Params) -> Result<(), String>,
    /// Metrics beyond the scenarios' own.
    pub metrics: &'a [&'a str],
}

/// The spec of a scenario benchmark: the shared parameters (and a model
/// SUT's), then its own.
pub fn scenario_spec(parts: SpecParts<'_>) -> BenchmarkSpec {
    let mut b = BenchmarkSpec::builder(crate::SUITE, parts.name)
        .kind(BenchmarkKind::Application)
        .description(parts.description)
        .duration(10.0)
        .params(common_params(parts.scenario));
    for c in parts.components {
        b = b.component(c);
    }
    if let Some(batch) = parts.batch {
        b = b.params(model_params(batch, parts.devices));
    }
    b = b
        .params(parts.params)
        .check(parts.check)
        .timeouts(crate::LIMITS);
    for m in crate::scenario_metrics()
        .into_iter()
        .chain(parts.metrics.iter().map(|m| m.to_string()))
    {
        b = b.metric(m);
    }
    b.build()
}

/// The `precision` parameter of a model SUT whose products run on
/// warpt's GEMM engine (f32 when absent).
pub fn precision(params: &Params) -> Result<Precision, String> {
    match get(params, "precision").and_then(ParamValue::as_str) {
        None => Ok(Precision::F32),
        Some(name) => Precision::parse(name).map_err(|e| format!("parameter 'precision': {e}")),
    }
}

/// Times become `Duration`s: bounded before anything runs (a week).
pub const WEEK_S: f64 = 7.0 * 24.0 * 3600.0;

/// The parameters every MLPerf benchmark takes.
pub fn common_params(scenario: Scenario) -> Vec<Param> {
    vec![
        Param::choice(
            "scenario",
            scenario.name(),
            &["SingleStream", "MultiStream", "Server", "Offline"],
        )
        .help("SingleStream, MultiStream, Server or Offline"),
        Param::choice("rules", "quick", &["quick", "official"]).help(
            "quick (--duration as the minimum duration, minutes here) or official (600 s, mlperf.conf query counts)",
        ),
        Param::float("target_qps", 0.0, 0.0..=1e9).unit("queries/s").help(
            "Server arrival rate (queries/s); 0 = half the throughput measured in warm-up. Offline: expected samples/s; 0 = measured",
        ),
        Param::flag("find_peak", false)
            .help("Server: search the highest valid target_qps (LoadGen's FindPeakPerformance)"),
        Param::float("min_duration_s", 0.0, 0.0..=WEEK_S)
            .unit("s")
            .help("minimum duration; 0 = the rules' value"),
        Param::int("min_query_count", 0, 0..).help(
            "minimum queries; 0 = the rules' value (quick: 100, MultiStream 662, Server 459, Offline 1 sample; official: mlperf.conf's)",
        ),
        Param::float("latency_bound_ms", 0.0, 0.0..=WEEK_S * 1e3)
            .unit("ms")
            .help("Server p99 latency bound; 0 = mlperf.conf's for the model"),
        Param::flag("accuracy", false)
            .help("run AccuracyOnly: every sample once, responses in mlperf_log_accuracy.json"),
        Param::output_path("log_dir", "").help(
            "where the mlperf_log_* files go; empty = ./mlperf_logs/<benchmark>/<scenario>",
        ),
        Param::int("schedule_rng_seed", -1, -1..).help(
            "seed of the Server schedule (drawn as LoadGen draws it: the same seed gives LoadGen's arrivals); -1 = from --seed, or mlperf.conf's under rules=official",
        ),
        Param::int("sample_index_rng_seed", -1, -1..).help(
            "seed of the sample indices; -1 = from --seed, or mlperf.conf's under rules=official",
        ),
        Param::int("samples", 0, 0..).help(
            "samples in the library (performance and accuracy); 0 = the model's dataset size",
        ),
    ]
}

/// The parameters of a model SUT (besides [`common_params`]).
pub fn model_params(batch: i64, devices: &[&str]) -> Vec<Param> {
    vec![
        Param::choice("device", "cpu", devices).help(warpt_models::device::HELP),
        Param::input_path("model_dir", "")
            .help("real weights instead of the seeded ones (see docs/mlperf.md)"),
        Param::int("batch", batch, 1..).help("most samples the SUT computes at once"),
    ]
}

/// A bound in milliseconds of a token's timing (TTFT, TPOT).
pub fn token_bound(name: &str, help: &str) -> Param {
    Param::float(name, 0.0, 0.0..=WEEK_S * 1e3)
        .unit("ms")
        .help(help)
}

/// `mlperf.conf`'s seeds, used under `rules=official`.
pub const OFFICIAL_SCHEDULE_SEED: u64 = 16_159_082_839_903_944_936;
/// `mlperf.conf`'s sample index seed.
pub const OFFICIAL_SAMPLE_SEED: u64 = 2_747_215_439_041_700_203;

fn get<'p>(params: &'p Params, key: &str) -> Option<&'p ParamValue> {
    params.get(key)
}

/// The rules across the common parameters: peaks are searched in the
/// Server scenario, and not in an accuracy run.
pub fn check_common(params: &Params) -> Result<(), String> {
    let s = |k: &str| get(params, k).and_then(ParamValue::as_str).unwrap_or("");
    let scenario =
        Scenario::parse(s("scenario")).map_err(|e| format!("parameter 'scenario': {e}"))?;
    let find_peak = get(params, "find_peak")
        .and_then(ParamValue::as_bool)
        .unwrap_or(false);
    if find_peak && scenario != Scenario::Server {
        return Err(format!(
            "parameter 'find_peak': LoadGen finds peaks in the Server scenario only, not {}",
            scenario.name()
        ));
    }
    let accuracy = get(params, "accuracy")
        .and_then(ParamValue::as_bool)
        .unwrap_or(false);
    if find_peak && accuracy {
        return Err("parameters 'find_peak' and 'accuracy' exclude each other".into());
    }
    Ok(())
}

fn invalid(key: &str, reason: String) -> BenchmarkError {
    BenchmarkError::InvalidParam {
        key: key.into(),
        reason,
    }
}

/// How many times an Offline query sized from an estimate is sized again
/// from the rate it measured, when it finished before the minimum duration.
const OFFLINE_RESIZES: u32 = 3;

/// The effective settings of a test from the context's parameters, before
/// the warm-up fills in what depends on the SUT's speed.
pub fn settings(
    ctx: &RunContext,
    model: &ModelRules,
    samples_per_query_ms: u64,
) -> Result<TestSettings, BenchmarkError> {
    let scenario =
        Scenario::parse(ctx.str_param("scenario")?).map_err(|e| invalid("scenario", e))?;
    let rules = Rules::parse(ctx.str_param("rules")?).map_err(|e| invalid("rules", e))?;
    let mode = if ctx.bool_param("accuracy")? {
        Mode::AccuracyOnly
    } else if ctx.bool_param("find_peak")? {
        Mode::FindPeakPerformance
    } else {
        Mode::PerformanceOnly
    };
    let min_duration = match ctx.float_param("min_duration_s")? {
        d if d > 0.0 => Duration::from_secs_f64(d),
        _ => match rules {
            Rules::Quick => ctx.duration,
            Rules::Official => Duration::from_secs(600),
        },
    };
    let min_query_count = match ctx.int_param("min_query_count", 0)? {
        n if n > 0 => n as u64,
        _ => match (rules, scenario) {
            // Quick: LoadGen's library default of 100, raised to the
            // fewest queries that can pass early stopping at p99
            // (MultiStream 662, Server 459 with none over the bound), and
            // a single sample for Offline, whose size comes from the duration.
            (Rules::Quick, Scenario::Offline) => 1,
            (Rules::Quick, Scenario::MultiStream) => 662,
            (Rules::Quick, Scenario::Server) => 459,
            (Rules::Quick, Scenario::SingleStream) => 100,
            (Rules::Official, s) => {
                loadgen::settings::official_min_query_count(s, model.offline_min_count)
            }
        },
    };
    let library = match ctx.int_param("samples", 0)? {
        n if n > 0 => n as u64,
        _ => model.library,
    };
    let bound_ms = match ctx.float_param("latency_bound_ms")? {
        b if b > 0.0 => b,
        _ => model.server_latency_ms,
    };
    let token_bounds = match model.token_bounds_ms {
        None => None,
        Some((ttft, tpot)) => {
            let pick = |key: &str, default: f64| -> Result<f64, BenchmarkError> {
                Ok(match ctx.float_param(key)? {
                    v if v > 0.0 => v,
                    _ => default,
                })
            };
            Some(TokenBounds {
                ttft: Duration::from_secs_f64(pick("ttft_bound_ms", ttft)? / 1e3),
                tpot: Duration::from_secs_f64(pick("tpot_bound_ms", tpot)? / 1e3),
            })
        }
    };
    Ok(TestSettings {
        scenario,
        mode,
        rules,
        samples_per_query: match scenario {
            Scenario::MultiStream => samples_per_query_ms,
            _ => 1,
        },
        target_qps: ctx.float_param("target_qps")?,
        target_latency: (scenario == Scenario::Server && token_bounds.is_none())
            .then(|| Duration::from_secs_f64(bound_ms / 1e3)),
        target_latency_percentile: match scenario {
            Scenario::SingleStream => 0.90,
            _ => 0.99,
        },
        token_bounds,
        min_duration,
        max_duration: None,
        min_query_count,
        performance_sample_count: library,
        total_sample_count: library,
        sample_index_rng_seed: seed(
            ctx,
            "sample_index_rng_seed",
            rules,
            OFFICIAL_SAMPLE_SEED,
            0x5a4d_706c,
        )?,
        schedule_rng_seed: seed(
            ctx,
            "schedule_rng_seed",
            rules,
            OFFICIAL_SCHEDULE_SEED,
            0x7363_6864,
        )?,
        find_peak_decimals: 1,
        find_peak_step: 1.0,
    })
}

/// A seed parameter: given (>= 0), mlperf.conf's under official rules, or
/// derived from the run's seed.
fn seed(
    ctx: &RunContext,
    key: &str,
    rules: Rules,
    official: u64,
    salt: u64,
) -> Result<u64, BenchmarkError> {
    let given = ctx.int_param(key, -1)?;
    Ok(match (given, rules) {
        (g, _) if g >= 0 => g as u64,
        (_, Rules::Official) => official,
        (_, Rules::Quick) => ctx.seed ^ salt,
    })
}

/// Warms the SUT up for the context's burn-in (and at least two bursts)
/// with Offline bursts of `workers × max_batch` samples; returns its
/// throughput (samples/s).
pub fn warm_up(
    sut: &dyn SystemUnderTest,
    base: &TestSettings,
    burnin: Duration,
) -> Result<f64, BenchmarkError> {
    let burst = (sut.workers().max(1) * sut.max_batch().max(1)) as u64;
    let mut s = base.clone();
    s.scenario = Scenario::Offline;
    s.mode = Mode::PerformanceOnly;
    s.samples_per_query = burst;
    s.min_query_count = 1;
    s.min_duration = Duration::ZERO;
    // At least two bursts (the first pays for cold caches and first-touch
    // allocation); the fastest is the estimate, as a user tuning LoadGen's
    // expected QPS would take the steady state.
    let start = Instant::now();
    let mut best = 0f64;
    for round in 0.. {
        let r = loadgen::engine::run(sut, &s).map_err(BenchmarkError::Failed)?;
        best = best.max(burst as f64 / r.max_latency_s.max(1e-9));
        if round >= 1 && start.elapsed() >= burnin {
            break;
        }
    }
    Ok(best)
}

/// Completes `base` with what the warm-up measured; an Offline query is
/// rounded up to whole bursts of `burst` samples (the SUT's workers ×
/// batch), so its last batch is not a lone sample the estimate missed.
pub fn size_for(base: &TestSettings, throughput: f64, burst: u64) -> TestSettings {
    let mut s = base.clone();
    match s.scenario {
        Scenario::Server if s.target_qps <= 0.0 => s.target_qps = 0.5 * throughput,
        Scenario::Offline => {
            if s.target_qps <= 0.0 {
                s.target_qps = throughput;
            }
            if s.mode != Mode::AccuracyOnly {
                // LoadGen's Offline query: 10% more than the duration needs.
                let needed = (1.1 * s.min_duration.as_secs_f64() * s.target_qps) as u64;
                let burst = burst.max(1);
                s.samples_per_query = s.min_query_count.max(needed).max(1).div_ceil(burst) * burst;
                s.min_query_count = 1;
            } else {
                s.samples_per_query = s.total_sample_count;
            }
        }
        Scenario::SingleStream | Scenario::MultiStream => {
            // 1 / expected latency, as LoadGen's target_qps for these.
            s.target_qps = throughput / s.samples_per_query.max(1) as f64;
        }
        Scenario::Server => {}
    }
    s
}

/// The directory the logs go to.
pub fn log_dir(
    ctx: &RunContext,
    bench: &str,
    scenario: Scenario,
) -> Result<PathBuf, BenchmarkError> {
    let dir = ctx.str_param("log_dir")?;
    Ok(if dir.is_empty() {
        PathBuf::from("mlperf_logs")
            .join(bench)
            .join(scenario.name())
    } else {
        PathBuf::from(dir)
    })
}

/// One test, or a peak search, with the logs written.
pub struct Outcome {
    /// The final test's summary.
    pub summary: Summary,
    /// Peak search: every target tried and whether it met the bound.
    pub trials: Vec<peak::Trial>,
    /// Where the logs are.
    pub log_dir: PathBuf,
    /// Offline: the first query (sized from the warm-up) ended before the
    /// minimum duration, and the test ran again sized from its own rate.
    pub offline_resized: bool,
}

/// `sut` run under `model`'s rules with the run's settings: warpt's
/// metrics and details, and the outcome they came from.
pub fn measure_sut(
    ctx: &RunContext,
    measure: &mut Measure<'_>,
    sut: &dyn SystemUnderTest,
    model: &ModelRules,
    bench: &str,
) -> Result<(warpt_harness::Measured, Outcome), BenchmarkError> {
    let base = settings(ctx, model, 8)?;
    let outcome = run(ctx, measure, sut, &base, bench)?;
    Ok((crate::metrics::measured(&outcome, measure), outcome))
}

/// Warms up, runs the test (or the peak search) and writes the logs.
pub fn run(
    ctx: &RunContext,
    measure: &mut Measure<'_>,
    sut: &dyn SystemUnderTest,
    base: &TestSettings,
    bench: &str,
) -> Result<Outcome, BenchmarkError> {
    let throughput = warm_up(sut, base, ctx.burnin)?;
    measure.begin_measurement();
    let burst = (sut.workers().max(1) * sut.max_batch().max(1)) as u64;
    let settings = size_for(base, throughput, burst);
    let mut offline_resized = false;
    let (summary, trials) = if settings.mode == Mode::FindPeakPerformance {
        let mut s = settings.clone();
        s.mode = Mode::PerformanceOnly;
        let search =
            peak::find_peak(&s, |t| loadgen::run_test(sut, t)).map_err(BenchmarkError::Failed)?;
        let mut summary = search.peak;
        summary.settings.mode = Mode::FindPeakPerformance;
        (summary, search.trials)
    } else {
        let mut summary = loadgen::run_test(sut, &settings).map_err(BenchmarkError::Failed)?;
        // An Offline query sized from the warm-up's estimate can finish
        // before the minimum duration when the machine sped up meanwhile;
        // with an estimated (not given) QPS, size it again from the rate
        // the run itself measured, as a LoadGen user would — up to three
        // times, since a machine that speeds up once (a neighbour's load
        // ending) can speed up again.
        let mut resizes = 0;
        while settings.scenario == Scenario::Offline
            && base.target_qps <= 0.0
            && settings.mode == Mode::PerformanceOnly
            && !summary.min_duration.met
            && resizes < OFFLINE_RESIZES
        {
            let redo = size_for(base, summary.samples_per_second(), burst);
            summary = loadgen::run_test(sut, &redo).map_err(BenchmarkError::Failed)?;
            offline_resized = true;
            resizes += 1;
        }
        (summary, Vec::new())
    };
    let dir = log_dir(ctx, bench, settings.scenario)?;
    logs::write_all(&summary, &dir).map_err(|e| {
        BenchmarkError::Failed(format!("writing the logs to {}: {e}", dir.display()))
    })?;
    let log_dir = std::path::absolute(&dir).unwrap_or(dir);
    Ok(Outcome {
        summary,
        trials,
        log_dir,
        offline_resized,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::resnet50_infer::MODEL;

    fn ctx(overrides: &[(&str, ParamValue)]) -> RunContext {
        let mut params: Params = common_params(Scenario::SingleStream)
            .iter()
            .map(|p| (p.name().to_string(), p.default_value().clone()))
            .collect();
        for (k, v) in overrides {
            params.insert(k.to_string(), v.clone());
        }
        RunContext {
            params,
            seed: 42,
            duration: Duration::from_secs(7),
            burnin: Duration::from_secs(1),
            target_rel_ci: 0.01,
            clock_probe: None,
        }
    }

    fn settings_of(overrides: &[(&str, ParamValue)]) -> TestSettings {
        settings(&ctx(overrides), &MODEL, 8).expect("settings")
    }

    #[test]
    fn quick_rules_take_the_runs_duration_and_what_early_stopping_needs() {
        let s = settings_of(&[]);
        assert_eq!(
            (s.rules, s.scenario),
            (Rules::Quick, Scenario::SingleStream)
        );
        assert_eq!(s.min_duration, Duration::from_secs(7));
        assert_eq!(s.min_query_count, 100);
        assert_eq!(s.target_latency_percentile, 0.9);
        let ms = settings_of(&[("scenario", ParamValue::Str("MultiStream".into()))]);
        assert_eq!((ms.min_query_count, ms.samples_per_query), (662, 8));
        let server = settings_of(&[("scenario", ParamValue::Str("Server".into()))]);
        assert_eq!(server.min_query_count, 459);
        assert_eq!(server.target_latency, Some(Duration::from_millis(15)));
        // Seeds come from --seed, differently for each stream.
        assert_ne!(server.schedule_rng_seed, server.sample_index_rng_seed);
    }

    #[test]
    fn official_rules_are_mlperf_conf() {
        let official = [("rules", ParamValue::Str("official".into()))];
        let s = settings_of(&official);
        assert_eq!(s.min_duration, Duration::from_secs(600));
        assert_eq!(s.schedule_rng_seed, OFFICIAL_SCHEDULE_SEED);
        assert_eq!(s.sample_index_rng_seed, OFFICIAL_SAMPLE_SEED);
        let off = settings_of(&[
            official[0].clone(),
            ("scenario", ParamValue::Str("Offline".into())),
        ]);
        assert_eq!(off.min_query_count, 24576);
        let ms = settings_of(&[
            official[0].clone(),
            ("scenario", ParamValue::Str("MultiStream".into())),
        ]);
        assert_eq!(ms.min_query_count, 662);
        // Explicit values win over either rule set.
        let given = settings_of(&[
            official[0].clone(),
            ("min_duration_s", ParamValue::Float(2.5)),
            ("min_query_count", ParamValue::Int(7)),
            ("schedule_rng_seed", ParamValue::Int(0)),
        ]);
        assert_eq!(given.min_duration, Duration::from_millis(2500));
        assert_eq!(given.min_query_count, 7);
        assert_eq!(given.schedule_rng_seed, 0);
    }

    #[test]
    fn offline_queries_are_sized_as_loadgen_sizes_them() {
        let base = settings_of(&[("scenario", ParamValue::Str("Offline".into()))]);
        // 1.1 x 7 s x 10 samples/s = 77, rounded up to whole bursts of 8.
        let s = size_for(&base, 10.0, 8);
        assert_eq!(s.samples_per_query, 80);
        assert_eq!(s.min_query_count, 1);
        assert_eq!(s.target_qps, 10.0);
        // Server's automatic rate is half the measured throughput.
        let server = settings_of(&[("scenario", ParamValue::Str("Server".into()))]);
        assert_eq!(size_for(&server, 10.0, 8).target_qps, 5.0);
    }
}
