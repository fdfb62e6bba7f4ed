//! `mlperf_external`: runs an official MLPerf reference implementation
//! (or any program driven by the official LoadGen) and reads the
//! `mlperf_log_summary.txt` / `mlperf_log_detail.txt` it leaves into warpt
//! metrics. An INVALID result fails with LoadGen's own reasons.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime};

use warpt_harness::{Benchmark, BenchmarkError, Measure, MeasureResult, Measured, RunContext};
use warpt_model::{
    BenchmarkComponent, BenchmarkKind, BenchmarkMetric, BenchmarkSpec, Param, ParamValue, Params,
    Validation,
};

use crate::loadgen::logs::SUMMARY_FILE;
use crate::loadgen::parse::{ParsedLog, read_dir};
use crate::metrics::single as metric;

/// Benchmark name within the suite.
pub const NAME: &str = "mlperf_external";

/// How to get an official harness, said when none is given.
pub const HOW_TO_GET: &str = "no command given: pass --param command='python main.py --scenario Offline ...' \
     (an MLPerf reference implementation from github.com/mlcommons/inference, with LoadGen from PyPI: \
     pip install mlcommons-loadgen) and --param workdir=DIR where it runs and leaves its mlperf_log_*";

/// The spec of `mlperf_external`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::System)
        .kind(BenchmarkKind::Application)
        .description(
            "An official MLPerf harness: runs `command` (a shell command line) in `workdir`, then reads the \
             mlperf_log_summary.txt / mlperf_log_detail.txt LoadGen wrote there (or under `log_dir`) into \
             latency_p90_ms / latency_p99_ms / qps / samples_per_s / tokens_per_s. INVALID results fail with \
             LoadGen's recommendations; no command is `skipped`.",
        )
        .duration(10.0)
        .external_tool("mlperf-loadgen")
        .param(Param::command("command", "").help("the harness's command line, run with sh -c"))
        .param(
            Param::output_path("workdir", "")
                .help("directory the command runs in (default: the current one)"),
        )
        .param(Param::input_path("log_dir", "").help(
            "where the logs appear, relative to workdir (default: the newest mlperf_log_summary.txt under workdir)",
        ))
        .check(check_params)
        .timeouts(crate::LIMITS)
        .metric("latency_p90_ms")
        .metric("latency_p99_ms")
        .metric("qps")
        .metric("samples_per_s")
        .metric("tokens_per_s")
        .metric("ttft_ms")
        .metric("tpot_ms")
        .build()
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    let dir = params
        .get("workdir")
        .and_then(ParamValue::as_str)
        .unwrap_or("");
    if !dir.is_empty() && !Path::new(dir).is_dir() {
        return Err(format!("parameter 'workdir': {dir} is not a directory"));
    }
    Ok(())
}

/// The warpt metrics of a parsed log: the scenario's headline (the
/// early-stopping estimate where LoadGen made one), tokens/s and the
/// median TTFT / TPOT of LLM runs.
pub fn metrics_of(log: &ParsedLog) -> Result<Vec<BenchmarkMetric>, String> {
    let ms = |ns: f64| ns / 1e6;
    let mut out = Vec::new();
    let estimate = |key: &str| log.detail_f64(key).filter(|v| *v > 0.0);
    match log.scenario_key().as_str() {
        "SingleStream" => {
            let v = estimate("early_stopping_latency_ss")
                .or_else(|| log.value_like("90.0th percentile latency", ""))
                .ok_or("the SingleStream summary has no 90th percentile latency")?;
            out.push(metric("latency_p90_ms", ms(v), "ms", false));
        }
        "MultiStream" => {
            let v = estimate("early_stopping_latency_ms")
                .or_else(|| log.value_like("99.0th percentile latency", ""))
                .ok_or("the MultiStream summary has no 99th percentile latency")?;
            out.push(metric("latency_p99_ms", ms(v), "ms", false));
        }
        "Server" => {
            let v = log
                .value("Completed samples per second")
                .ok_or("the Server summary has no 'Completed samples per second'")?;
            out.push(metric("qps", v, "queries/s", true));
        }
        "Offline" => {
            let v = log
                .value("Samples per second")
                .ok_or("the Offline summary has no 'Samples per second'")?;
            out.push(metric("samples_per_s", v, "samples/s", true));
        }
        other => return Err(format!("unknown scenario '{other}' in the summary")),
    }
    if let Some(v) = log
        .value("Tokens per second")
        .or_else(|| log.value("Completed tokens per second"))
    {
        out.push(metric("tokens_per_s", v, "tokens/s", true));
    }
    if let Some(v) = log.value("50.00 percentile first token latency (ns)") {
        out.push(metric("ttft_ms", ms(v), "ms", false));
    }
    if let Some(v) = log.value("50.00 percentile time to output token (ns)") {
        out.push(metric("tpot_ms", ms(v), "ms", false));
    }
    Ok(out)
}

