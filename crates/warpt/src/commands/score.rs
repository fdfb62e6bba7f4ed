//! `warpt score`: a run's headline figures against a reference run's, one
//! number per component and suite (see `warpt_report::score`).

use anyhow::{Context, Result};
use warpt_model::BenchmarkSuiteRun;
use warpt_report::score::{self, Part, Reference, Score};
use warpt_report::terminal as output;

use crate::cli::ScoreArgs;
use crate::{Outcome, UsageError};
use warpt_run::history;

/// The machine a run measured, for people: CPU model, CPUs, memory and
/// hypervisor (no host name: a reference file travels).
pub fn machine_name(run: &BenchmarkSuiteRun) -> String {
    let Some(s) = &run.system else {
        return "an unrecorded machine".into();
    };
    let mut name = format!(
        "{}, {} logical CPUs, {:.0} GiB",
        s.cpu.model,
        s.cpu.logical_cores,
        s.memory.total_bytes as f64 / f64::from(1u32 << 30)
    );
    if let Some(v) = s.os.virtualization.as_deref().filter(|v| *v != "none") {
        name.push_str(&format!(" ({v})"));
    }
    name
}

/// A stored run by reference, a usage error naming it when there is none.
fn stored(store: &warpt_store::Store, what: &str) -> Result<BenchmarkSuiteRun> {
    store.load_run(what).map_err(|e| match e {
        warpt_store::StoreError::NotFound(_) | warpt_store::StoreError::Ambiguous(_) => {
            UsageError(e.to_string()).into()
        }
        other => other.into(),
    })
}

/// `--reference`: a file (a reference, or a run's export) when one is
/// there, else a stored run; the shipped reference without it.
fn reference(args: &ScoreArgs, store: &warpt_store::Store) -> Result<Reference> {
    let Some(what) = &args.reference else {
        return Reference::shipped()
            .map_err(|e| anyhow::anyhow!("the shipped score reference: {e}"));
    };
    let path = std::path::Path::new(what);
    if path.is_file() {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--reference {}", path.display()))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| UsageError(format!("--reference {}: {e}", path.display())))?;
        if value.get("schema").is_some() {
            return Reference::parse(&text)
                .map_err(|e| UsageError(format!("--reference {}: {e}", path.display())).into());
        }
        let run = warpt_model::load_suite_run(&text)
            .map_err(|e| UsageError(format!("--reference {}: {e}", path.display())))?;
        return Ok(Reference::of(&run, &machine_name(&run)));
    }
    let run = stored(store, what)?;
    Ok(Reference::of(&run, &machine_name(&run)))
}

fn row(p: &Part) -> Vec<String> {
    vec![
        p.name.clone(),
        format!("{:.3}", p.score),
        format!("{:.3}–{:.3}", p.ci95[0], p.ci95[1]),
        p.count.to_string(),
    ]
}

fn print(s: &Score) {
    let mut t = output::table(&["scored", "score", "95% CI", "benchmarks"]);
    for p in s.overall.iter() {
        t.add_row(row(p));
    }
    for p in &s.components {
        t.add_row(row(p));
    }
    for p in &s.suites {
        let mut r = row(p);
        r[0] = format!("suite {}", p.name);
        t.add_row(r);
    }
    for p in &s.benchmarks {
        let mut r = row(p);
        r[3] = format!("{} figure(s)", p.count);
        t.add_row(r);
    }
    println!("{t}");
    println!("{}", s.line());
    if !s.missing.is_empty() {
        println!("missing from this run (not scored):");
        for m in &s.missing {
            println!("  {m}");
        }
    }
    if !s.unscored.is_empty() {
        println!("not in the reference (not scored):");
        for m in &s.unscored {
            println!("  {m}");
        }
    }
}

/// Scores a stored run; `Failures` (exit 1) when nothing could be scored.
pub fn run(args: &ScoreArgs) -> Result<Outcome> {
    let (store, _) = history::open_existing(args.store.store.as_deref())?;
    let run = stored(&store, &args.run)?;
    if let Some(path) = &args.save_reference {
        let mine = Reference::of(&run, &machine_name(&run));
        let shown = warpt_run::ExportTarget::prepare(path)?
            .write_text(&serde_json::to_string_pretty(&mine)?)?;
        eprintln!(
            "reference of run {} ({} figures) written to {}",
            run.id,
            mine.figures.len(),
            shown.display()
        );
    }
    let reference = reference(args, &store)?;
    let s = score::score(&run, &reference);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print(&s);
    }
    Ok(Outcome::success_if(s.overall.is_some()))
}
