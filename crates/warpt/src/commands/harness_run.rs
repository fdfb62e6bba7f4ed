//! `warpt harness run`: a tree of the user's benchmarks, into reports in
//! the output directory and one `harness` suite run in the store.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use warpt_model::{BenchmarkSuiteRun, RunStatus};
use warpt_userbench::discover::{DiscoverError, Manifest, discover};
use warpt_userbench::regressions::{self, Thresholds};
use warpt_userbench::run::{self as harness, Event, Layered, Settings};
use warpt_userbench::summary::{self, Summary};

use crate::cli::HarnessRunArgs;
use crate::config::{Config, Flags, Source};
use crate::{Outcome, UsageError};

/// Keeps the chapters, examples and kernels `targets` name; a target that
/// names nothing is a usage error listing what there is.
fn select(mut m: Manifest, targets: &[String]) -> Result<Manifest> {
    if targets.is_empty() {
        return Ok(m);
    }
    let chapter_matches = |name: &str, t: &str| {
        name == t
            || name
                .strip_prefix(t)
                .is_some_and(|rest| rest.starts_with('_'))
    };
    for t in targets {
        let (chap, example) = t.split_once('/').unwrap_or((t, ""));
        let found = (t == "kernels" && !m.kernels.is_empty())
            || m.chapters.iter().any(|c| {
                chapter_matches(&c.name, chap)
                    && (example.is_empty() || c.pairs.iter().any(|p| p.example == example))
            });
        if !found {
            let mut names: Vec<String> = m.chapters.iter().map(|c| c.name.clone()).collect();
            if !m.kernels.is_empty() {
                names.push("kernels".into());
            }
            return Err(UsageError(format!(
                "--targets: '{t}' names no chapter or example here; chapters: {}",
                if names.is_empty() {
                    "(none)".into()
                } else {
                    names.join(", ")
                }
            ))
            .into());
        }
    }
    for c in &mut m.chapters {
        let wanted: Vec<&str> = targets
            .iter()
            .filter_map(|t| {
                let (chap, example) = t.split_once('/').unwrap_or((t, ""));
                chapter_matches(&c.name, chap).then_some(example)
            })
            .collect();
        if wanted.iter().any(|e| e.is_empty()) {
            continue;
        }
        c.pairs.retain(|p| wanted.contains(&p.example.as_str()));
    }
    m.chapters.retain(|c| !c.pairs.is_empty());
    if !targets.iter().any(|t| t == "kernels") {
        m.kernels.clear();
    }
    Ok(m)
}

fn write(dir: &Path, name: &str, text: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    crate::export::ExportTarget::prepare(&path)?.write_text(text)
}

/// What a program prints of its version, if it runs.
fn version_of(program: &str, args: &[&str], dir: Option<&Path>) -> Option<String> {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let out = cmd.output().ok().filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let text = if text.is_empty() {
        String::from_utf8_lossy(&out.stderr).trim().to_string()
    } else {
        text
    };
    (!text.is_empty()).then_some(text)
}

/// `env.json`: the machine, the interpreter and the tree's commit.
fn env_json(run: &BenchmarkSuiteRun, python: &str, root: &Path) -> serde_json::Value {
    serde_json::json!({
        "warpt_version": env!("CARGO_PKG_VERSION"),
        "build_profile": crate::commands::run::build_profile(),
        "python": version_of(python, &["--version"], None),
        "python_executable": version_of(python, &["-c", "import sys; print(sys.executable)"], None),
        "numpy": version_of(python, &["-c", "import numpy; print(numpy.__version__)"], None),
        "torch": version_of(python, &["-c", "import torch; print(torch.__version__)"], None),
        "git_commit": version_of("git", &["rev-parse", "HEAD"], Some(root)),
        "git_dirty": version_of("git", &["status", "--porcelain"], Some(root)).is_some(),
        "system": run.system,
    })
}

/// The earlier summary `--compare-to` names: a summary.json or a run
/// export (file), a directory holding summary.json, a stored run id, or a
/// git ref (`REF:PATH`, or `REF` with this run's output directory).
fn earlier(what: &str, args: &HarnessRunArgs, out_dir: &Path) -> Result<(Summary, String)> {
    let parse = |text: &str, shown: &str| -> Result<Summary> {
        if let Ok(s) = serde_json::from_str::<Summary>(text) {
            return Ok(s);
        }
        let run = warpt_model::load_suite_run(text).map_err(|e| {
            UsageError(format!(
                "--compare-to {shown}: neither a harness summary.json nor a suite run: {e}"
            ))
        })?;
        Ok(Summary::of(&run))
    };
    let path = Path::new(what);
    if path.is_file() {
        let text = std::fs::read_to_string(path)?;
        return Ok((parse(&text, what)?, what.to_string()));
    }
    if path.is_dir() {
        let p = path.join("summary.json");
        let text = std::fs::read_to_string(&p)
            .map_err(|e| UsageError(format!("--compare-to {}: {e}", p.display())))?;
        return Ok((parse(&text, what)?, p.display().to_string()));
    }
    if let Ok((store, _)) = crate::history::open_existing(args.store.store.as_deref())
        && let Ok(run) = store.load_run(what)
    {
        return Ok((Summary::of(&run), format!("stored run {what}")));
    }
    let (rev, file) = match what.split_once(':') {
        Some((r, f)) => (r.to_string(), f.to_string()),
        None => (
            what.to_string(),
            out_dir.join("summary.json").display().to_string(),
        ),
    };
    let root = &args.dir;
    let shown = version_of("git", &["show", &format!("{rev}:{file}")], Some(root)).or_else(|| {
        // A path relative to the repository's top.
        let top = version_of("git", &["rev-parse", "--show-toplevel"], Some(root))?;
        let abs = std::path::absolute(&file).ok()?;
        let rel = abs.strip_prefix(&top).ok()?.display().to_string();
        version_of("git", &["show", &format!("{rev}:{rel}")], Some(root))
    });
    match shown {
        Some(text) => Ok((parse(&text, what)?, format!("{rev}:{file}"))),
        None => Err(UsageError(format!(
            "--compare-to '{what}': not a file, a directory with summary.json, a stored run id, \
             or a git ref holding {file}"
        ))
        .into()),
    }
}