/// The newest `mlperf_log_summary.txt` under `dir` (depth-first, a few
/// levels), written at or after `since`.
fn newest_summary(dir: &Path, since: SystemTime, depth: usize) -> Option<(SystemTime, PathBuf)> {
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let found = if path.is_dir() && depth > 0 {
            newest_summary(&path, since, depth - 1)
        } else if path.file_name().is_some_and(|n| n == SUMMARY_FILE) {
            let t = entry.metadata().ok()?.modified().ok()?;
            (t >= since).then_some((t, dir.to_path_buf()))
        } else {
            None
        };
        if let Some(f) = found
            && best.as_ref().is_none_or(|b| f.0 > b.0)
        {
            best = Some(f);
        }
    }
    best
}

/// The running benchmark.
#[derive(Default)]
pub struct External {
    log: Option<ParsedLog>,
    log_dir: Option<PathBuf>,
}

impl Benchmark for External {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        if ctx.str_param("command")?.trim().is_empty() {
            return Err(BenchmarkError::Skipped(HOW_TO_GET.into()));
        }
        Ok(())
    }

    fn measure(&mut self, ctx: &RunContext, _measure: &mut Measure<'_>) -> MeasureResult {
        let command = ctx.str_param("command")?;
        let workdir = match ctx.str_param("workdir")? {
            "" => PathBuf::from("."),
            d => PathBuf::from(d),
        };
        // Modification times have coarse resolution on some file systems.
        let since = SystemTime::now() - std::time::Duration::from_secs(2);
        let start = Instant::now();
        let out = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(&workdir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| BenchmarkError::Failed(format!("starting sh -c {command:?}: {e}")))?;
        let wall = start.elapsed().as_secs_f64();
        let tail = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            let lines: Vec<&str> = s.lines().collect();
            lines[lines.len().saturating_sub(10)..].join("\n")
        };
        if !out.status.success() {
            return Err(BenchmarkError::Failed(format!(
                "{command:?} exited with {}:\n{}",
                out.status,
                tail(&out.stderr)
            )));
        }
        let dir = match ctx.str_param("log_dir")? {
            "" => newest_summary(&workdir, since, 4)
                .map(|(_, d)| d)
                .ok_or_else(|| {
                    BenchmarkError::Failed(format!(
                        "{command:?} finished but left no new {SUMMARY_FILE} under {}",
                        workdir.display()
                    ))
                })?,
            d => workdir.join(d),
        };
        let log = read_dir(&dir).map_err(|e| BenchmarkError::Failed(e.to_string()))?;
        if !log.valid {
            return Err(BenchmarkError::Failed(format!(
                "LoadGen reports the {} run INVALID (min duration {}, min queries {}, early stopping {}{}): {}",
                log.scenario,
                flag(log.min_duration_met),
                flag(log.min_queries_met),
                flag(log.early_stopping_met),
                log.perf_constraints_met.map_or(String::new(), |m| format!(
                    ", performance constraints {}",
                    flag(Some(m))
                )),
                if log.recommendations.is_empty() {
                    "no recommendation given".to_string()
                } else {
                    log.recommendations.join("; ")
                }
            )));
        }
        let metrics = metrics_of(&log).map_err(BenchmarkError::Failed)?;
        let details = vec![
            ("result_valid".into(), ParamValue::Bool(log.valid)),
            ("scenario".into(), ParamValue::from(log.scenario.as_str())),
            ("mode".into(), ParamValue::from(log.mode.as_str())),
            ("sut_name".into(), ParamValue::from(log.sut_name.as_str())),
            (
                "log_dir".into(),
                ParamValue::from(dir.display().to_string()),
            ),
            ("command_wall_s".into(), ParamValue::Float(wall)),
        ];
        self.log = Some(log);
        self.log_dir = Some(dir);
        Ok(Measured::new(metrics, details))
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        match (&self.log, &self.log_dir) {
            (Some(log), Some(dir)) => Validation::pass(format!(
                "LoadGen's own verdict: VALID ({} {}, logs in {})",
                log.scenario,
                log.mode,
                dir.display()
            )),
            _ => Validation::fail("no log was read"),
        }
    }
}

fn flag(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "met",
        Some(false) => "NOT met",
        None => "not reported",
    }
}
