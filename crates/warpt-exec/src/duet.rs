//! `--duet`: the two commands measured at the same time, each on its own
//! half of the CPUs this process may use (the halves swapped every pair),
//! released together, so what the
//! host does to one run (another guest's burst, a lower clock, a busy
//! memory bus) it does to the other (Bulej et al., "Duet Benchmarking:
//! Improving Measurement Accuracy in the Cloud", ICPE 2020). The verdict
//! comes from the paired per-run ratios ([`judge`]), which cancel what both
//! runs of a pair shared, not from the two series apart.

pub use warpt_harness::duet::Cpus;
use warpt_harness::duet::together;
use warpt_report::compare::evidence::paired;
use warpt_stats as stats;

use crate::ExecError;
use crate::plan::ExecPlan;
use crate::spawn::{Sample, Spawn};
use crate::state::{Observer, ShellCost, State};

/// Runs `a` on `cpus.a` and `b` on `cpus.b` at the same time
/// ([`warpt_harness::duet::together`]).
pub fn run_pair(
    a: &Spawn,
    b: &Spawn,
    cpus: &Cpus,
) -> (Result<Sample, ExecError>, Result<Sample, ExecError>) {
    match together(|| a.run(None), || b.run(None), cpus) {
        Ok(both) => both,
        Err(e) => (Err(ExecError::Io(e.clone())), Err(ExecError::Io(e))),
    }
}

/// One duet round of the two jobs in `states`: whether to go on (neither
/// failed, and not both stopped by their rules).
pub(crate) fn round(
    states: &mut [State],
    cpus: &Cpus,
    plan: &ExecPlan,
    cost: Option<ShellCost>,
    observer: &dyn Observer,
) -> bool {
    let [a, b] = states else {
        return false;
    };
    let failed = |s: &State| s.result.status != warpt_model::RunStatus::Passed;
    if failed(a) || failed(b) || (a.done && b.done) {
        // A failed side ends the pairs: its partner stops with it.
        a.done = true;
        b.done = true;
        return false;
    }
    if !a.before_run(None) || !b.before_run(None) {
        return true;
    }
    let on = cpus.for_pair(a.result.samples.len());
    let (ra, rb) = run_pair(&a.result.job.spawn, &b.result.job.spawn, &on);
    a.record(ra, plan, cost, observer);
    b.record(rb, plan, cost, observer);
    true
}

/// The duet's verdict on the second command against the first.
#[derive(Debug, Clone, PartialEq)]
pub struct Paired {
    /// Swapped couples of pairs of runs: each the mean log ratio of a pair
    /// run one way round the CPUs and the next run the other.
    pub pairs: usize,
    /// The second's wall time over the first's: the Hodges-Lehmann
    /// estimate of the per-pair log ratios.
    pub ratio: f64,
    /// Its bootstrap 95% CI.
    pub ci95: Option<(f64, f64)>,
    /// The two-sided p-value: Wilcoxon signed-rank from 6 pairs, the
    /// paired t test below.
    pub p: Option<f64>,
    /// `regressed` (the second slower), `improved`, `~` or `inconclusive`.
    pub verdict: &'static str,
}

