//! `--measure instructions` for the user's benchmark files: how many
//! instructions one call of `benchmark_fn()` executes, counted by
//! [`warpt_counts`] (the CPU's counters, else cachegrind).
//!
//! A counter sees a whole process, and an interpreter's start, imports and
//! `setup()` dwarf one call. So each count is the difference of two
//! sessions of the adapter that differ only in how many calls they make:
//! load, setup, `N` calls (then `2N`), teardown, exit, read from a script
//! on its standard input. `(count(2N) - count(N)) / N` is one call's work,
//! the interpreter's start, the imports and a version manager's shims
//! cancelled out. Python's hash seed is fixed while counting (the
//! `--reproducible` seed, else 0): a random one moves a dictionary's
//! probing and so the count.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use warpt_counts::{Counts, Source};
use warpt_model::{BenchmarkMetric, ParamValue};

use crate::driver::{Driver, LoadOptions, PYTHON_ADAPTER};

/// Counted session pairs per file: one gives the count, the second shows
/// that it repeats (`instructions_spread_pct`). Each session starts an
/// interpreter, seconds under cachegrind, so two and not three.
pub const COUNT_RUNS: usize = 2;

/// Seconds of calls (at the timed latency) in the shorter counted session:
/// enough work that the per-call count is not lost in the session's own,
/// short enough under cachegrind (20 to 100 times slower).
pub const COUNT_TARGET_S: f64 = 0.005;

/// The most calls a counted session makes.
pub const MAX_COUNT_CALLS: u64 = 100_000;

/// One call's counts, from one pair of sessions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerCall {
    /// Instructions executed in user space.
    pub instructions: f64,
    /// Cachegrind's simulated caches (see [`warpt_counts::CacheCounts`]);
    /// `None` from the CPU's counters.
    pub cache: Option<PerCallCache>,
}

/// One call's simulated cache figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerCallCache {
    /// [`warpt_counts::CacheCounts::estimated_cycles`] per call.
    pub estimated_cycles: f64,
    /// First-level misses per call.
    pub l1_misses: f64,
    /// Last-level misses per call.
    pub ll_misses: f64,
}

/// The calls of the shorter counted session for a function whose call
/// takes `latency_s` seconds: [`COUNT_TARGET_S`] of them, 1 to
/// [`MAX_COUNT_CALLS`].
pub fn calls_for(latency_s: f64) -> u64 {
    if !(latency_s.is_finite() && latency_s > 0.0) {
        return 1;
    }
    ((COUNT_TARGET_S / latency_s).ceil() as u64).clamp(1, MAX_COUNT_CALLS)
}

/// One call's counts from a session of `calls` calls and one of twice as
/// many: their difference over `calls`, never below 0.
pub fn per_call(short: &Counts, long: &Counts, calls: u64) -> PerCall {
    let diff = |a: u64, b: u64| (b as f64 - a as f64).max(0.0) / calls.max(1) as f64;
    PerCall {
        instructions: diff(short.instructions, long.instructions),
        cache: short.cache.zip(long.cache).map(|(s, l)| PerCallCache {
            estimated_cycles: diff(
                s.estimated_cycles(short.instructions),
                l.estimated_cycles(long.instructions),
            ),
            l1_misses: diff(s.l1_misses, l.l1_misses),
            ll_misses: diff(s.ll_misses, l.ll_misses),
        }),
    }
}

/// The requests of one counted session, one JSON object a line: load,
/// setup, `calls` calls (their returns not kept), teardown, exit.
pub fn script(file: &Path, options: &LoadOptions, calls: u64) -> String {
    [
        Driver::load_request(file, options),
        json!({"op": "setup"}),
        json!({"op": "run", "calls": calls, "record": false}),
        json!({"op": "teardown"}),
        json!({"op": "exit"}),
    ]
    .iter()
    .map(|r| format!("{r}\n"))
    .collect()
}

/// How a counted session's adapter starts.
#[derive(Debug, Clone)]
pub struct Session {
    /// The adapter's command line.
    pub argv: Vec<String>,
    /// Its directory, when not this one.
    pub cwd: Option<PathBuf>,
    /// Its environment, besides this process's.
    pub env: Vec<(String, String)>,
}

