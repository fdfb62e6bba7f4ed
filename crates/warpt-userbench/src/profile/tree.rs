//! `warpt harness run --profile TOOL` over a whole tree: one extra, untimed
//! run of every file under the profiler; `profile.json` lists the
//! artifacts and figures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Profiled, Profiler, profile};
use crate::config::BenchConfig;
use crate::discover::Manifest;
use crate::driver::LoadOptions;
use crate::run::Settings;

/// `harness run --profile`: profiles every file of `manifest` at its first
/// combination, after the timed runs; prints one line each on stderr and
/// writes `profile/profile.json` in `out_dir`. Never fails the run.
pub fn profile_tree(
    tool: Profiler,
    manifest: &Manifest,
    configs: &BTreeMap<PathBuf, BenchConfig>,
    settings: &Settings,
    out_dir: &Path,
) {
    let files = manifest
        .chapters
        .iter()
        .flat_map(|c| {
            c.pairs.iter().flat_map(move |p| {
                std::iter::once(&p.baseline)
                    .chain(p.optimized.iter())
                    .map(move |f| (c.name.clone(), f.clone()))
            })
        })
        .chain(
            manifest
                .kernels
                .iter()
                .map(|k| ("kernels".to_string(), k.path.clone())),
        );
    let dir = out_dir.join("profile");
    let mut all: Vec<Profiled> = Vec::new();
    for (chapter, file) in files {
        if file.extension().is_none_or(|e| e != "py") {
            eprintln!(
                "profile {chapter}/{}: not a Python file; profile its bench.yaml command directly",
                file.display()
            );
            continue;
        }
        // The first combination that is not skipped (none: nothing runs).
        let combos = file
            .parent()
            .and_then(|d| configs.get(d))
            .map(|c| c.combinations(&settings.python, &settings.matrix))
            .unwrap_or_default();
        let Some(kwargs) = combos
            .into_iter()
            .find(|c| c.skip.is_none())
            .map(|c| c.kwargs)
        else {
            eprintln!(
                "profile {chapter}/{}: every combination is skipped",
                file.display()
            );
            continue;
        };
        let load = LoadOptions {
            kwargs,
            reproducible: settings.reproducible.then_some(settings.seed),
            ..Default::default()
        };
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let p = profile(
            tool,
            &file,
            &settings.python,
            &load,
            &dir,
            &format!("{chapter}__{stem}"),
            settings.profile_limit,
        );
        let figures: Vec<String> = p.figures.iter().map(|(k, v)| format!("{k} {v}")).collect();
        eprintln!(
            "profile {} {chapter}/{stem}: {}{}",
            tool.program(),
            p.artifact
                .as_ref()
                .map_or("no artifact".into(), |a| a.display().to_string()),
            if figures.is_empty() {
                p.note
                    .as_ref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            } else {
                format!(" ({})", figures.join(", "))
            }
        );
        all.push(p);
    }
    if let Ok(text) = serde_json::to_string_pretty(&all) {
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join("profile.json"), text);
    }
}
