//! `warpt demo`: a result history a new user recognises, from warpt's own
//! runs, so that `warpt serve` shows every page with data in a minute.
//!
//! The benchmarks really run here on tiny settings, through [`warpt_run::run`]
//! like any other run: the micro suite with a thread sweep and the memory
//! latency ladder, a Smith-Waterman alignment, an MLPerf-style load test
//! and, when the caller serves one, a serving sweep against a scripted
//! endpoint. Those runs are this machine's. Made-up machines then get a
//! history derived from them ([`derive`]), each run saying so. Everything
//! is written at the end; a SQLite store is built under a temporary name
//! and renamed into place, so a failure leaves nothing behind.

mod derive;

pub use derive::{DemoMachine, Derived, MACHINES, Step, derive};

use std::path::Path;
use warpt_harness::ParamArg;

use anyhow::{Context, Result};
use warpt_harness::Progress;
use warpt_model::BenchmarkSuiteRun;
use warpt_store::{Location, Source, Store};

use warpt_run::config::Flags;
use warpt_run::request::{ExportChoice, MonitorRequest, PlanSource, Select};
use warpt_run::run::Suites;
use warpt_run::{RunOutcome, RunRequest, StoreChoice, UsageError};

/// What the demo measures here: one request per seed run, and whether the
/// made-up machines get a history derived from it.
#[derive(Debug, Clone)]
pub struct SeedPlan {
    /// The run.
    pub request: RunRequest,
    /// Whether [`derive`] copies it to the made-up machines (a scripted
    /// server's latencies do not depend on the machine: not derived).
    pub derived: bool,
}

/// The seed runs. `serving_endpoint`: an OpenAI-compatible endpoint for
/// the serving sweep (the CLI starts warpt's scripted one), if any.
pub fn seed_plans(serving_endpoint: Option<&str>) -> Vec<SeedPlan> {
    let request =
        |suite: &str, benchmarks: &[&str], params: &[(&str, &str)], duration: f64| RunRequest {
            plan: PlanSource::Select(Select {
                suite: Some(suite.into()),
                benchmarks: benchmarks.iter().map(|b| b.to_string()).collect(),
                components: Vec::new(),
                params: params.iter().map(|(k, v)| ParamArg::new(*k, *v)).collect(),
            }),
            settings: Flags {
                duration: Some(duration),
                burnin_seconds: Some(0.0),
                ..Flags::default()
            },
            store: StoreChoice::Off,
            export: ExportChoice::None,
            monitor: Some(MonitorRequest {
                interval: 0.1,
                output: None,
            }),
            ..RunRequest::default()
        };
    let mut plans = vec![
        SeedPlan {
            request: request(
                "micro",
                &["cpu_flops", "mem_bandwidth", "gemm", "mem_latency"],
                &[
                    ("threads", "1,2"),
                    ("n", "64,256"),
                    ("array_mb", "32"),
                    ("max_mb", "16"),
                ],
                0.1,
            ),
            derived: true,
        },
        SeedPlan {
            request: request("biobench", &["sw_align"], &[("target_count", "400")], 0.2),
            derived: true,
        },
        SeedPlan {
            request: request("mlperf", &["synthetic"], &[("service_us", "200")], 0.2),
            derived: true,
        },
    ];
    if let Some(endpoint) = serving_endpoint {
        plans.push(SeedPlan {
            request: request(
                "pepbench",
                &["llm_serve"],
                &[
                    ("endpoint", endpoint),
                    ("concurrency", "1,2,8"),
                    ("requests", "32"),
                    ("output_tokens", "6"),
                    ("slo_ttft_ms", "45"),
                ],
                0.2,
            ),
            derived: false,
        });
    }
    plans
}

/// What [`fill`] wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Filled {
    /// The store, as given (a URL without its password).
    pub store: String,
    /// The runs measured here, by id.
    pub measured: Vec<String>,
    /// Results among them that did not pass (named `suite/benchmark: status`).
    pub not_passed: Vec<String>,
    /// How many runs were derived for the made-up machines.
    pub derived: usize,
    /// Every machine in the history, by host name (this one first).
    pub machines: Vec<String>,
    /// The regression steps in the history, described.
    pub regressions: Vec<String>,
}

