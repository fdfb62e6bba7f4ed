//! `warpt harness run`: a tree of the user's benchmarks, into reports in
//! the output directory and one `harness` suite run in the store.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use warpt_userbench::regressions::Thresholds;
use warpt_userbench::run::{self as harness, Layered, Settings};
use warpt_userbench::session::{self, Tree, TreeError};

use crate::cli::{HarnessRunArgs, ProfilerChoice, TimingChoice};
use crate::{Outcome, UsageError};
use warpt_run::config::{Config, Flags, Source};
use warpt_userbench::config::Timing;
use warpt_userbench::profile::Profiler;

fn write(dir: &Path, name: &str, text: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    Ok(warpt_run::ExportTarget::prepare(&path)?.write_text(text)?)
}

fn refused(e: session::Refused) -> anyhow::Error {
    UsageError(e.0).into()
}

fn layered<T: Copy>(s: &warpt_run::config::Setting<T>) -> Layered<T> {
    Layered {
        value: s.value,
        from_flag: matches!(s.source, Source::Flag(_)),
    }
}

/// Runs a tree (`warpt harness run`).
pub fn run(args: &HarnessRunArgs) -> Result<Outcome> {
    let tree = Tree::load(&args.dir, &args.paths, &args.targets).map_err(|e| match e {
        TreeError::Refused(r) => refused(r),
        other => other.into(),
    })?;
    let matrix = warpt_userbench::config::MatrixFilter {
        precisions: args.precisions.clone(),
        backends: args.backends.clone(),
    };
    let unknown = matrix.unknown(tree.configs.values());
    if !unknown.is_empty() {
        return Err(UsageError(format!(
            "{}: no bench.yaml in {} declares it",
            unknown.join(", "),
            args.dir.display()
        ))
        .into());
    }
    if args.rounds < 2 && args.regression_threshold > 0.0 {
        eprintln!("note: --rounds 1 gives no paired test; speedups carry no significance");
    }
    let flags = Flags {
        duration: args.duration,
        burnin_seconds: args.burnin,
        seed: args.seed,
        timeout_multiplier: args.timeout_multiplier,
        suite_timeout: args.suite_timeout,
        percentiles: args.percentiles.clone(),
        labels: args.labels.clone(),
        description: args.description.clone(),
        store: args.store.store.clone(),
        ..Flags::default()
    };
    let cfg = Config::load(None, &|k| std::env::var(k).ok(), &flags)?;
    let out_dir = args.output_dir.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "warpt-harness-{}",
            jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ")
        ))
    });
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| UsageError(format!("--output-dir {}: {e}", out_dir.display())))?;
    // Check the export destination and resolve --compare-to before minutes
    // of measuring.
    let export = match &args.export_file {
        Some(path) => Some(warpt_run::ExportTarget::prepare(path)?),
        None => None,
    };
    let stored = |id: &str| {
        let (store, _) = warpt_run::history::open_existing(args.store.store.as_deref()).ok()?;
        store.load_run(id).ok()
    };
    let before = match &args.compare_to {
        Some(what) => {
            let (summary, label) =
                session::earlier(what, &args.dir, &out_dir.join("summary.json"), &stored)
                    .map_err(refused)?;
            let thresholds = Thresholds {
                latency_pct: args.latency_threshold,
                accuracy_drift: args.accuracy_drift,
            };
            Some(session::Earlier {
                summary,
                label,
                thresholds,
            })
        }
        None => None,
    };
    write(
        &out_dir,
        "manifest.json",
        &serde_json::to_string_pretty(&tree.manifest)?,
    )?;
    let interrupt = warpt_run::interrupt::install_handler()?;
    let monitor_target = match &args.monitor.output {
        Some(path) => Some(warpt_run::ExportTarget::prepare(path)?),
        None => None,
    };
    let monitor = args.monitor.enabled.then(|| {
        let m = warpt_system::monitor::Monitor::start(std::time::Duration::from_secs_f64(
            args.monitor.interval,
        ));
        for missing in m.missing() {
            eprintln!("monitor: {missing}");
        }
        std::sync::Arc::new(m)
    });
    let mut settings = Settings {
        python: args.python.clone(),
        rounds: args.rounds,
        duration: layered(&cfg.duration),
        burnin: Layered {
            value: (!matches!(cfg.burnin_seconds.source, Source::Default))
                .then_some(cfg.burnin_seconds.value),
            from_flag: matches!(cfg.burnin_seconds.source, Source::Flag(_)),
        },
        seed: cfg.seed.value,
        timeout_multiplier: layered(&cfg.timeout_multiplier),
        reproducible: args.reproducible,
        cold_start: args.cold_start,
        timing: args.timing.map(|t| match t {
            TimingChoice::Host => Timing::Host,
            TimingChoice::Device => Timing::Device,
            TimingChoice::Pytorch => Timing::Pytorch,
            TimingChoice::Triton => Timing::Triton,
        }),
        cold_cache: args.cold_cache.then_some(true),
        device_hygiene: args.no_device_hygiene.then_some(false),
        count_instructions: args.measure == crate::cli::MeasureArg::Instructions,
        regression_threshold_pct: args.regression_threshold,
        output_dir: std::path::absolute(&out_dir)?,
        worker_exe: None,
        interrupt: Some(interrupt),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        build_profile: warpt_run::build_profile().into(),
        command_line: std::env::args().collect(),
        profile_limit: std::time::Duration::from_secs_f64(args.profile_timeout),
        suite_limit: warpt_run::run::suite_limit(cfg.suite_timeout.value),
        percentiles: cfg.percentiles.value.clone(),
        // bench.yaml's labels, then warpt.toml's and the command line's.
        labels: {
            let mut labels =
                warpt_userbench::config::run_labels(&tree.configs).map_err(UsageError)?;
            labels.extend(cfg.labels.iter().map(|(k, s)| (k.clone(), s.value.clone())));
            if let Some(why) = warpt_model::labels::labels_problem(&labels) {
                return Err(UsageError(why).into());
            }
            labels
        },
        description: cfg.description.value.clone(),
        matrix,
        monitor,
    };
    let run = harness::run(&tree.manifest, &tree.configs, &settings, &mut |e| {
        if let Some(line) = e.line() {
            eprintln!("{line}");
        }
    });
    if let Some(monitor) = settings
        .monitor
        .take()
        .and_then(|m| std::sync::Arc::try_unwrap(m).ok())
    {
        let (timeline, overhead) = monitor.finish();
        warpt_run::export::finish_timeline(&timeline, overhead, monitor_target)?;
    }
    let profiler = args.profile.map(|tool| match tool {
        ProfilerChoice::Perf => Profiler::Perf,
        ProfilerChoice::PySpy => Profiler::PySpy,
        ProfilerChoice::Nsys => Profiler::Nsys,
        ProfilerChoice::Ncu => Profiler::Ncu,
        ProfilerChoice::Torch => Profiler::Torch,
    });
    let reports = session::write_reports(
        &run,
        &tree,
        &settings,
        &args.dir,
        before,
        profiler,
        &mut |name, text| write(&out_dir, name, text),
    )?;
    if let Some(r) = &reports.regressions {
        eprintln!(
            "{} regression(s) against {}: {}",
            r.count,
            r.against,
            r.path.display()
        );
    }
    let summary = reports.summary;
    let regressed = reports.regressions.is_some_and(|r| r.count > 0);
    warpt_run::history::record_run(&args.store.choice(), None, &run);
    if let Some(target) = export {
        eprintln!("exported {}", target.write_json(&run)?.display());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", warpt_userbench::summary::table(&summary));
    }
    eprintln!("reports in {}", out_dir.display());
    Ok(if run.interrupted {
        Outcome::Interrupted
    } else if regressed || summary.overall.failed > 0 || summary.overall.regressed > 0 {
        Outcome::Failures
    } else {
        Outcome::Success
    })
}
