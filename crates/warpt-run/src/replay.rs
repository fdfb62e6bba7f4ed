//! `--replay FILE`: the plan and settings of a previous export, to run the
//! same benchmarks with the same parameters again.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use warpt_harness::{Plan, Registry, RunOptions};
use warpt_model::{BenchmarkId, Params};

use crate::UsageError;
use crate::config::Flags;

/// The plan and options of the export at `path`; `flags` may raise the
/// timeout multiplier or turn on in-process runs.
pub fn from_export(path: &Path, reg: &Registry, flags: &Flags) -> Result<(Plan, RunOptions)> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("cannot read --replay file {shown}: {e}")))?;
    let old = warpt_model::load_suite_run(&text)
        .map_err(|e| UsageError(format!("--replay file {shown}: {e}")))?;
    let manifest = old.manifest.as_ref().ok_or_else(|| {
        UsageError(format!("--replay file {shown} has no manifest (written by an older warpt); nothing to replay exactly"))
    })?;
    let cfg = &manifest.config;
    // The i-th planned entry of a benchmark ran as its i-th result (a sweep
    // plans one benchmark several times).
    let mut seen: BTreeMap<&BenchmarkId, usize> = BTreeMap::new();
    let entries: Vec<(BenchmarkId, Params, BTreeMap<String, String>)> = cfg
        .plan
        .iter()
        .map(|id| {
            let nth = seen.entry(id).or_insert(0);
            let result = old.benchmarks.iter().filter(|b| b.spec.id == *id).nth(*nth);
            *nth += 1;
            let spec = reg.spec(id);
            let params = match result {
                Some(r) => r.params.clone(),
                None => spec
                    .as_ref()
                    .map(|spec| {
                        let mut p = spec.params.clone();
                        for (k, v) in &cfg.param_overrides {
                            if let Some(parsed) =
                                spec.params.get(k).and_then(|d| d.parse_like(k, v).ok())
                            {
                                p.insert(k.clone(), parsed);
                            }
                        }
                        p
                    })
                    .unwrap_or_default(),
            };
            let sweep = spec
                .map(|spec| {
                    cfg.param_overrides
                        .iter()
                        .filter(|(k, v)| warpt_harness::is_sweep(&spec, k, v))
                        .filter_map(|(k, _)| params.get(k).map(|v| (k.clone(), v.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            (id.clone(), params, sweep)
        })
        .collect();
    let label = if old.suite == "components" {
        old.components
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join("-")
    } else {
        old.suite.clone()
    };
    let mut plan = Plan::replay(reg, &old.suite, &old.components, &label, &entries)
        .map_err(|e| UsageError(format!("--replay file {shown}: {e}")))?;
    let mut options = RunOptions::new(env!("CARGO_PKG_VERSION"), crate::build_profile());
    options.duration = cfg.duration_s.map(Duration::from_secs_f64);
    options.burnin = Duration::from_secs_f64(cfg.burnin_s);
    options.seed = cfg.seed;
    options.target_rel_ci = cfg.target_rel_ci;
    options.timeouts = cfg.timeouts;
    options.benchmark_timeouts = cfg.benchmark_timeouts.clone();
    options.timeout_multiplier = flags.timeout_multiplier.unwrap_or(cfg.timeout_multiplier);
    options.in_process = flags.in_process || cfg.in_process;
    options.suite_limit = crate::run::suite_limit(
        flags
            .suite_timeout
            .unwrap_or(warpt_harness::SUITE_LIMIT.as_secs_f64()),
    );
    options.replay_of = Some(shown.to_string());
    options.repeat = cfg.repeat.max(1);
    plan.overrides = cfg.param_overrides.clone();
    Ok((plan, options))
}