/// Runs the seed plans, derives the history and writes it all to `store`,
/// which must be new (a SQLite file that does not exist, or an empty
/// PostgreSQL database): the demo never mixes made-up machines into a real
/// history.
pub fn fill(
    store: &Location,
    plans: &[SeedPlan],
    suites: &dyn Suites,
    progress: &dyn Progress,
) -> Result<Filled> {
    refuse_existing(store)?;
    let mut measured = Vec::new();
    let mut to_derive = Vec::new();
    for p in plans {
        let (plan, options) = warpt_run::plan(&p.request, suites)?;
        let ran = warpt_run::run(&p.request, &plan, options, suites, progress)?;
        if ran.outcome == RunOutcome::Interrupted {
            anyhow::bail!("interrupted: nothing was written to {store}");
        }
        if p.derived {
            to_derive.push(ran.run.clone());
        }
        measured.push(ran.run);
    }
    let derived = derive(&to_derive);
    write(store, &measured, &derived)?;
    Ok(summary(store, &measured, derived.runs.len()))
}

fn summary(store: &Location, measured: &[BenchmarkSuiteRun], derived: usize) -> Filled {
    let here = measured
        .first()
        .map_or("this machine".into(), derive::host_of);
    let mut machines = vec![here];
    machines.extend(MACHINES.iter().map(|m| m.hostname.to_string()));
    Filled {
        store: store.to_string(),
        measured: measured.iter().map(|r| r.id.clone()).collect(),
        not_passed: measured
            .iter()
            .flat_map(|r| &r.benchmarks)
            .filter(|b| !b.success && b.status != warpt_model::RunStatus::Skipped)
            .map(|b| format!("{}: {}", b.spec.id, b.status))
            .collect(),
        derived,
        machines,
        regressions: MACHINES
            .iter()
            .filter_map(|m| m.step_note().map(|n| format!("{}: {n}", m.hostname)))
            .collect(),
    }
}

/// A usage error unless `store` is new.
fn refuse_existing(store: &Location) -> Result<()> {
    let taken = match store.sqlite_path() {
        Some(path) => path.exists(),
        None => {
            let s = Store::open(store).with_context(|| format!("opening the store {store}"))?;
            s.count_runs()? > 0
        }
    };
    if taken {
        return Err(UsageError(format!(
            "{store} already holds a store; the demo writes a new one (give a path that does not exist)"
        ))
        .into());
    }
    Ok(())
}

/// Records the runs measured here as runs, the derived ones as imports and
/// the made-up machines' noise profiles; a SQLite store is written under a
/// temporary name and renamed into place.
fn write(store: &Location, measured: &[BenchmarkSuiteRun], derived: &Derived) -> Result<()> {
    let record = |s: &mut Store| -> Result<()> {
        for r in measured {
            s.record_run(r, &Source::Run)?;
        }
        for r in &derived.runs {
            s.record_run(r, &Source::Import("warpt demo (derived)".into()))?;
        }
        for (system, entries) in &derived.profiles {
            s.record_noise(system, entries)?;
        }
        Ok(())
    };
    let Some(path) = store.sqlite_path() else {
        let mut s = Store::open(store).with_context(|| format!("opening the store {store}"))?;
        return record(&mut s).with_context(|| format!("writing the demo history to {store}"));
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix(".warpt-demo-")
        .suffix(".db")
        .tempfile_in(&dir)
        .with_context(|| format!("creating a temporary store in {}", dir.display()))?;
    {
        let mut s = Store::open(Location::Sqlite(tmp.path().to_path_buf()))
            .context("opening the temporary store")?;
        record(&mut s).with_context(|| format!("writing the demo history to {store}"))?;
    }
    tmp.persist_noclobber(path)
        .map_err(|e| e.error)
        .with_context(|| format!("moving the demo history to {}", path.display()))?;
    Ok(())
}
