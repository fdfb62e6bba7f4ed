//! `summary.md`: the summary for people.

use std::fmt::Write;

use warpt_model::escape::markdown as cell;

use super::{Entry, Summary};

fn ms(v: f64) -> String {
    format!("{v:.4}")
}

fn tags(e: &Entry) -> String {
    warpt_model::tag_label(&e.tags)
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "–".into(), f)
}

fn tag_suffix(e: &Entry) -> String {
    let t = tags(e);
    if t.is_empty() || t == "–" {
        String::new()
    } else {
        format!(" [{t}]")
    }
}

/// A traceback indented into a list item's code block.
fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `## Energy` section (`--monitor`): each benchmark's joules and
/// watts, by source, and joules per op; or why none was measured.
fn energy(out: &mut String, s: &Summary) {
    let measured: Vec<(&Entry, &crate::summary::EnergyFigures)> = s
        .benchmarks
        .iter()
        .filter_map(|e| Some((e, e.energy.as_ref()?)))
        .collect();
    if measured.is_empty() {
        if let Some(why) = &s.energy_note {
            let _ = writeln!(out, "\n## Energy\n\nNot measured: {}", cell(why));
        }
        return;
    }
    let mut sources: Vec<&str> = Vec::new();
    for source in warpt_model::ENERGY_SOURCES {
        if measured.iter().any(|(_, f)| f.sources.contains_key(source)) {
            sources.push(source);
        }
    }
    let _ = writeln!(out, "\n## Energy\n");
    let heads: String = sources.iter().map(|s| format!(" {s} J |")).collect();
    let rules: String = sources.iter().map(|_| "---:|").collect();
    let _ = writeln!(
        out,
        "| benchmark | tags | energy J | mean power W | J / op |{heads}"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|{rules}");
    for (e, f) in measured {
        let split: String = sources
            .iter()
            .map(|src| {
                format!(
                    " {} |",
                    opt(f.sources.get(*src).copied(), |j| format!("{j:.3}"))
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {:.3} | {:.1} | {} |{split}",
            cell(&e.id),
            cell(&tags(e)),
            f.energy_j,
            f.mean_power_w,
            opt(f.energy_per_op, |j| format!("{j:.3e}")),
        );
    }
}

/// The `## Environment` section from `env.json`'s contents: what ran the
/// benchmarks (a field not there reads `–`).
fn environment(env: &serde_json::Value) -> String {
    let text = |pointer: &str| -> String {
        match env.pointer(pointer) {
            Some(serde_json::Value::String(s)) if !s.is_empty() => s.clone(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            _ => "–".into(),
        }
    };
    let gib = env
        .pointer("/system/memory/total_bytes")
        .and_then(serde_json::Value::as_f64)
        .map_or("–".into(), |b| format!("{:.1} GiB", b / 1073741824.0));
    let dirty = if env.pointer("/git_dirty") == Some(&serde_json::Value::Bool(true)) {
        " (uncommitted changes)"
    } else {
        ""
    };
    let rows = [
        (
            "warpt",
            format!("{} ({})", text("/warpt_version"), text("/build_profile")),
        ),
        (
            "Python",
            format!("{} ({})", text("/python"), text("/python_executable")),
        ),
        ("NumPy", text("/numpy")),
        ("PyTorch", text("/torch")),
        ("git commit", format!("{}{dirty}", text("/git_commit"))),
        (
            "CPU",
            format!(
                "{}, {} logical CPUs",
                text("/system/cpu/model"),
                text("/system/cpu/logical_cores")
            ),
        ),
        ("memory", gib),
        (
            "OS",
            format!(
                "{}, kernel {}",
                text("/system/os/name"),
                text("/system/os/kernel")
            ),
        ),
        ("host", text("/system/os/hostname")),
    ];
    let mut out = String::from("\n## Environment\n\n| | |\n|---|---|\n");
    for (what, value) in rows {
        let _ = writeln!(out, "| {what} | {} |", cell(&value));
    }
    out
}

/// The whole report, with the Environment section when `env` (env.json's
/// contents) is given.
pub fn markdown(s: &Summary, env: Option<&serde_json::Value>) -> String {
    let mut out = String::new();
    let o = &s.overall;
    let _ = writeln!(out, "# warpt harness: {}\n", cell(&s.root));
    let _ = writeln!(
        out,
        "Run `{}`{}.\n",
        s.run_id,
        s.started
            .as_deref()
            .map(|t| format!(", started {t}"))
            .unwrap_or_default()
    );
    let _ = writeln!(out, "## Overall\n");
    let _ = writeln!(
        out,
        "| chapters | total | passed | failed | skipped | regressed | geomean speedup | best | worst |"
    );
    let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|---:|---|---|");
    let pick = |p: &Option<(String, f64)>| {
        p.as_ref()
            .map_or("–".into(), |(id, v)| format!("{} ({v:.2}x)", cell(id)))
    };
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        s.chapters,
        o.total,
        o.passed,
        o.failed,
        o.skipped,
        o.regressed,
        opt(o.geomean_speedup, |g| format!("{g:.2}x")),
        pick(&s.best),
        pick(&s.worst)
    );

    let _ = writeln!(out, "## Chapters\n");
    let _ = writeln!(
        out,
        "| chapter | total | passed | failed | skipped | geomean speedup |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
    for c in &s.per_chapter {
        let t = &c.totals;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            cell(&c.name),
            t.total,
            t.passed,
            t.failed,
            t.skipped,
            opt(t.geomean_speedup, |g| format!("{g:.2}x"))
        );
    }

    let variants: Vec<&Entry> = s
        .benchmarks
        .iter()
        .filter(|e| e.role == "optimized")
        .collect();
    if !variants.is_empty() {
        let _ = writeln!(out, "\n## Pairs\n");
        let _ = writeln!(
            out,
            "Speedup = median(baseline) / median(optimized) over interleaved rounds; the CI is the \
             paired bootstrap's.\n"
        );
        let _ = writeln!(
            out,
            "| optimized | tags | baseline p50 ms | p50 ms | speedup | 95% CI | verdict | accuracy | status |"
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---|---|---|---|");
        for e in variants {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                cell(&e.id),
                cell(&tags(e)),
                opt(e.baseline_latency_ms, ms),
                opt(e.latency_ms.as_ref().map(|l| l.p50), ms),
                opt(e.speedup, |v| format!("{v:.2}x")),
                e.speedup_ci95
                    .map_or("–".into(), |[a, b]| format!("{a:.2}–{b:.2}x")),
                e.speedup_verdict.as_deref().unwrap_or("–"),
                cell(e.accuracy_note.as_deref().unwrap_or("–")),
                e.status
            );
        }
    }

    let mut ranked: Vec<&Entry> = s
        .benchmarks
        .iter()
        .filter(|e| e.latency_ms.is_some())
        .collect();
    ranked.sort_by(|a, b| {
        let p = |e: &Entry| e.latency_ms.as_ref().map_or(f64::INFINITY, |l| l.p50);
        p(a).total_cmp(&p(b))
    });
    if !ranked.is_empty() {
        // The percentiles asked for with --percentiles, in order.
        let extra = warpt_model::Percentiles::ordered_keys(
            ranked
                .iter()
                .filter_map(|e| e.latency_ms.as_ref())
                .flat_map(|l| l.percentiles.keys()),
        );
        let extra_head: String = extra.iter().map(|k| format!(" {k} ms |")).collect();
        let extra_rule = "---:|".repeat(extra.len());
        let _ = writeln!(out, "\n## Leaderboard (by p50 latency per call)\n");
        let _ = writeln!(
            out,
            "| # | benchmark | tags | p50 ms | p90 ms | p99 ms |{extra_head} std ms | 95% CI of p50 | samples | ops/s |"
        );
        let _ = writeln!(
            out,
            "|---:|---|---|---:|---:|---:|{extra_rule}---:|---|---:|---:|"
        );
        for (i, e) in ranked.iter().enumerate() {
            if let Some(l) = &e.latency_ms {
                let extra_cells: String = extra
                    .iter()
                    .map(|k| format!(" {} |", l.percentiles.get(k).map_or("–".into(), |v| ms(*v))))
                    .collect();
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} |{extra_cells} {} | {}–{} | {} | {} |",
                    i + 1,
                    cell(&e.id),
                    cell(&tags(e)),
                    ms(l.p50),
                    ms(l.p90),
                    ms(l.p99),
                    ms(l.std),
                    ms(l.ci95[0]),
                    ms(l.ci95[1]),
                    l.n,
                    e.throughput_ops_per_sec
                        .map_or("–".into(), |t| format!("{t:.4e}"))
                );
            }
        }
    }

    let llm: Vec<&Entry> = s
        .benchmarks
        .iter()
        .filter(|e| e.ttft_ms.is_some() || e.tpot_ms.is_some())
        .collect();
    if !llm.is_empty() {
        let _ = writeln!(out, "\n## Inference timing\n");
        let _ = writeln!(
            out,
            "| benchmark | metric | mean | p50 | p90 | p95 | p99 | requests |"
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|");
        for e in llm {
            for (name, f) in [("ttft_ms", &e.ttft_ms), ("tpot_ms", &e.tpot_ms)] {
                if let Some(f) = f {
                    let _ = writeln!(
                        out,
                        "| {} | {name} | {} | {} | {} | {} | {} | {} |",
                        cell(&e.key()),
                        ms(f.mean),
                        ms(f.p50),
                        ms(f.p90),
                        ms(f.p95),
                        ms(f.p99),
                        f.n
                    );
                }
            }
        }
    }

    let _ = writeln!(out, "\n## Resource usage\n");
    let counted = s
        .benchmarks
        .iter()
        .any(|e| e.instructions_per_call.is_some());
    let (head, rule) = if counted {
        (" instructions / call |", "---:|")
    } else {
        ("", "")
    };
    let _ = writeln!(
        out,
        "| benchmark | tags | peak RSS MiB | trials | output |{head}"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---|{rule}");
    for e in &s.benchmarks {
        let instructions = if counted {
            format!(" {} |", opt(e.instructions_per_call, |n| format!("{n:.0}")))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |{instructions}",
            cell(&e.id),
            cell(&tags(e)),
            opt(e.peak_rss_bytes.map(|b| b as f64), |b| format!(
                "{:.1}",
                b / (1024.0 * 1024.0)
            )),
            e.trials.map_or("–".into(), |t| t.to_string()),
            e.output_log
                .as_deref()
                .map_or("–".into(), |l| format!("[log]({l})"))
        );
    }

    energy(&mut out, s);

    let problems: Vec<&Entry> = s
        .benchmarks
        .iter()
        .filter(|e| e.status != "passed")
        .collect();
    if !problems.is_empty() {
        let _ = writeln!(out, "\n## Not passed\n");
        let _ = writeln!(out, "| benchmark | tags | status | why |");
        let _ = writeln!(out, "|---|---|---|---|");
        for e in problems {
            let why = e
                .error
                .as_deref()
                .and_then(|m| m.lines().next())
                .unwrap_or("");
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                cell(&e.id),
                cell(&tags(e)),
                e.status,
                cell(why)
            );
        }
    }

    let with_errors: Vec<&Entry> = s
        .benchmarks
        .iter()
        .filter(|e| !e.errors.is_empty())
        .collect();
    if !with_errors.is_empty() {
        let _ = writeln!(out, "\n## Errors\n");
        for e in with_errors {
            let kept = e
                .latency_ms
                .as_ref()
                .map_or(String::new(), |f| format!(" ({} samples kept)", f.n));
            let _ = writeln!(out, "### {}{}{kept}\n", e.id, tag_suffix(e));
            for err in &e.errors {
                let _ = writeln!(out, "- **{}**: {}", err.stage, cell(&err.message));
                if let Some(tb) = &err.traceback {
                    let _ = writeln!(out, "\n  ```\n{}\n  ```", indent(tb.trim_end()));
                }
            }
            let _ = writeln!(out);
        }
    }

    let _ = writeln!(out, "\n## Key findings\n");
    for f in &s.findings {
        let _ = writeln!(out, "- {}", cell(f));
    }
    let _ = writeln!(out, "\n## Recommendations\n");
    for r in &s.recommendations {
        let _ = writeln!(out, "- {}", cell(r));
    }
    if let Some(env) = env {
        out.push_str(&environment(env));
    }
    out
}
