//! `--profile`: one extra run of a benchmark file under a profiler —
//! never a timed one — with its artifact kept and key figures read back.
//!
//! The adapter runs under the profiler's command line (`perf stat`,
//! `py-spy record`, `nsys profile`, `ncu`), or, for `torch`, profiles its
//! own calls with `torch.profiler`. The run loads and sets up the file,
//! calls `benchmark_fn()` in batches for about half a second, and tears
//! down; the profiler sees all of it (import and setup included), which
//! the figures' note says. A profiler that is not installed, or that the
//! machine refuses (perf without counters), is a note, never a failure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::driver::{Driver, LoadOptions};

mod tree;

pub use tree::profile_tree;

/// The profilers `--profile` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profiler {
    /// `perf stat`: task-clock, context switches, page faults, migrations.
    Perf,
    /// `py-spy record`: a flame graph.
    PySpy,
    /// Nsight Systems.
    Nsys,
    /// Nsight Compute.
    Ncu,
    /// `torch.profiler`, inside the adapter: a Chrome trace.
    Torch,
}

impl Profiler {
    /// The tool's command name.
    pub fn program(self) -> &'static str {
        match self {
            Profiler::Perf => "perf",
            Profiler::PySpy => "py-spy",
            Profiler::Nsys => "nsys",
            Profiler::Ncu => "ncu",
            Profiler::Torch => "torch",
        }
    }
}

/// One profiled file.
#[derive(Debug, Clone, Serialize)]
pub struct Profiled {
    /// The file.
    pub file: PathBuf,
    /// The tool.
    pub tool: Profiler,
    /// Its artifact, when it wrote one.
    pub artifact: Option<PathBuf>,
    /// Figures read from it (perf: `task_clock_ms`, `context_switches`,
    /// `page_faults`, `cpu_migrations`).
    pub figures: BTreeMap<String, f64>,
    /// Calls of benchmark_fn() in the profiled run.
    pub calls: u64,
    /// What to know about it, or why there is nothing.
    pub note: Option<String>,
}

/// How long the profiled run calls benchmark_fn().
const PROFILED_TIME: Duration = Duration::from_millis(500);

fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Reads `perf stat -x,` output: value,unit,event,...
fn perf_figures(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 3 {
            continue;
        }
        let Ok(v) = f[0].trim().parse::<f64>() else {
            continue;
        };
        let event = f[2].trim().split(':').next().unwrap_or("");
        let key = match event {
            "task-clock" => "task_clock_ms",
            "context-switches" => "context_switches",
            "page-faults" => "page_faults",
            "cpu-migrations" => "cpu_migrations",
            _ => continue,
        };
        out.insert(key.to_string(), v);
    }
    out
}

/// How long a profiled run may take when nothing says otherwise
/// (`--profile-timeout`): a profiler slows what it watches, Nsight
/// Compute by orders of magnitude.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(180);

