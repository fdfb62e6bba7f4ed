//! Finding the user's benchmarks in a tree.
//!
//! Two conventions, from the harnesses these users already have:
//!
//! - **Pairs.** Every directory under the root (and the root itself) is a
//!   chapter; in it, `baseline_<stem>.py` pairs with `optimized_<stem>.py`
//!   and `optimized_<stem>_<variant>.py`, so a baseline may have several
//!   optimized variants. The example's name is the stem's first word
//!   (`baseline_moe_dense.py` → `moe`), or the whole stem where two
//!   baselines of a chapter share that word. An optimized file goes to the
//!   baseline with the longest stem it extends.
//! - **Kernels.** A Python file defining `run_benchmark(` (or the
//!   `function_name` its bench.yaml gives) anywhere under `kernels/`,
//!   `src/kernels/` or an extra path is a standalone kernel.
//!
//! A chapter whose bench.yaml names a `command` (an adapter for another
//! language, docs/protocol.md) pairs files of that command's extensions the
//! same way (`baseline_saxpy.cpp` with `optimized_saxpy.cpp`).
//!
//! `__*` and `test_*` files are never benchmarks. Every Python file that is
//! not used is listed in [`Manifest::skipped`] with the reason.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// What a tree holds: `manifest.json` of a harness run.
#[derive(Debug, Clone, Serialize)]
pub struct Manifest {
    /// The directory searched.
    pub root: PathBuf,
    /// Chapters with at least one pair, in natural order (`ch2` before `ch10`).
    pub chapters: Vec<Chapter>,
    /// Standalone kernels, in path order.
    pub kernels: Vec<Kernel>,
    /// Python files that are not benchmarks, each with why.
    pub skipped: Vec<Skipped>,
}

/// A directory of pairs.
#[derive(Debug, Clone, Serialize)]
pub struct Chapter {
    /// The directory's name (the root's own name for files at the top).
    pub name: String,
    /// The directory.
    pub path: PathBuf,
    /// Its pairs, by example name.
    pub pairs: Vec<Pair>,
}

/// A baseline and its optimized variants.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    /// The example's name (see the module doc).
    pub example: String,
    /// The baseline file.
    pub baseline: PathBuf,
    /// The optimized files, at least one, in name order.
    pub optimized: Vec<PathBuf>,
}

/// A standalone kernel: a file with `run_benchmark(problem_size=..., iterations=...)`.
#[derive(Debug, Clone, Serialize)]
pub struct Kernel {
    /// Its path below the kernel directory, without `.py`.
    pub name: String,
    /// The file.
    pub path: PathBuf,
}

/// A Python file that is not a benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why it was not taken.
    pub reason: String,
}

impl Manifest {
    /// The manifest for people: chapters and their pairs, kernels, what was
    /// skipped (each file and why with `verbose`).
    pub fn describe(&self, verbose: bool) -> String {
        let m = self;
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

    /// Pairs over all chapters.
    pub fn pair_count(&self) -> usize {
        self.chapters.iter().map(|c| c.pairs.len()).sum()
    }

    /// Optimized variants over all pairs.
    pub fn variant_count(&self) -> usize {
        self.chapters
            .iter()
            .flat_map(|c| &c.pairs)
            .map(|p| p.optimized.len())
            .sum()
    }
}

/// What can stop a search.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    /// The root, or an extra kernel path, is not a directory.
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    /// A directory or file could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// What was being read.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
}