fn layered<T: Copy>(s: &crate::config::Setting<T>) -> Layered<T> {
    Layered {
        value: s.value,
        from_flag: matches!(s.source, Source::Flag(_)),
    }
}

/// Runs a tree (`warpt harness run`).
pub fn run(args: &HarnessRunArgs) -> Result<Outcome> {
    let manifest = discover(&args.dir, &args.paths).map_err(|e| match e {
        DiscoverError::NotADirectory(_) => anyhow::Error::new(UsageError(e.to_string())),
        other => anyhow::Error::new(other),
    })?;
    let manifest = select(manifest, &args.targets)?;
    let configs = harness::load_configs(&manifest).map_err(|e| UsageError(e.to_string()))?;
    if args.rounds < 2 && args.regression_threshold > 0.0 {
        eprintln!("note: --rounds 1 gives no paired test; speedups carry no significance");
    }
    let flags = Flags {
        duration: args.duration,
        burnin_seconds: args.burnin,
        seed: args.seed,
        timeout_multiplier: args.timeout_multiplier,
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
        Some(path) => Some(crate::export::ExportTarget::prepare(path)?),
        None => None,
    };
    let before = match &args.compare_to {
        Some(what) => Some(earlier(what, args, &out_dir)?),
        None => None,
    };
    write(
        &out_dir,
        "manifest.json",
        &serde_json::to_string_pretty(&manifest)?,
    )?;
    let interrupt = crate::commands::run::install_interrupt_handler()?;
    let settings = Settings {
        python: args.python.clone(),
        rounds: args.rounds,
        duration: layered(&cfg.duration),
        burnin: layered(&cfg.burnin_seconds),
        seed: cfg.seed.value,
        timeout_multiplier: layered(&cfg.timeout_multiplier),
        reproducible: args.reproducible,
        cold_start: args.cold_start,
        regression_threshold_pct: args.regression_threshold,
        output_dir: std::path::absolute(&out_dir)?,
        worker_exe: None,
        interrupt: Some(interrupt),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        build_profile: crate::commands::run::build_profile().into(),
        command_line: std::env::args().collect(),
    };
    let mut report = |e: Event<'_>| match e {
        Event::Started { id, index, total } => eprintln!("[{}/{total}] {id}", index + 1),
        Event::Trial {
            id,
            round,
            rounds,
            result,
        } => eprintln!(
            "    round {round}/{rounds} {id}: {}",
            result
                .metrics
                .iter()
                .find(|m| m.name == "latency_ms")
                .map_or("no latency".into(), |m| format!("p50 {:.4} ms", m.value))
        ),
        Event::Finished { result } => {
            if result.status != RunStatus::Passed {
                let why = result
                    .error_message
                    .as_deref()
                    .and_then(|m| m.lines().next())
                    .unwrap_or("");
                eprintln!(
                    "    {} {}: {why}",
                    result.spec.id.name,
                    result.status.as_str()
                );
            }
        }
    };
    let run = harness::run(&manifest, &configs, &settings, &mut report);
    write(
        &out_dir,
        "env.json",
        &serde_json::to_string_pretty(&env_json(&run, &args.python, &args.dir))?,
    )?;
    let summary = Summary::of(&run);
    for (r, e) in run.benchmarks.iter().zip(&summary.benchmarks) {
        let tags = warpt_model::tag_label(&e.tags);
        let tags = if tags.is_empty() {
            tags
        } else {
            format!("__{}", tags.replace([',', '='], "_"))
        };
        let name = format!("benchmarks/{}{tags}.json", e.id.replace('/', "__"));
        write(&out_dir, &name, &serde_json::to_string_pretty(r)?)?;
    }
    let summary_json = serde_json::to_string_pretty(&summary)?;
    write(&out_dir, "summary.json", &summary_json)?;
    write(&out_dir, "summary.md", &summary::markdown(&summary))?;
    let mut regressed = false;
    if let Some((earlier, label)) = before {
        let t = Thresholds {
            latency_pct: args.latency_threshold,
            accuracy_drift: args.accuracy_drift,
        };
        let report = regressions::compare(&earlier, &summary, &t);
        regressed = !report.regressions.is_empty();
        let path = write(
            &out_dir,
            "regressions.md",
            &regressions::markdown(&report, &label, &run.id, &t),
        )?;
        eprintln!(
            "{} regression(s) against {label}: {}",
            report.regressions.len(),
            path.display()
        );
    }
    if let Some(tool) = args.profile {
        crate::commands::harness_profile::profile(tool, &manifest, &configs, &settings, &out_dir);
    }
    crate::history::record_run(&args.store, None, &run);
    if let Some(target) = export {
        let path = target.write(&run)?;
        eprintln!("exported {}", path.display());
    }
    if args.json {
        println!("{summary_json}");
    } else {
        print!("{}", crate::output::harness_summary(&summary));
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