/// Profiles `file` (loaded with `load`) with `tool`, writing artifacts
/// named `name.*` in `dir`; a run past `limit` is stopped (its process
/// group killed) and says so.
pub fn profile(
    tool: Profiler,
    file: &Path,
    python: &str,
    load: &LoadOptions,
    dir: &Path,
    name: &str,
    limit: Duration,
) -> Profiled {
    let mut p = Profiled {
        file: file.to_path_buf(),
        tool,
        artifact: None,
        figures: BTreeMap::new(),
        calls: 0,
        note: None,
    };
    if tool != Profiler::Torch && !installed(tool.program()) {
        p.note = Some(format!(
            "{} is not installed; nothing profiled",
            tool.program()
        ));
        return p;
    }
    if let Err(e) = std::fs::create_dir_all(dir) {
        p.note = Some(format!("{}: {e}", dir.display()));
        return p;
    }
    let base = dir.join(name);
    let with = |ext: &str| PathBuf::from(format!("{}.{ext}", base.display()));
    let adapter = Driver::python_command(python, load);
    let mut cmd = match tool {
        Profiler::Perf => {
            let mut c = Command::new("perf");
            c.args(["stat", "-x", ",", "-e"])
                .arg("task-clock,context-switches,page-faults,cpu-migrations")
                .arg("-o")
                .arg(with("perf.txt"))
                .arg("--");
            c
        }
        Profiler::PySpy => {
            let mut c = Command::new("py-spy");
            c.args(["record", "--nonblocking", "-o"])
                .arg(with("svg"))
                .arg("--");
            c
        }
        Profiler::Nsys => {
            let mut c = Command::new("nsys");
            c.args(["profile", "-o"]).arg(&base);
            c
        }
        Profiler::Ncu => {
            let mut c = Command::new("ncu");
            c.args(["-o"]).arg(&base);
            c
        }
        Profiler::Torch => Command::new(adapter.get_program()),
    };
    if tool == Profiler::Torch {
        cmd.env("WARPT_TORCH_PROFILE", with("trace.json"));
    } else {
        cmd.arg(adapter.get_program());
    }
    cmd.args(adapter.get_args());
    for (k, v) in adapter.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    let stderr = std::fs::File::create(with("stderr.txt"));
    if let Ok(f) = stderr {
        cmd.stderr(f);
    }
    let work = |d: Result<Driver, crate::driver::DriverError>| -> Result<u64, String> {
        let mut d = d.map_err(|e| e.to_string())?;
        d.setup().map_err(|e| e.to_string())?;
        let start = Instant::now();
        let mut calls = 0u64;
        let mut batch = 1u64;
        while start.elapsed() < PROFILED_TIME {
            d.run(batch).map_err(|e| e.to_string())?;
            calls += batch;
            batch = batch.saturating_mul(2).min(1 << 20);
        }
        d.teardown().map_err(|e| e.to_string())?;
        d.finish().map_err(|e| e.to_string())?;
        Ok(calls)
    };
    let outcome = match Driver::start_limited(cmd, tool.program(), file, load, limit, work) {
        Ok(Some(done)) => done,
        Ok(None) => {
            p.note = Some(format!(
                "the profiled run took longer than its limit of {:.0} s and was stopped \
                 (--profile-timeout); nothing profiled",
                limit.as_secs_f64()
            ));
            return p;
        }
        Err(e) => Err(e.to_string()),
    };
    match outcome {
        Ok(calls) => p.calls = calls,
        Err(e) => {
            let tail = std::fs::read_to_string(with("stderr.txt")).unwrap_or_default();
            let last = tail
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            p.note = Some(format!("the profiled run failed: {e}; {last}"));
            return p;
        }
    }
    let artifact = match tool {
        Profiler::Perf => with("perf.txt"),
        Profiler::PySpy => with("svg"),
        Profiler::Nsys => with("nsys-rep"),
        Profiler::Ncu => with("ncu-rep"),
        Profiler::Torch => with("trace.json"),
    };
    if tool == Profiler::Perf {
        let text = std::fs::read_to_string(&artifact).unwrap_or_default();
        p.figures = perf_figures(&text);
        p.note = Some(if p.figures.is_empty() {
            "perf stat reported no counters here (not supported on this machine)".into()
        } else {
            "perf stat over the whole profiled process: interpreter start, import and setup included"
                .into()
        });
    }
    if artifact.is_file() {
        p.artifact = Some(artifact);
    } else if p.note.is_none() {
        p.note = Some(match tool {
            Profiler::Torch => "torch is not imported by this file; nothing profiled".into(),
            _ => format!("{} wrote no artifact", tool.program()),
        });
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_stat_csv_is_read() {
        let text = "# started on x\n\n12.50,msec,task-clock,12500000,100.00,0.9,CPUs utilized\n\
                    3,,context-switches,12500000,100.00,0.240,K/sec\n\
                    <not supported>,,cpu-migrations,0,100.00,,\n\
                    1234,,page-faults:u,12500000,100.00,98.7,K/sec\n";
        let f = perf_figures(text);
        assert_eq!(f["task_clock_ms"], 12.5);
        assert_eq!(f["context_switches"], 3.0);
        assert_eq!(f["page_faults"], 1234.0);
        assert!(!f.contains_key("cpu_migrations"));
    }

    #[test]
    fn a_profiled_run_past_its_limit_is_stopped_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("baseline_hang.py");
        std::fs::write(
            &file,
            "import time\nclass B:\n    def setup(self): time.sleep(600)\n    \
             def benchmark_fn(self): pass\n    def teardown(self): pass\n",
        )
        .unwrap();
        let p = profile(
            Profiler::Torch,
            &file,
            "python3",
            &LoadOptions::default(),
            &dir.path().join("profile"),
            "hang",
            Duration::from_millis(500),
        );
        let note = p.note.unwrap();
        assert!(note.contains("longer than its limit"), "{note}");
        assert!(note.contains("--profile-timeout"), "{note}");
        assert_eq!(p.calls, 0);
        assert!(p.artifact.is_none());
    }
}