/// Searches `root` for pairs and kernels, and `kernel_paths` (beside the
/// default `kernels/` and `src/kernels/`) for kernels.
pub fn discover(root: &Path, kernel_paths: &[PathBuf]) -> Result<Manifest, DiscoverError> {
    if !root.is_dir() {
        return Err(DiscoverError::NotADirectory(root.to_path_buf()));
    }
    let mut skipped = Vec::new();
    let mut kernel_roots: Vec<PathBuf> = ["kernels", "src/kernels"]
        .iter()
        .map(|d| root.join(d))
        .filter(|d| d.is_dir())
        .collect();
    for p in kernel_paths {
        if !p.is_dir() {
            return Err(DiscoverError::NotADirectory(p.clone()));
        }
        kernel_roots.push(p.clone());
    }
    // Chapters: the root and its directories, except those that hold
    // kernels (searched below).
    let root_name = root
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| ".".to_string());
    let mut dirs = vec![(root_name, root.to_path_buf())];
    for entry in read_dir(root)? {
        let name = file_name(&entry);
        let is_kernel_root = kernel_roots
            .iter()
            .any(|k| k == &entry || k.starts_with(&entry));
        if entry.is_dir() && !hidden(&name) && !is_kernel_root {
            dirs.push((name, entry));
        }
    }
    dirs[1..].sort_by(|a, b| natural(&a.0, &b.0));
    let mut chapters = Vec::new();
    for (name, path) in dirs {
        let pairs = chapter_pairs(&path, &mut skipped)?;
        if !pairs.is_empty() {
            chapters.push(Chapter { name, path, pairs });
        }
    }
    let mut kernels = Vec::new();
    for k in &kernel_roots {
        find_kernels(k, k, &mut kernels, &mut skipped)?;
    }
    kernels.sort_by(|a, b| a.path.cmp(&b.path));
    kernels.dedup_by(|a, b| a.path == b.path);
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Manifest {
        root: root.to_path_buf(),
        chapters,
        kernels,
        skipped,
    })
}

/// The pairs of one chapter directory; its other Python files go to `skipped`.
fn chapter_pairs(dir: &Path, skipped: &mut Vec<Skipped>) -> Result<Vec<Pair>, DiscoverError> {
    let mut baselines: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut optimized: Vec<(String, PathBuf)> = Vec::new();
    // A bench.yaml that cannot be read is reported when the run loads it.
    let foreign = crate::config::BenchConfig::beside(&dir.join("_"))
        .ok()
        .and_then(|(c, _)| c.foreign());
    for path in read_dir(dir)? {
        let Some(stem) = python_stem(&path).or_else(|| {
            foreign
                .as_ref()
                .filter(|f| path.is_file() && f.runs(&path))
                .and_then(|_| path.file_stem())
                .map(|s| s.to_string_lossy().into_owned())
        }) else {
            continue;
        };
        if let Some(reason) = never_a_benchmark(&stem) {
            skipped.push(skip(&path, reason));
        } else if let Some(s) = stem.strip_prefix("baseline_").filter(|s| !s.is_empty()) {
            baselines.insert(s.to_string(), path);
        } else if let Some(s) = stem.strip_prefix("optimized_").filter(|s| !s.is_empty()) {
            optimized.push((s.to_string(), path));
        } else {
            skipped.push(skip(
                &path,
                "neither baseline_<name>.py nor optimized_<name>.py (a helper module?)",
            ));
        }
    }
    let mut variants: BTreeMap<&str, Vec<PathBuf>> = BTreeMap::new();
    for (o, path) in &optimized {
        // The longest baseline stem this one extends.
        let owner = baselines
            .keys()
            .filter(|s| o == *s || o.starts_with(&format!("{s}_")))
            .max_by_key(|s| s.len());
        match owner {
            Some(s) => variants.entry(s.as_str()).or_default().push(path.clone()),
            None => skipped.push(skip(
                path,
                &format!("no baseline_{o}.py (or one its name extends) in this directory"),
            )),
        }
    }
    let mut pairs = Vec::new();
    for (stem, baseline) in &baselines {
        let Some(mut opt) = variants.remove(stem.as_str()) else {
            skipped.push(skip(
                baseline,
                &format!("no optimized_{stem}.py or optimized_{stem}_*.py beside it"),
            ));
            continue;
        };
        opt.sort();
        let word = first_word(stem);
        let shared = baselines.keys().filter(|s| first_word(s) == word).count() > 1;
        pairs.push(Pair {
            example: if shared {
                stem.clone()
            } else {
                word.to_string()
            },
            baseline: baseline.clone(),
            optimized: opt,
        });
    }
    pairs.sort_by(|a, b| natural(&a.example, &b.example));
    Ok(pairs)
}

