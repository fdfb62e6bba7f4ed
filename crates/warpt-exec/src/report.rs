//! Turning measured jobs into warpt's data: one `exec` suite run (each job
//! a benchmark with `wall_time_s`, `user_time_s`, `sys_time_s` and
//! `peak_rss_bytes`), and hyperfine's summary lines ("B ran 1.23 ± 0.02
//! times faster than A") with warpt's bootstrap CI and significance test.

use std::collections::BTreeMap;

use warpt_model::{
    BenchmarkId, BenchmarkKind, BenchmarkMetric, BenchmarkRunResult, BenchmarkSpec,
    BenchmarkSuiteRun, ParamValue, RunStatus, Validation,
};
use warpt_stats::mean;

use crate::duet::{Cpus, Paired};
use crate::engine::{JobResult, ShellCost};
use crate::plan::ExecPlan;

/// The suite every `warpt exec` run is recorded under.
pub const SUITE: &str = "exec";

fn spec(name: &str, text: &str) -> BenchmarkSpec {
    BenchmarkSpec::builder(SUITE, name)
        .kind(BenchmarkKind::Application)
        .description(format!("the command `{text}`"))
        .metric("wall_time_s")
        .metric("user_time_s")
        .metric("sys_time_s")
        .metric("peak_rss_bytes")
        .build()
}

fn metric(
    name: &str,
    unit: &str,
    values: Vec<f64>,
    tags: &BTreeMap<String, String>,
    stop: Option<warpt_model::StopReason>,
) -> Option<BenchmarkMetric> {
    let mut stats = warpt_model::MetricStats::summarize(&values)?;
    stats.stop_reason = stop;
    Some(BenchmarkMetric {
        name: name.into(),
        value: stats.median,
        unit: unit.into(),
        higher_is_better: false,
        tags: tags.clone(),
        stats: Some(stats),
    })
}

/// `--measure instructions`: `instructions` (the shell's subtracted) and,
/// from cachegrind, `estimated_cycles`, `l1_misses` and `ll_misses` (the
/// shell's included), each a sample per counted run.
fn count_metrics(r: &JobResult) -> Vec<BenchmarkMetric> {
    type Column = fn(&warpt_counts::Counts) -> Option<u64>;
    let columns: [(&str, &str, Column); 4] = [
        ("instructions", "instructions", |c| Some(c.instructions)),
        ("estimated_cycles", "cycles", |c| {
            c.cache.map(|k| k.estimated_cycles(c.instructions))
        }),
        ("l1_misses", "misses", |c| c.cache.map(|k| k.l1_misses)),
        ("ll_misses", "misses", |c| c.cache.map(|k| k.ll_misses)),
    ];
    columns
        .into_iter()
        .filter_map(|(name, unit, column)| {
            let values: Option<Vec<f64>> = r
                .counts
                .iter()
                .map(|c| column(c).map(|v| v as f64))
                .collect();
            metric(name, unit, values?, &r.job.params, None)
        })
        .collect()
}

