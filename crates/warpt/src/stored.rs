//! What the reporting front ends read from the history: results across
//! machines with each machine's hardware class (`report --by machine`,
//! `fleet outliers`) and one metric's series (`results trend`). Each is a
//! usage error naming the selection when the store holds nothing for it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use anyhow::Result;
use warpt_store::{CrossFilter, CrossRow, Store, TrendQuery, TrendRow};

use warpt_run::{UsageError, history};

/// Passed results across machines, from an existing store.
pub struct MachineRows {
    /// The store they came from (still open for follow-up reads).
    pub store: Store,
    /// The results `filter` selects.
    pub rows: Vec<CrossRow>,
    /// Each machine's hardware class (see `ListOutput::hardware_class`), by
    /// fingerprint, from its stored system snapshot.
    pub classes: HashMap<String, String>,
}

/// The passed results `filter` selects in the store at `store` (or the
/// configured one); when none match, a usage error listing `selection`,
/// the flags that narrowed it.
pub fn machine_rows(
    store: Option<&Path>,
    filter: &CrossFilter,
    selection: &str,
) -> Result<MachineRows> {
    let (store, location) = history::open_existing(store)?;
    let rows = store.cross_rows(filter)?;
    if rows.is_empty() {
        return Err(UsageError(format!(
            "no passed results in {location} match the selection ({selection})"
        ))
        .into());
    }
    let fps: BTreeSet<&str> = rows.iter().map(|r| r.fingerprint.as_str()).collect();
    let fps: Vec<&str> = fps.into_iter().collect();
    let classes = store
        .machine_systems(&fps)?
        .into_iter()
        .map(|(fp, system)| (fp, system.hardware_class()))
        .collect();
    Ok(MachineRows {
        store,
        rows,
        classes,
    })
}

/// One metric's series as `results trend` asks for it.
#[derive(Debug, Clone, Copy)]
pub struct SeriesRequest<'a> {
    /// The benchmark.
    pub benchmark: &'a str,
    /// The metric.
    pub metric: &'a str,
    /// Only this suite.
    pub suite: Option<&'a str>,
    /// `KEY=VALUE` tags the metric must carry (`--tags`).
    pub tags: &'a [String],
    /// Only this machine (host name or fingerprint prefix).
    pub machine: Option<&'a str>,
}

/// The stored series `req` names, oldest first: a usage error when no
/// passed run has it, or when it is several series (machines, suites or
/// tag sets) — naming the choices.
pub fn series(store: Option<&Path>, req: &SeriesRequest<'_>) -> Result<Vec<TrendRow>> {
    let tags = parse_tags(req.tags)?;
    let (store, location) = history::open_existing(store)?;
    let rows = store.trend(&TrendQuery {
        suite: req.suite,
        benchmark: req.benchmark,
        metric: req.metric,
        tags: &tags,
        machine: req.machine,
    })?;
    if rows.is_empty() {
        return Err(UsageError(format!(
            "no passed run in {location} has metric '{}' of benchmark '{}'{}",
            req.metric,
            req.benchmark,
            if tags.is_empty() && req.machine.is_none() {
                ""
            } else {
                " with those tags on that machine"
            }
        ))
        .into());
    }
    one_series(rows)
}

fn parse_tags(raw: &[String]) -> Result<BTreeMap<String, String>> {
    raw.iter()
        .map(|t| {
            t.split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| UsageError(format!("--tags '{t}' is not KEY=VALUE")).into())
        })
        .collect()
}

/// The one series `rows` hold, or a usage error naming the choices.
fn one_series(rows: Vec<TrendRow>) -> Result<Vec<TrendRow>> {
    let distinct =
        |key: &dyn Fn(&TrendRow) -> String| rows.iter().map(key).collect::<BTreeSet<String>>();
    let machines = distinct(&|r| format!("{} ({})", r.hostname, r.fingerprint));
    if machines.len() > 1 {
        return Err(UsageError(format!(
            "the history holds this metric for {} machines; pick one with --machine: {}",
            machines.len(),
            Vec::from_iter(machines).join(", ")
        ))
        .into());
    }
    let series = distinct(&|r| format!("{} [{}]", r.suite, warpt_model::tag_label(&r.tags)));
    if series.len() > 1 {
        return Err(UsageError(format!(
            "several series match; narrow with --suite or --tags KEY=VALUE: {}",
            Vec::from_iter(series).join(", ")
        ))
        .into());
    }
    Ok(rows)
}
