//! `warpt harness run --profile TOOL`: one extra, untimed run of every
//! file under the profiler, after the timed runs; `profile.json` lists the
//! artifacts and figures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use warpt_userbench::config::BenchConfig;
use warpt_userbench::discover::Manifest;
use warpt_userbench::driver::LoadOptions;
use warpt_userbench::profile::{Profiled, Profiler, profile as run_profiler};
use warpt_userbench::run::Settings;

use crate::cli::ProfilerChoice;

/// Profiles every file of `manifest` at its first combination; prints one
/// line each and writes `profile.json`. Never fails the run.
pub fn profile(
    tool: ProfilerChoice,
    manifest: &Manifest,
    configs: &BTreeMap<PathBuf, BenchConfig>,
    settings: &Settings,
    out_dir: &Path,
) {
    let tool = match tool {
        ProfilerChoice::Perf => Profiler::Perf,
        ProfilerChoice::PySpy => Profiler::PySpy,
        ProfilerChoice::Nsys => Profiler::Nsys,
        ProfilerChoice::Ncu => Profiler::Ncu,
        ProfilerChoice::Torch => Profiler::Torch,
    };
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
        // The first combination that is not skipped (none: nothing runs).
        let combos = file
            .parent()
            .and_then(|d| configs.get(d))
            .map(|c| c.combinations(&settings.python))
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
        };
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let p = run_profiler(
            tool,
            &file,
            &settings.python,
            &load,
            &dir,
            &format!("{chapter}__{stem}"),
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