/// Kernels in `dir` and below; `base` is the kernel directory names are
/// relative to.
fn find_kernels(
    base: &Path,
    dir: &Path,
    kernels: &mut Vec<Kernel>,
    skipped: &mut Vec<Skipped>,
) -> Result<(), DiscoverError> {
    for path in read_dir(dir)? {
        let name = file_name(&path);
        if path.is_dir() {
            if !hidden(&name) && name != "__pycache__" {
                find_kernels(base, &path, kernels, skipped)?;
            }
            continue;
        }
        let Some(stem) = python_stem(&path) else {
            continue;
        };
        if let Some(reason) = never_a_benchmark(&stem) {
            skipped.push(skip(&path, reason));
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|source| DiscoverError::Io {
            path: path.clone(),
            source,
        })?;
        // bench.yaml's function_name, else run_benchmark (a bad bench.yaml
        // is reported when the run reads it).
        let function = crate::config::BenchConfig::beside(&path)
            .ok()
            .and_then(|(c, _)| c.function_name)
            .unwrap_or_else(|| "run_benchmark".into());
        if text.contains(&format!("def {function}(")) {
            let rel = path.strip_prefix(base).unwrap_or(&path).with_extension("");
            kernels.push(Kernel {
                name: rel.to_string_lossy().replace('\\', "/"),
                path,
            });
        } else {
            skipped.push(skip(
                &path,
                &format!("in a kernel directory but defines no {function}()"),
            ));
        }
    }
    Ok(())
}

/// Why a file with this stem is never a benchmark, if it is not.
fn never_a_benchmark(stem: &str) -> Option<&'static str> {
    if stem.starts_with("__") {
        Some("__ files (__init__.py and the like) are never benchmarks")
    } else if stem.starts_with("test_") {
        Some("test_ files are tests, not benchmarks")
    } else {
        None
    }
}