/// Judges paired wall times `a[i]`, `b[i]` (run together, the CPUs
/// swapped from one pair to the next; an odd last pair is left out): the second
/// `regressed` or `improved` when the test says so at 5%, the ratio's CI
/// excludes 1 and the change is at least `threshold_pct`; `~` when the CI
/// lies within ±threshold; else `inconclusive`. `None` under 2 couples (4
/// pairs).
pub fn judge(a: &[f64], b: &[f64], threshold_pct: f64) -> Option<Paired> {
    let per_pair: Vec<f64> = a.iter().zip(b).map(|(x, y)| (y / x).ln()).collect();
    let d: Vec<f64> = stats::couples(&per_pair)
        .into_iter()
        .filter(|v| v.is_finite())
        .collect();
    if d.len() < 2 {
        return None;
    }
    let ev = paired(&d);
    let (p, ci95) = (ev.p, ev.ratio_ci);
    let ratio = ev.estimate?;
    let t = threshold_pct / 100.0;
    let verdict = match (p, ci95) {
        (Some(p), Some((lo, hi))) if p < 0.05 && (lo > 1.0 || hi < 1.0) => {
            if (ratio - 1.0).abs() < t {
                "~"
            } else if ratio > 1.0 {
                "regressed"
            } else {
                "improved"
            }
        }
        (_, Some((lo, hi))) if lo >= 1.0 - t && hi <= 1.0 + t => "~",
        _ => "inconclusive",
    };
    Some(Paired {
        pairs: d.len(),
        ratio,
        ci95,
        p,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Shared interference: every pair slowed alike (up to 2x), the second
    /// command 3% slower within each pair.
    fn pairs(slowdown: f64) -> (Vec<f64>, Vec<f64>) {
        let host = [1.0, 1.9, 1.1, 1.4, 2.0, 1.0, 1.3, 1.7, 1.05, 1.2];
        let a: Vec<f64> = host.iter().map(|h| 0.1 * h).collect();
        let b: Vec<f64> = host
            .iter()
            .enumerate()
            .map(|(i, h)| 0.1 * h * slowdown * (1.0 + 0.001 * (i % 3) as f64))
            .collect();
        (a, b)
    }

    #[test]
    fn pairing_sees_three_percent_through_a_host_that_doubles_the_time() {
        let (a, b) = pairs(1.03);
        let v = judge(&a, &b, 1.0).unwrap();
        assert_eq!(v.verdict, "regressed", "{v:?}");
        assert!((v.ratio - 1.031).abs() < 0.003, "{v:?}");
        let (a, b) = pairs(0.97);
        assert_eq!(judge(&a, &b, 1.0).unwrap().verdict, "improved");
        // The same series unpaired: a 2x spread hides 3%.
        assert!(warpt_stats::mann_whitney(&a, &pairs(1.03).1) > 0.05);
    }

    #[test]
    fn swapping_the_cpus_cancels_a_faster_cpu() {
        // The first CPU 8% faster; the sides swap it every pair.
        let (mut a, mut b) = pairs(1.03);
        for i in 0..a.len() {
            if i % 2 == 0 {
                a[i] *= 0.92;
            } else {
                b[i] *= 0.92;
            }
        }
        let v = judge(&a, &b, 1.0).unwrap();
        assert_eq!(v.verdict, "regressed", "{v:?}");
        assert!((v.ratio - 1.031).abs() < 0.003, "{v:?}");
    }

    #[test]
    fn an_a_a_duet_is_unchanged_and_three_pairs_are_too_few_to_say() {
        let (a, b) = pairs(1.0);
        assert_eq!(judge(&a, &b, 1.0).unwrap().verdict, "~");
        assert!(judge(&a[..3], &b[..3], 1.0).is_none());
        assert_eq!(judge(&a[..5], &b[..5], 1.0).unwrap().pairs, 2);
    }

    #[test]
    fn a_pair_runs_both_at_once_each_on_its_cpus() {
        let Ok(cpus) = Cpus::split() else {
            return; // one CPU: --duet is refused, as tested above
        };
        let dir = tempfile::tempdir().unwrap();
        // Each side marks its start, records its CPUs, then waits for the
        // other's mark: run one after the other, the first would give up.
        let side = |me: &str, other: &str| Spawn {
            argv: vec![
                "sh".into(),
                "-c".into(),
                format!(
                    "touch {me}; grep Cpus_allowed_list /proc/self/status > {me}.cpus; i=0; \
                     while [ ! -e {other} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; \
                     [ -e {other} ]"
                ),
            ],
            input: None,
            output: crate::spawn::Output::Null,
            own_group: true,
            cwd: Some(dir.path().to_path_buf()),
        };
        let (a, b) = run_pair(&side("a", "b"), &side("b", "a"), &cpus);
        assert!(a.unwrap().exit.success() && b.unwrap().exit.success());
        let list = |f: &str| {
            std::fs::read_to_string(dir.path().join(f))
                .unwrap()
                .split_whitespace()
                .last()
                .unwrap()
                .to_string()
        };
        let (la, lb) = (list("a.cpus"), list("b.cpus"));
        assert_ne!(la, lb);
        assert!(la.contains(&cpus.a[0].to_string()), "{la} vs {:?}", cpus.a);
        assert!(lb.contains(&cpus.b[0].to_string()), "{lb} vs {:?}", cpus.b);
    }
}
