//! hyperfine's conventions: its statistics of a command's runs, and its
//! terminal layout. The exports in hyperfine's shapes are warpt-export's.

use crate::state::JobResult;

/// The mean as hyperfine reports it (0 for no runs).
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        warpt_stats::mean(v)
    }
}

/// The sample standard deviation, as hyperfine reports it (none below two).
pub fn stddev(v: &[f64]) -> Option<f64> {
    (v.len() > 1).then(|| warpt_stats::mean_var(v).1.sqrt())
}

/// Each run's wall-clock time, seconds.
pub fn walls(r: &JobResult) -> Vec<f64> {
    r.samples.iter().map(|s| s.wall_s).collect()
}

/// A duration as hyperfine prints it.
pub fn time(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

/// The terminal block of job number `i` (from 0), in hyperfine's layout:
/// mean ± σ with user and system time, range and runs, then warnings.
pub fn describe(i: usize, r: &JobResult) -> String {
    let mut out = format!("Benchmark {}: {}\n", i + 1, r.job.name);
    let w = walls(r);
    if let (Some(lo), Some(hi)) = (
        w.iter().copied().reduce(f64::min),
        w.iter().copied().reduce(f64::max),
    ) {
        let user: Vec<f64> = r.samples.iter().map(|s| s.user_s).collect();
        let sys: Vec<f64> = r.samples.iter().map(|s| s.sys_s).collect();
        out += &format!(
            "  Time (mean ± σ):   {} ± {}    [User: {}, System: {}]\n  Range (min … max): {} … {}    {} runs\n",
            time(mean(&w)),
            time(stddev(&w).unwrap_or(0.0)),
            time(mean(&user)),
            time(mean(&sys)),
            time(lo),
            time(hi),
            w.len()
        );
        if r.failed_runs > 0 {
            out += &format!(
                "  Warning: {} runs exited non-zero (--ignore-failure)\n",
                r.failed_runs
            );
        }
    }
    if r.status != warpt_model::RunStatus::Passed {
        out += &format!("  {}: {}\n", r.status, r.message.as_deref().unwrap_or(""));
    }
    out
}
