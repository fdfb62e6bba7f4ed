//! The statistical evidence for one metric, chosen by what each side holds.
//!
//! - **paired trials** (`compare --rerun`: trial i of each side ran in the
//!   same round; with `--duet` at the same time, two rounds averaged into
//!   each couple): the per-round log ratios, tested against 0 with the
//!   Wilcoxon signed-rank test from 6 pairs (below that it cannot reach
//!   5%) and the paired t test below;
//! - **trials** (at least 3 runs a side, `--repeat`): the trial medians,
//!   with the Mann-Whitney U test when it can reach the significance level
//!   (4 against 4 or more) and Welch's t test on their logarithms below;
//! - **samples** (one run a side): the Mann-Whitney U test on the raw
//!   samples, which tells whether the two *runs* differ, not the code; the
//!   verdict then rests on the noise band;
//! - **band** (anything else, e.g. 3 trials against 1 run): no test; the
//!   noise band alone decides.

use warpt_model::BenchmarkMetric;

use warpt_stats as stats;

/// Fewest raw samples per side for the rank test on samples.
pub const MIN_SAMPLES: usize = 4;
/// Fewest trials per side for a test on trial medians.
pub const MIN_TRIALS: usize = 3;
/// Fewest pairs for the signed-rank test (5 pairs cannot give p < 0.05).
pub const MIN_SIGNED_RANK: usize = 6;

/// How trial i of one side relates to trial i of the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pairing {
    /// Not at all: separate runs (`--repeat`), judged as two samples.
    #[default]
    None,
    /// They ran in the same round, one after the other (`--rerun`).
    Rounds,
    /// They ran at the same time on separate CPU halves, swapped every
    /// round (`--duet`): consecutive rounds are averaged in couples.
    Duet,
}

/// Which evidence a comparison used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Paired trials (interleaved A/B).
    Paired,
    /// Trial medians, unpaired.
    Trials,
    /// One run a side: raw samples.
    Samples,
    /// No test applies: the noise band alone.
    Band,
    /// Counted metrics (instructions): the change against the counts' own
    /// spread (see [`super::counted`]).
    Counts,
}

/// The result of the test for one metric, before multiple-testing adjustment.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// What kind.
    pub kind: Kind,
    /// The test, for the output.
    pub method: &'static str,
    /// Two-sided p-value, when a test ran.
    pub p: Option<f64>,
    /// 95% CI of the ratio current / base.
    pub ratio_ci: Option<(f64, f64)>,
    /// 90% CI of the ratio across trials: inside ±band, the two one-sided
    /// tests at 5% (TOST) reject a change beyond the band either way, which
    /// is what `~` claims.
    pub equivalence_ci: Option<(f64, f64)>,
    /// The estimated ratio current / base across trials: the Hodges-Lehmann
    /// estimate on the logarithms (of the per-round ratios when paired).
    /// `None` for one run a side, where the medians stand.
    pub estimate: Option<f64>,
    /// One run a side without samples: whether the medians' CIs are apart.
    pub ci_separate: Option<bool>,
}

const BOOTSTRAP_ROUNDS: usize = 2000;
const BOOTSTRAP_SEED: u64 = 0x5eed;
/// The coverage of a CI that tests a difference at 5%, two-sided.
const DIFFERENCE_COVERAGE: f64 = 0.95;
/// The coverage of a CI that tests equivalence at 5%: each of the two
/// one-sided tests (TOST) rejects at 5%.
const EQUIVALENCE_COVERAGE: f64 = 0.90;

/// The intervals of one bootstrap: (difference, equivalence).
type Intervals = (Option<(f64, f64)>, Option<(f64, f64)>);

fn intervals(b: Option<stats::Bootstrap>) -> Intervals {
    b.map_or((None, None), |b| {
        (
            Some(b.interval(DIFFERENCE_COVERAGE)),
            Some(b.interval(EQUIVALENCE_COVERAGE)),
        )
    })
}

