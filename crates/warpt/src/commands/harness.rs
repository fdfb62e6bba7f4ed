//! `warpt harness`: the user's own benchmarks.

use anyhow::Result;
use warpt_userbench::discover::{DiscoverError, Manifest, discover as search};

use crate::cli::HarnessDiscoverArgs;
use crate::{Outcome, UsageError};

/// Lists what a tree holds (`warpt harness discover`).
pub fn discover(args: &HarnessDiscoverArgs) -> Result<Outcome> {
    let manifest = search(&args.dir, &args.paths).map_err(|e| match e {
        DiscoverError::NotADirectory(_) => anyhow::Error::new(UsageError(e.to_string())),
        other => anyhow::Error::new(other),
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&manifest)?);
    } else {
        print!("{}", summary(&manifest, args.verbose));
    }
    Ok(Outcome::Success)
}

/// The manifest for people: chapters and their pairs, kernels, what was
/// skipped (each file and why with `verbose`).
fn summary(m: &Manifest, verbose: bool) -> String {
    let mut out = format!(
        "{}: {} chapter{}, {} pair{} ({} optimized variant{}), {} kernel{}\n",
        m.root.display(),
        m.chapters.len(),
        plural(m.chapters.len()),
        m.pair_count(),
        plural(m.pair_count()),
        m.variant_count(),
        plural(m.variant_count()),
        m.kernels.len(),
        plural(m.kernels.len()),
    );
    let file = |p: &std::path::Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    for c in &m.chapters {
        out.push_str(&format!("\n{}\n", c.name));
        let width = c.pairs.iter().map(|p| p.example.len()).max().unwrap_or(0);
        for p in &c.pairs {
            let opt: Vec<String> = p.optimized.iter().map(|o| file(o)).collect();
            out.push_str(&format!(
                "  {:width$}  {} -> {}\n",
                p.example,
                file(&p.baseline),
                opt.join(", ")
            ));
        }
    }
    if !m.kernels.is_empty() {
        out.push_str("\nkernels\n");
        for k in &m.kernels {
            out.push_str(&format!("  {}  {}\n", k.name, k.path.display()));
        }
    }
    if !m.skipped.is_empty() {
        if verbose {
            out.push_str(&format!(
                "\nskipped {} file{}\n",
                m.skipped.len(),
                plural(m.skipped.len())
            ));
            for s in &m.skipped {
                out.push_str(&format!("  {}: {}\n", s.path.display(), s.reason));
            }
        } else {
            out.push_str(&format!(
                "\nskipped {} Python file{} that {} not benchmarks (--verbose says which and why)\n",
                m.skipped.len(),
                plural(m.skipped.len()),
                if m.skipped.len() == 1 { "is" } else { "are" }
            ));
        }
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