/// One job as a benchmark result.
pub fn result(r: &JobResult, cost: Option<ShellCost>) -> BenchmarkRunResult {
    let params = r
        .job
        .params
        .iter()
        .map(|(k, v)| (k.clone(), ParamValue::Str(v.clone())))
        .collect();
    let mut out =
        BenchmarkRunResult::new(spec(&r.job.name, &r.job.text), params, r.status, r.window.0);
    out.end_time = r.window.1;
    out.error_message = r.message.clone();
    out.stop_reason = r.stop_reason;
    let s = &r.samples;
    let stop = r.stop_reason;
    out.metrics = [
        metric(
            "wall_time_s",
            "s",
            s.iter().map(|x| x.wall_s).collect(),
            &r.job.params,
            stop,
        ),
        metric(
            "user_time_s",
            "s",
            s.iter().map(|x| x.user_s).collect(),
            &r.job.params,
            stop,
        ),
        metric(
            "sys_time_s",
            "s",
            s.iter().map(|x| x.sys_s).collect(),
            &r.job.params,
            stop,
        ),
        metric(
            "peak_rss_bytes",
            "B",
            s.iter().map(|x| x.peak_rss_bytes).collect(),
            &r.job.params,
            stop,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    out.metrics.extend(count_metrics(r));
    if r.status == RunStatus::Passed && s.is_empty() {
        out.set_status(RunStatus::Failed);
        out.error_message = Some("no run was measured".into());
    }
    let d = &mut out.details;
    d.insert("command".into(), ParamValue::Str(r.job.text.clone()));
    d.insert("runs".into(), ParamValue::Int(s.len() as i64));
    d.insert("failed_runs".into(), ParamValue::Int(r.failed_runs as i64));
    let codes: Vec<String> = s.iter().map(|x| x.exit.to_string()).collect();
    let nonzero = codes.iter().filter(|c| *c != "exit status 0").count();
    if nonzero > 0 {
        d.insert("exit_statuses".into(), ParamValue::Str(codes.join(", ")));
    }
    if let Some(source) = r.count_source {
        d.insert("count_source".into(), ParamValue::Str(source.into()));
        d.insert("count_runs".into(), ParamValue::Int(r.counts.len() as i64));
    }
    if let Some(n) = r.shell_instructions {
        d.insert("shell_instructions".into(), ParamValue::Int(n as i64));
    }
    if let Some(c) = cost {
        d.insert("shell_spawn_wall_s".into(), ParamValue::Float(c.wall_s));
        d.insert("shell_spawn_user_s".into(), ParamValue::Float(c.user_s));
        d.insert("shell_spawn_sys_s".into(), ParamValue::Float(c.sys_s));
    }
    out.validation = (out.status != RunStatus::Skipped).then(|| {
        if out.status == RunStatus::Passed {
            Validation::pass(if nonzero > 0 {
                format!(
                    "{nonzero} of {} runs exited non-zero (--ignore-failure)",
                    s.len()
                )
            } else {
                format!("all {} runs exited with status 0", s.len())
            })
        } else {
            Validation::fail(out.error_message.clone().unwrap_or_default())
        }
    });
    out
}

/// The suite run of one `warpt exec` invocation.
pub fn suite_run(
    plan: &ExecPlan,
    results: &[JobResult],
    cost: Option<ShellCost>,
    start: jiff::Timestamp,
    command_line: Vec<String>,
    interrupted: bool,
) -> BenchmarkSuiteRun {
    let mut options = warpt_harness::RunOptions::new(
        env!("CARGO_PKG_VERSION"),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
    );
    options.seed = plan.seed;
    options.command_line = command_line;
    options.labels = plan.labels.clone();
    options.description = plan.description.clone();
    let empty = warpt_harness::Plan {
        suite: SUITE.into(),
        components: Vec::new(),
        label: SUITE.into(),
        entries: Vec::new(),
        unavailable: Vec::new(),
        overrides: BTreeMap::new(),
    };
    let mut manifest = warpt_harness::build_manifest(&options, &empty);
    manifest.config.plan = results
        .iter()
        .map(|r| BenchmarkId::new(SUITE, &r.job.name))
        .collect();
    if let Some(c) = cost {
        manifest
            .extra
            .insert("shell_spawn_wall_s".into(), ParamValue::Float(c.wall_s));
    }
    manifest
        .extra
        .insert("interleaved".into(), ParamValue::Bool(plan.interleave));
    BenchmarkSuiteRun {
        id: warpt_harness::new_run_id(start),
        suite: SUITE.into(),
        components: Vec::new(),
        benchmarks: results.iter().map(|r| result(r, cost)).collect(),
        metadata: None,
        start_time: Some(start),
        end_time: Some(jiff::Timestamp::now()),
        interrupted,
        manifest: Some(manifest),
        system: Some(warpt_system::snapshot()),
        trials: Vec::new(),
    }
}

/// A percentile-bootstrap 95% CI of mean(slow) / mean(fast), seeded.
fn ratio_ci(slow: &[f64], fast: &[f64], seed: u64) -> Option<(f64, f64)> {
    if slow.len() < 2 || fast.len() < 2 {
        return None;
    }
    warpt_stats::bootstrap_ratio_by(fast, slow, 2000, seed, mean).map(|b| b.interval(0.95))
}

/// One comparison with the fastest command.
#[derive(Debug, Clone, PartialEq)]
pub struct Relative {
    /// The slower command's name.
    pub name: String,
    /// mean(its wall time) / mean(the fastest's).
    pub ratio: f64,
    /// Bootstrap 95% CI of that ratio.
    pub ci: Option<(f64, f64)>,
    /// Two-sided Mann-Whitney p-value of the two samples.
    pub p_value: f64,
}

/// The fastest passed job (by mean wall time) and every other one
/// relative to it.
pub fn relative(results: &[JobResult], seed: u64) -> Option<(String, Vec<Relative>)> {
    let walls: Vec<(&JobResult, Vec<f64>)> = results
        .iter()
        .filter(|r| r.status == RunStatus::Passed && !r.samples.is_empty())
        .map(|r| (r, r.samples.iter().map(|s| s.wall_s).collect()))
        .collect();
    let fastest = walls
        .iter()
        .min_by(|a, b| mean(&a.1).total_cmp(&mean(&b.1)))?;
    let others = walls
        .iter()
        .filter(|(r, _)| !std::ptr::eq(*r, fastest.0))
        .map(|(r, w)| Relative {
            name: r.job.name.clone(),
            ratio: mean(w) / mean(&fastest.1),
            ci: ratio_ci(w, &fastest.1, seed),
            p_value: warpt_stats::mann_whitney(&fastest.1, w),
        })
        .collect();
    Some((fastest.0.job.name.clone(), others))
}

/// hyperfine's summary, with the CI and the significance verdict.
pub fn summary_text(results: &[JobResult], seed: u64) -> String {
    let Some((fastest, others)) = relative(results, seed) else {
        return String::new();
    };
    if others.is_empty() {
        return String::new();
    }
    let mut out = format!("Summary\n  {fastest} ran\n");
    for o in others {
        let pm = o.ci.map_or(String::new(), |(lo, hi)| {
            format!(" ± {:.2}", (hi - lo) / 2.0)
        });
        let verdict = if o.p_value < 0.05 {
            format!("significant, p = {:.2e}", o.p_value)
        } else {
            format!(
                "not significant at 5%, p = {:.2}: may be equally fast",
                o.p_value
            )
        };
        out += &format!(
            "    {:.2}{pm} times faster than {} ({verdict})\n",
            o.ratio, o.name
        );
    }
    out
}

/// `--duet`'s verdict on the second command's result: `duet_with` (the
/// first command), `duet_cpus`, `duet_pairs`, `duet_wall_ratio` (second /
/// first, Hodges-Lehmann over the pairs), its CI bounds, `duet_p` and
/// `duet_verdict`.
pub fn add_duet_details(r: &mut BenchmarkRunResult, cpus: &Cpus, p: &Paired) {
    let d = &mut r.details;
    d.insert("duet_cpus".into(), ParamValue::Str(cpus.describe()));
    d.insert("duet_pairs".into(), ParamValue::Int(p.pairs as i64));
    d.insert("duet_wall_ratio".into(), ParamValue::Float(p.ratio));
    if let Some((lo, hi)) = p.ci95 {
        d.insert("duet_wall_ratio_ci95_low".into(), ParamValue::Float(lo));
        d.insert("duet_wall_ratio_ci95_high".into(), ParamValue::Float(hi));
    }
    if let Some(pv) = p.p {
        d.insert("duet_p".into(), ParamValue::Float(pv));
    }
    d.insert("duet_verdict".into(), ParamValue::from(p.verdict));
}

/// The duet's lines: which CPUs, and the second command against the first
/// from their paired runs.
pub fn duet_text(results: &[JobResult], cpus: &Cpus, p: Option<&Paired>) -> String {
    let [a, b] = results else {
        return String::new();
    };
    let Some(p) = p else {
        return format!(
            "\nduet ({}): fewer than 4 complete pairs of runs, no verdict\n",
            cpus.describe()
        );
    };
    let ci = p
        .ci95
        .map(|(lo, hi)| format!(" (95% CI {lo:.4} to {hi:.4})"))
        .unwrap_or_default();
    let pv = p.p.map(|v| format!(", p = {v:.2e}")).unwrap_or_default();
    format!(
        "\nduet: '{}' and '{}' run at the same time, {} (swapped every pair), {} couples of \
         pairs:\n  '{}' / '{}' wall time {:.4}{ci}{pv}: {}\n",
        a.job.name,
        b.job.name,
        cpus.describe(),
        p.pairs,
        b.job.name,
        a.job.name,
        p.ratio,
        p.verdict
    )
}