fn skip(path: &Path, reason: &str) -> Skipped {
    Skipped {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// The entries of `dir`, sorted.
fn read_dir(dir: &Path) -> Result<Vec<PathBuf>, DiscoverError> {
    let io = |source| DiscoverError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        out.push(entry.map_err(io)?.path());
    }
    out.sort();
    Ok(out)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The stem of a `.py` file.
fn python_stem(path: &Path) -> Option<String> {
    (path.is_file() && path.extension().is_some_and(|e| e == "py"))
        .then(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .flatten()
}

fn hidden(name: &str) -> bool {
    name.starts_with('.') || name == "__pycache__"
}

fn first_word(stem: &str) -> &str {
    stem.split('_').next().unwrap_or(stem)
}

/// Natural order: runs of digits compare as numbers (`ch2` < `ch10`).
fn natural(a: &str, b: &str) -> Ordering {
    fn chunks(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for ((da, xa), (db, xb)) in ca.iter().zip(&cb) {
        let ord = if *da && *db {
            let (ta, tb) = (xa.trim_start_matches('0'), xb.trim_start_matches('0'));
            ta.len().cmp(&tb.len()).then(ta.cmp(tb))
        } else {
            xa.cmp(xb)
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    ca.len().cmp(&cb.len()).then(a.cmp(b))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    fn names(paths: &[PathBuf]) -> Vec<String> {
        paths.iter().map(|p| file_name(p)).collect()
    }

    #[test]
    fn finds_pairs_kernels_and_says_why_it_skips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for f in [
            "ch10/baseline_moe.py",
            "ch10/optimized_moe.py",
            "ch10/optimized_moe_sparse.py",
            "ch2/baseline_attn_dense.py",
            "ch2/optimized_attn_dense_fused.py",
            "ch2/baseline_gemm.py",
            "ch2/baseline_gemm_tiled.py",
            "ch2/optimized_gemm_tiled_avx.py",
            "ch2/optimized_gemm.py",
            "ch2/optimized_orphan.py",
            "ch2/baseline_lonely.py",
            "ch2/__init__.py",
            "ch2/test_attn.py",
            "ch2/helpers.py",
            "ch2/notes.txt",
            "ch3/readme.md",
            ".git/baseline_x.py",
        ] {
            write(root, f, "def benchmark_fn(): pass\n");
        }
        write(
            root,
            "kernels/matmul/kernel.py",
            "def run_benchmark(problem_size=1024, iterations=1):\n    pass\n",
        );
        write(root, "kernels/util.py", "X = 1\n");
        write(
            root,
            "src/kernels/fft.py",
            "def run_benchmark(problem_size=8):\n    pass\n",
        );
        let extra = root.join("more");
        write(root, "more/scan.py", "def run_benchmark():\n    pass\n");
        let m = discover(root, std::slice::from_ref(&extra)).expect("discover");

        let chapters: Vec<&str> = m.chapters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            chapters,
            ["ch2", "ch10"],
            "natural order, empty chapters left out"
        );
        let ch2 = &m.chapters[0];
        let examples: Vec<&str> = ch2.pairs.iter().map(|p| p.example.as_str()).collect();
        assert_eq!(examples, ["attn", "gemm", "gemm_tiled"]);
        assert_eq!(
            names(&ch2.pairs[0].optimized),
            ["optimized_attn_dense_fused.py"]
        );
        // The longest baseline stem an optimized name extends owns it.
        assert_eq!(names(&ch2.pairs[1].optimized), ["optimized_gemm.py"]);
        assert_eq!(
            names(&ch2.pairs[2].optimized),
            ["optimized_gemm_tiled_avx.py"]
        );
        let moe = &m.chapters[1].pairs[0];
        assert_eq!(moe.example, "moe");
        assert_eq!(
            names(&moe.optimized),
            ["optimized_moe.py", "optimized_moe_sparse.py"]
        );
        assert_eq!((m.pair_count(), m.variant_count()), (4, 5));

        let kernels: Vec<&str> = m.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(kernels, ["matmul/kernel", "scan", "fft"]);
        let reasons: BTreeMap<String, String> = m
            .skipped
            .iter()
            .map(|s| (file_name(&s.path), s.reason.clone()))
            .collect();
        for (file, why) in [
            ("optimized_orphan.py", "no baseline_orphan.py"),
            ("baseline_lonely.py", "no optimized_lonely.py"),
            ("__init__.py", "__ files"),
            ("test_attn.py", "test_ files"),
            ("helpers.py", "neither baseline_"),
            ("util.py", "no run_benchmark()"),
        ] {
            let got = reasons
                .get(file)
                .unwrap_or_else(|| panic!("{file} not skipped"));
            assert!(got.contains(why), "{file}: {got}");
        }
        assert!(
            !reasons.contains_key("baseline_x.py"),
            "hidden directories are not chapters"
        );
        assert_eq!(m.skipped.len(), 6, "{:?}", m.skipped);
    }

    #[test]
    fn a_missing_root_is_an_error_naming_it() {
        let err = discover(Path::new("/nonexistent/benchmarks"), &[]).expect_err("no tree");
        assert!(err.to_string().contains("/nonexistent/benchmarks"), "{err}");
    }

    #[test]
    fn natural_order_compares_numbers_as_numbers() {
        let mut v = vec!["ch10", "ch2", "ch1", "ch02b", "appendix"];
        v.sort_by(|a, b| natural(a, b));
        assert_eq!(v, ["appendix", "ch1", "ch2", "ch02b", "ch10"]);
    }
}