impl Session {
    /// Python's adapter under the interpreter `python` resolves to (its
    /// `sys.executable`: a version manager's shim is a shell script whose
    /// work would be counted too, and slowly).
    pub fn python(python: &str, options: &LoadOptions) -> Session {
        let resolved = Command::new(python)
            .args(["-c", "import sys; sys.stdout.write(sys.executable)"])
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .filter(|p| !p.trim().is_empty())
            .unwrap_or_else(|| python.to_string());
        let seed = options.reproducible.unwrap_or(0) % u64::from(u32::MAX);
        let mut env = env_of(options);
        env.push(("PYTHONHASHSEED".into(), seed.to_string()));
        Session {
            argv: vec![resolved, "-c".into(), PYTHON_ADAPTER.into()],
            cwd: None,
            env,
        }
    }

    /// The adapter a bench.yaml `command` starts (`sh -c`, in `file`'s
    /// directory).
    pub fn command(line: &str, file: &Path, options: &LoadOptions) -> Session {
        Session {
            argv: vec!["sh".into(), "-c".into(), line.into()],
            cwd: file
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map(Path::to_path_buf),
            env: env_of(options),
        }
    }

    /// Counts one session of `calls` calls of `file`'s function, checking
    /// that the adapter answered every request with `ok`.
    fn count(
        &self,
        source: &Source,
        file: &Path,
        options: &LoadOptions,
        calls: u64,
    ) -> Result<Counts, String> {
        let dir = tempfile::Builder::new()
            .prefix("warpt-count")
            .tempdir()
            .map_err(|e| format!("a directory for the counted session: {e}"))?;
        let (requests, replies) = (dir.path().join("requests"), dir.path().join("replies"));
        std::fs::write(&requests, script(file, options, calls))
            .map_err(|e| format!("writing {}: {e}", requests.display()))?;
        let setup = |cmd: &mut Command| {
            if let Some(d) = &self.cwd {
                cmd.current_dir(d);
            }
            cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
            match (
                std::fs::File::open(&requests),
                std::fs::File::create(&replies),
            ) {
                (Ok(i), Ok(o)) => cmd.stdin(i).stdout(o),
                _ => cmd.stdin(Stdio::null()).stdout(Stdio::null()),
            };
        };
        let counts = source
            .count(&self.argv, &setup)
            .map_err(|e| e.to_string())?;
        let text = std::fs::read_to_string(&replies)
            .map_err(|e| format!("reading the adapter's replies: {e}"))?;
        check_replies(&text)?;
        Ok(counts)
    }
}

fn env_of(options: &LoadOptions) -> Vec<(String, String)> {
    options
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.display().to_string()))
        .collect()
}

/// Every request of the script answered with `ok` (5 replies), else the
/// first error the adapter gave.
pub fn check_replies(text: &str) -> Result<(), String> {
    let replies: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
        .collect();
    if let Some(bad) = replies.iter().find(|r| r["ok"] != true) {
        let why = bad["error"]
            .as_str()
            .unwrap_or("a reply that is not the protocol's");
        return Err(format!("the counted session failed: {why}"));
    }
    if replies.len() < 5 {
        return Err(format!(
            "the counted session ended after {} of 5 replies",
            replies.len()
        ));
    }
    Ok(())
}

/// [`COUNT_RUNS`] per-call counts of `file`'s function: each from a
/// session of `calls` calls and one of `2 x calls`.
pub fn count_per_call(
    source: &Source,
    session: &Session,
    file: &Path,
    options: &LoadOptions,
    calls: u64,
) -> Result<Vec<PerCall>, String> {
    (0..COUNT_RUNS)
        .map(|_| {
            let short = session.count(source, file, options, calls)?;
            let long = session.count(source, file, options, 2 * calls)?;
            Ok(per_call(&short, &long, calls))
        })
        .collect()
}

/// A result's details, as [`warpt_harness::Measured`] carries them.
pub type Details = Vec<(String, ParamValue)>;

