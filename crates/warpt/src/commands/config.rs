//! `warpt config show`: the effective configuration and its sources.

use anyhow::Result;
use comfy_table::Table;
use comfy_table::presets::UTF8_BORDERS_ONLY;

use crate::Outcome;
use crate::cli::ConfigShowArgs;
use warpt_run::config::{Config, Flags, Setting};

fn row<T: std::fmt::Debug>(t: &mut Table, key: &str, s: &Setting<T>, show: impl Fn(&T) -> String) {
    t.add_row(vec![key.to_string(), show(&s.value), s.source.to_string()]);
}

/// Prints every setting with its value and source.
pub fn show(args: &ConfigShowArgs) -> Result<Outcome> {
    let mut config = Config::load(
        args.config.as_deref(),
        &|k| std::env::var(k).ok(),
        &Flags::default(),
    )?;
    // A PostgreSQL store's URL may carry its password.
    if let Some(url) = config.store.value.as_mut() {
        *url = warpt_model::redact_secrets(url);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&config)?);
        return Ok(Outcome::Success);
    }
    println!(
        "config file: {}",
        config.file.as_deref().unwrap_or("(none found)")
    );
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY)
        .set_header(vec!["key", "value", "source"]);
    row(&mut t, "duration", &config.duration, |v| {
        v.map_or("each benchmark's default".into(), |d| format!("{d} s"))
    });
    row(&mut t, "burnin_seconds", &config.burnin_seconds, |v| {
        format!("{v} s")
    });
    row(&mut t, "seed", &config.seed, |v| v.to_string());
    row(&mut t, "precision", &config.precision, |v| format!("{v} %"));
    row(
        &mut t,
        "timeout_multiplier",
        &config.timeout_multiplier,
        |v| v.to_string(),
    );
    row(&mut t, "suite_timeout", &config.suite_timeout, |v| {
        if *v > 0.0 {
            format!("{v} s")
        } else {
            "none".into()
        }
    });
    row(&mut t, "percentiles", &config.percentiles, |v| {
        if v.is_empty() {
            "the standard ones (p25 p50 p75 p90 p95 p99)".into()
        } else {
            v.values()
                .iter()
                .map(|q| warpt_model::Percentiles::key(*q))
                .collect::<Vec<_>>()
                .join(" ")
        }
    });
    row(&mut t, "in_process", &config.in_process, |v| v.to_string());
    row(&mut t, "description", &config.description, |v| {
        v.clone().unwrap_or_else(|| "(none)".into())
    });
    for (k, s) in &config.labels {
        row(&mut t, &format!("labels.{k}"), s, |v| v.clone());
    }
    row(&mut t, "store", &config.store, |v| {
        v.clone().unwrap_or_else(|| {
            warpt_store::default_path()
                .map_or("(no home directory)".into(), |p| p.display().to_string())
        })
    });
    row(&mut t, "timeouts", &config.timeouts, limits);
    for (id, s) in &config.benchmark_timeouts {
        row(&mut t, &format!("benchmark_timeouts.{id}"), s, |v| {
            limits(v)
        });
    }
    for (k, s) in &config.params {
        row(&mut t, &format!("params.{k}"), s, |v| v.clone());
    }
    println!("{t}");
    Ok(Outcome::Success)
}

fn limits(l: &warpt_model::StageLimits) -> String {
    let parts: Vec<String> = [
        ("setup", l.setup),
        ("warmup", l.warmup),
        ("measure", l.measure),
        ("validate", l.validate),
    ]
    .iter()
    .filter_map(|(n, v)| v.map(|s| format!("{n}={s}s")))
    .collect();
    if parts.is_empty() {
        "defaults".into()
    } else {
        parts.join(" ")
    }
}
