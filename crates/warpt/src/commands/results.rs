//! `warpt results list|show|query|import`: the history store.

use anyhow::Result;
use warpt_store::RunFilter;

use crate::cli::{
    ResultsExportArgs, ResultsImportArgs, ResultsListArgs, ResultsQueryArgs, ResultsShowArgs,
};
use crate::{Outcome, UsageError};
use warpt_report::terminal as output;
use warpt_run::history;

/// `warpt results list`.
pub fn list(args: &ResultsListArgs) -> Result<Outcome> {
    let (store, _) = history::open_existing(args.store.store.as_deref())?;
    let runs = store.list_runs(&RunFilter {
        suite: args.suite.clone(),
        benchmark: args.benchmark.clone(),
        machine: args.machine.clone(),
        since: args.since.clone(),
        until: args.until.clone(),
        limit: args.limit,
        offset: None,
        labels: args.labels.clone(),
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
        return Ok(Outcome::Success);
    }
    println!("{}", output::runs(&runs));
    eprintln!("{} run(s)", runs.len());
    Ok(Outcome::Success)
}

/// `warpt results show`.
pub fn show(args: &ResultsShowArgs) -> Result<Outcome> {
    let (store, _) = history::open_existing(args.store.store.as_deref())?;
    let run = match store.load_run(&args.run) {
        Ok(run) => run,
        Err(warpt_store::StoreError::NotFound(_)) => {
            // Perhaps a stress run.
            match store.load_stress(&args.run) {
                Ok(stress) => {
                    println!("{}", serde_json::to_string_pretty(&stress)?);
                    return Ok(Outcome::Success);
                }
                Err(e) => return Err(UsageError(e.to_string()).into()),
            }
        }
        Err(e @ warpt_store::StoreError::Ambiguous(_)) => {
            return Err(UsageError(e.to_string()).into());
        }
        Err(e) => return Err(e.into()),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&run)?);
    } else {
        println!(
            "run {} ({}) started {}",
            run.id,
            run.suite,
            run.start_time.map_or("-".into(), |t| t.to_string())
        );
        if let Some(m) = &run.manifest {
            if let Some(d) = &m.description {
                println!("description: {d}");
            }
            if !m.labels.is_empty() {
                println!("labels: {}", warpt_model::labels::label_text(&m.labels));
            }
        }
        print!("{}", output::results(&run));
        // Against the shipped reference (`warpt score --reference` for another).
        if let Ok(reference) = warpt_report::score::Reference::shipped() {
            println!("{}", warpt_report::score::score(&run, &reference).line());
        }
    }
    Ok(Outcome::Success)
}

/// `warpt results query`.
pub fn query(args: &ResultsQueryArgs) -> Result<Outcome> {
    let path = history::path(args.store.store.as_deref(), None)?;
    let out = warpt_store::query(&path, &args.sql).map_err(|e| match e {
        warpt_store::StoreError::Sql(_)
        | warpt_store::StoreError::Json(_)
        | warpt_store::StoreError::Postgres { .. } => {
            anyhow::Error::from(UsageError(format!("query: {e}")))
        }
        other => UsageError(other.to_string()).into(),
    })?;
    if args.json {
        let rows: Vec<serde_json::Map<String, serde_json::Value>> = out
            .rows
            .iter()
            .map(|r| out.columns.iter().cloned().zip(r.iter().cloned()).collect())
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else if args.csv {
        print!("{}", output::query_csv(&out.columns, &out.rows));
    } else {
        println!("{}", output::query_table(&out.columns, &out.rows));
        eprintln!("{} row(s)", out.rows.len());
    }
    Ok(Outcome::Success)
}

/// `warpt results import`: every file is read and checked before any is recorded.
pub fn import(args: &ResultsImportArgs) -> Result<Outcome> {
    let path = history::path(args.store.store.as_deref(), None)?;
    let report = history::import_files(&path, &args.files, args.format.as_deref())?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(Outcome::Success);
    }
    for i in &report {
        if i.added {
            eprintln!(
                "imported {} ({}, {} benchmarks) as run {}",
                i.file, i.format, i.benchmarks, i.run_id
            );
        } else {
            eprintln!("{}: run {} is already in the store", i.file, i.run_id);
        }
    }
    Ok(Outcome::Success)
}

/// `warpt results export`.
pub fn export(args: &ResultsExportArgs) -> Result<Outcome> {
    let format = warpt_export::RUN.get(&args.format)?;
    let store = args.store.store.as_deref();
    let (run, label) = warpt_run::history::load_side(&args.run, store)?;
    if args.baseline.is_some() && format.name() != "junit" {
        return Err(UsageError("--baseline applies to --format junit only".into()).into());
    }
    let baseline = match &args.baseline {
        Some(b) => {
            let (base, base_label) = warpt_run::history::load_side(b, store)?;
            let flags =
                warpt_run::StoreChoice::from_flags(store.map(std::path::Path::to_path_buf), false);
            Some(warpt_run::history::compare(
                &flags,
                args.assume_noise,
                (&base, &base_label),
                (&run, &label),
                &warpt_report::Options::default(),
            ))
        }
        None => None,
    };
    let doc = format.render(&warpt_export::RunExport {
        run: &run,
        baseline: baseline.as_ref(),
    })?;
    for p in doc.write(args.output.as_deref())? {
        eprintln!("wrote {}", p.display());
    }
    Ok(Outcome::Success)
}