/// The evidence for one metric. `base` / `current` are the trial medians
/// (one value for a single run), `paired` says whether trial i of each
/// side ran in the same round, and `old` / `cur` are the metrics as the
/// runs report them (their raw samples are used for single runs).
pub fn gather(
    base: &[f64],
    current: &[f64],
    pairing: Pairing,
    old: &BenchmarkMetric,
    cur: &BenchmarkMetric,
    alpha: f64,
) -> Evidence {
    let (nb, nc) = (base.len(), current.len());
    let d = pair_logs(base, current, pairing);
    if pairing != Pairing::None && nb == nc && d.len() >= 2 {
        return paired(&d);
    }
    if nb >= MIN_TRIALS && nc >= MIN_TRIALS {
        let lb: Vec<f64> = base.iter().map(|v| v.ln()).collect();
        let lc: Vec<f64> = current.iter().map(|v| v.ln()).collect();
        let (method, p) = if stats::mann_whitney_floor(nb, nc) < alpha {
            ("mann-whitney (trials)", stats::mann_whitney(base, current))
        } else {
            ("welch-t (trials)", stats::welch_t(&lb, &lc))
        };
        let (ratio_ci, equivalence_ci) = intervals(stats::bootstrap_ratio(
            base,
            current,
            BOOTSTRAP_ROUNDS,
            BOOTSTRAP_SEED,
        ));
        return Evidence {
            kind: Kind::Trials,
            method,
            p: p.is_finite().then_some(p),
            ratio_ci,
            equivalence_ci,
            estimate: Some(stats::hodges_lehmann_shift(&lb, &lc).exp()).filter(|r| r.is_finite()),
            ci_separate: None,
        };
    }
    if nb == 1 && nc == 1 {
        let samples = |m: &BenchmarkMetric| -> Vec<f64> {
            m.stats
                .as_ref()
                .map(|s| s.samples.clone())
                .unwrap_or_default()
        };
        let (bs, cs) = (samples(old), samples(cur));
        if bs.len() >= MIN_SAMPLES && cs.len() >= MIN_SAMPLES {
            return Evidence {
                kind: Kind::Samples,
                method: "mann-whitney (samples)",
                p: Some(stats::mann_whitney(&bs, &cs)),
                ratio_ci: stats::bootstrap_ratio_ci(&bs, &cs, BOOTSTRAP_ROUNDS, BOOTSTRAP_SEED),
                equivalence_ci: None,
                estimate: None,
                ci_separate: None,
            };
        }
        if let (Some(a), Some(b)) = (&old.stats, &cur.stats) {
            return Evidence {
                kind: Kind::Samples,
                method: "ci-overlap",
                p: None,
                ratio_ci: None,
                equivalence_ci: None,
                estimate: None,
                ci_separate: Some(a.ci95_high < b.ci95_low || b.ci95_high < a.ci95_low),
            };
        }
    }
    Evidence {
        kind: Kind::Band,
        method: "noise band",
        p: None,
        ratio_ci: None,
        equivalence_ci: None,
        estimate: None,
        ci_separate: None,
    }
}

/// The paired log ratios current / base: one per round (`--rerun`), one
/// per couple of rounds with `--duet` (round r ran with the CPU halves one
/// way and r + 1 the other); none unpaired.
pub fn pair_logs(base: &[f64], current: &[f64], pairing: Pairing) -> Vec<f64> {
    let per_round: Vec<f64> = base
        .iter()
        .zip(current)
        .map(|(b, c)| (c / b).ln())
        .collect();
    match pairing {
        Pairing::Rounds => per_round,
        Pairing::Duet => stats::couples(&per_round),
        Pairing::None => Vec::new(),
    }
}

/// The evidence of paired log ratios `d` (current over base, at least 2):
/// the Wilcoxon signed-rank test from [`MIN_SIGNED_RANK`], the paired t
/// test below; the Hodges-Lehmann estimate and a bootstrap CI of the ratio.
pub fn paired(d: &[f64]) -> Evidence {
    let (method, p) = if d.len() >= MIN_SIGNED_RANK {
        ("signed-rank (paired trials)", stats::signed_rank(d))
    } else {
        ("paired-t (paired trials)", stats::paired_t(d))
    };
    let (ratio_ci, equivalence_ci) =
        intervals(stats::bootstrap_paired(d, BOOTSTRAP_ROUNDS, BOOTSTRAP_SEED));
    Evidence {
        kind: Kind::Paired,
        method,
        p: p.is_finite().then_some(p),
        ratio_ci,
        equivalence_ci,
        estimate: Some(stats::hodges_lehmann_center(d).exp()).filter(|r| r.is_finite()),
        ci_separate: None,
    }
}

impl Evidence {
    /// The evidence for a counted metric: the medians' change alone.
    pub fn counted() -> Evidence {
        Evidence {
            kind: Kind::Counts,
            method: "counts",
            p: None,
            ratio_ci: None,
            equivalence_ci: None,
            estimate: None,
            ci_separate: None,
        }
    }

    /// Whether the evidence says the two sides differ, given the metric's
    /// q-value; `band_known` says whether a noise band backs a test-less
    /// judgement.
    pub fn significant(&self, q: Option<f64>, alpha: f64, band_known: bool) -> bool {
        match (self.kind, q, self.ratio_ci, self.ci_separate) {
            (Kind::Band, ..) => band_known,
            (Kind::Counts, ..) => true,
            (_, Some(q), Some((lo, hi)), _) => q < alpha && (hi < 1.0 || lo > 1.0),
            (_, Some(q), None, _) => q < alpha,
            (_, None, _, Some(separate)) => separate,
            // One run a side without statistics: only the band can judge.
            (_, None, _, None) => band_known,
        }
    }
}