/// `measure=instructions` for one file: its per-call counts as metrics
/// (`instructions`; from cachegrind also `estimated_cycles`, `l1_misses`,
/// `ll_misses`), each with a sample per session pair, and the details
/// (`count_source`, `count_calls`, `count_runs`). `latency_s` is the timed
/// latency of a call, which sets the sessions' calls.
pub fn measure(
    source: &Source,
    session: &Session,
    file: &Path,
    options: &LoadOptions,
    latency_s: f64,
) -> Result<(Vec<BenchmarkMetric>, Details), String> {
    let calls = calls_for(latency_s);
    let counted = count_per_call(source, session, file, options, calls)?;
    type Column = fn(&PerCall) -> Option<f64>;
    let columns: [(&str, &str, Column); 4] = [
        ("instructions", "instructions", |p| Some(p.instructions)),
        ("estimated_cycles", "cycles", |p| {
            p.cache.map(|c| c.estimated_cycles)
        }),
        ("l1_misses", "misses", |p| p.cache.map(|c| c.l1_misses)),
        ("ll_misses", "misses", |p| p.cache.map(|c| c.ll_misses)),
    ];
    let metrics = columns
        .into_iter()
        .filter_map(|(name, unit, column)| {
            let values: Option<Vec<f64>> = counted.iter().map(column).collect();
            let stats = warpt_model::MetricStats::summarize(&values?)?;
            Some(BenchmarkMetric {
                name: name.into(),
                value: stats.median,
                unit: unit.into(),
                higher_is_better: false,
                tags: Default::default(),
                stats: Some(stats),
            })
        })
        .collect();
    let (lo, hi) = counted
        .iter()
        .map(|p| p.instructions)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    let spread_pct = if hi > 0.0 {
        (hi - lo) / hi * 100.0
    } else {
        0.0
    };
    let details = vec![
        ("count_source".into(), ParamValue::from(source.name())),
        (
            "instructions_spread_pct".into(),
            ParamValue::Float(spread_pct),
        ),
        ("count_calls".into(), ParamValue::Int(calls as i64)),
        ("count_runs".into(), ParamValue::Int(COUNT_RUNS as i64)),
    ];
    Ok((metrics, details))
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpt_counts::CacheCounts;

    #[test]
    fn the_calls_fill_the_target_time_within_bounds() {
        assert_eq!(calls_for(0.001), 5);
        assert_eq!(calls_for(1.0), 1);
        assert_eq!(calls_for(1e-9), MAX_COUNT_CALLS);
        assert_eq!(calls_for(f64::NAN), 1);
        assert_eq!(calls_for(0.0), 1);
    }

    #[test]
    fn one_call_is_the_difference_of_the_two_sessions() {
        let cache = |refs, l1, ll| {
            Some(CacheCounts {
                data_refs: refs,
                l1_misses: l1,
                ll_misses: ll,
            })
        };
        let short = Counts {
            instructions: 150_000_000,
            cache: cache(40_000_000, 2_000_000, 90_000),
        };
        let long = Counts {
            instructions: 150_000_000 + 100 * 1_500,
            cache: cache(40_000_000 + 100 * 400, 2_000_000 + 100 * 3, 90_000 + 100),
        };
        let p = per_call(&short, &long, 100);
        assert_eq!(p.instructions, 1_500.0);
        let c = p.cache.unwrap();
        assert_eq!((c.l1_misses, c.ll_misses), (3.0, 1.0));
        // 1,500 + 400 + 10 x (3 - 1) + 100 x 1
        assert_eq!(c.estimated_cycles, 2_020.0);
        // A session that happened to count fewer is no negative work.
        assert_eq!(per_call(&long, &short, 100).instructions, 0.0);
    }

    #[test]
    fn a_failed_request_or_a_short_session_is_an_error() {
        let ok = "{\"ok\": true}\n".repeat(5);
        assert!(check_replies(&ok).is_ok());
        let raised = "{\"ok\": true}\n{\"ok\": false, \"error\": \"ValueError: no\"}\n";
        assert!(
            check_replies(raised)
                .unwrap_err()
                .contains("ValueError: no")
        );
        assert!(
            check_replies("{\"ok\": true}\n")
                .unwrap_err()
                .contains("1 of 5")
        );
    }

    #[test]
    fn the_script_loads_sets_up_calls_and_exits() {
        let s = script(Path::new("/b/k.py"), &LoadOptions::default(), 7);
        let ops: Vec<Value> = s
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let names: Vec<&str> = ops.iter().map(|o| o["op"].as_str().unwrap()).collect();
        assert_eq!(names, ["load", "setup", "run", "teardown", "exit"]);
        assert_eq!(ops[2]["calls"], 7);
        assert_eq!(ops[2]["record"], false);
        assert_eq!(ops[0]["path"], "/b/k.py");
    }
}
