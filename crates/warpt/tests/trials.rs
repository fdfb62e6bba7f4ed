//! The run as the unit of replication: `--repeat`, `warpt noise` and the
//! noise band it gives `benchmark compare`, and `compare --rerun`'s
//! interleaved trials, all through the CLI on the selftest suite's `work`
//! benchmark (whose `slowdown_pct` injects a change of known size).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{json_of, stderr_of, stdout_of};

use std::path::Path;

use assert_cmd::Command;
use warpt_model::{BenchmarkSuiteRun, Quality, RunStatus, load_suite_run};

fn warpt(store: &Path) -> Command {
    let mut cmd = Command::cargo_bin("warpt").unwrap();
    cmd.env("WARPT_SELFTEST", "1")
        .env("WARPT_NO_PROGRESS", "1")
        .env("WARPT_STORE", store);
    cmd
}

const QUICK: [&str; 8] = [
    "--suite",
    "selftest",
    "--benchmark",
    "work",
    "--duration",
    "0.3",
    "--burnin-seconds",
    "0",
];

fn run_json(store: &Path, extra: &[&str]) -> BenchmarkSuiteRun {
    let out = stdout_of(
        warpt(store)
            .args(["benchmark", "run"])
            .args(QUICK)
            .args(extra)
            .arg("--json"),
    );
    load_suite_run(&String::from_utf8(out).unwrap()).unwrap()
}

#[test]
fn repeat_runs_the_plan_as_trials_in_shuffled_orders() {
    let _one = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let run = run_json(&store, &["--benchmark", "ok", "--repeat", "4"]);
    assert_eq!(run.trials.len(), 4);
    assert_eq!(run.manifest.as_ref().unwrap().config.repeat, 4);
    let orders: Vec<Vec<usize>> = run.trials.iter().map(|t| t.order.clone()).collect();
    for o in &orders {
        let mut sorted = o.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 1]);
    }
    // Aggregates: one per planned benchmark, over the trial medians.
    assert_eq!(run.benchmarks.len(), 2);
    for (position, agg) in run.benchmarks.iter().enumerate() {
        assert_eq!(agg.status, RunStatus::Passed);
        let trial_medians: Vec<f64> = warpt_model::results_at(&run.trials, position)
            .iter()
            .map(|r| r.metrics[0].value)
            .collect();
        // Trials the machine disturbed (measured interference) are left out.
        let undisturbed: Vec<f64> = warpt_model::results_at(&run.trials, position)
            .iter()
            .filter(|r| r.undisturbed())
            .map(|r| r.metrics[0].value)
            .collect();
        let st = agg.metrics[0].stats.as_ref().unwrap();
        if undisturbed.len() >= 2 {
            assert_eq!(st.samples, undisturbed);
        } else {
            assert_eq!(st.samples, trial_medians);
        }
        assert_eq!(agg.metrics[0].value, st.median);
        for r in warpt_model::results_at(&run.trials, position) {
            assert_eq!(r.spec.id, agg.spec.id);
            assert!(r.metrics[0].stats.as_ref().unwrap().n > 4, "own samples");
            assert!(r.interference.is_some(), "each trial's window accounted");
        }
    }
    // Stored with its trials, and shown back exactly.
    let out = stdout_of(warpt(&store).args(["results", "show", &run.id, "--json"]));
    assert_eq!(
        load_suite_run(&String::from_utf8(out).unwrap()).unwrap(),
        run
    );
}

#[test]
fn a_noise_profile_sets_the_band_and_a_known_slowdown_is_caught() {
    let _one = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let profile = json_of(
        warpt(&store)
            .arg("noise")
            .args(QUICK)
            .args(["--repeat", "5", "--json"]),
    );
    let entries = profile["entries"].as_array().unwrap();
    let unprofiled = profile["unprofiled"].as_array().unwrap();
    assert_eq!(entries.len() + unprofiled.len(), 1, "{profile}");
    if let Some(u) = unprofiled.first() {
        // The machine disturbed three or more of the five trials: the metric
        // is named as not profiled rather than given a made-up spread.
        assert_eq!(u["metric"], "time", "{profile}");
        assert!(u["undisturbed"].as_u64().unwrap() < 3, "{profile}");
        return;
    }
    assert_eq!(entries[0]["metric"], "time");
    assert!(entries[0]["trials"].as_u64().unwrap() >= 3, "{profile}");
    let cv = entries[0]["cv"].as_f64().unwrap();
    assert!((0.0..0.5).contains(&cv), "{cv}");

    // Three trials a side, the current one ten times slower: far beyond
    // any band the profile can set, even on a noisy host.
    let export = |name: &str, extra: &[&str]| {
        let path = dir.path().join(name);
        warpt(&store)
            .args(["benchmark", "run"])
            .args(QUICK)
            .args(["--repeat", "3"])
            .args(extra)
            .arg("--export-file")
            .arg(&path)
            .assert()
            .success();
        path
    };
    let base = export("base.json", &[]);
    let slow = export("slow.json", &["--param", "slowdown_pct=900"]);
    let disturbed = [&base, &slow].iter().any(|p| {
        let run = load_suite_run(&std::fs::read_to_string(p).unwrap()).unwrap();
        run.benchmarks[0].measurement_quality == Some(Quality::Unreliable)
    });
    let out = warpt(&store)
        .args(["benchmark", "compare"])
        .args([&base, &slow])
        .args(["--format", "json"])
        .output()
        .unwrap();
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &c["metrics"][0];
    // A trial the host slowed by half again or more (the selftest's own
    // spread is a few percent) widens its side's CI so far that three
    // trials a side may not settle Welch's test: the verdict is then held
    // back as too noisy, though the change is still measured.
    let wide = |side: &str| {
        let ci = &m[side]["ci95"];
        ci[1].as_f64().unwrap() > 1.5 * ci[0].as_f64().unwrap()
    };
    let too_noisy = !disturbed
        && (wide("base") || wide("current"))
        && m["verdict"] == "inconclusive"
        && m["reason"]
            .as_str()
            .unwrap()
            .starts_with("too noisy to tell");
    if too_noisy {
        let change = m["change_pct"].as_f64().unwrap();
        assert!((600.0..1200.0).contains(&change), "{c}");
        return;
    }
    assert_eq!(
        out.status.code(),
        Some(if disturbed { 0 } else { 1 }),
        "{c}"
    );
    assert_eq!(m["noise_source"], "profile", "{c}");
    let band = m["noise_band_pct"].as_f64().unwrap();
    // k x the larger CV x its upper 90% bound factor for the profile's
    // trials, narrowed for the trials each side contributed (3, or fewer
    // when the machine disturbed one and it was left out). With 3 a side
    // their spread is pooled with the profile's, over the degrees of
    // freedom of both.
    let spread = cv.max(entries[0]["cv_sd"].as_f64().unwrap_or(0.0));
    let trials = entries[0]["trials"].as_u64().unwrap() as usize;
    let used = |side: &str| m[side]["trials"].as_f64().unwrap();
    let (nb, nc) = (used("base"), used("current"));
    let pooled = m["noise_pooled_trials"].as_u64().unwrap() as usize;
    let (spread, runs) = if nb >= 3.0 && nc >= 3.0 {
        assert_eq!(pooled, (nb + nc) as usize, "{c}");
        let pooled_cv = m["noise_cv_pct"].as_f64().unwrap() / 100.0;
        // The slow side's trials are runs too: the pooled spread is not the profile's.
        assert!((pooled_cv - spread).abs() > 1e-12, "{c}");
        (pooled_cv, trials - 1 + (nb + nc) as usize - 2 + 1)
    } else {
        assert_eq!(pooled, 0, "{c}");
        (spread, trials)
    };
    let upper = warpt_stats::spread_upper_factor(runs, 0.10);
    let want = 400.0 * spread * upper * ((1.0 / nb + 1.0 / nc) / 2.0).sqrt();
    assert!((band - want).abs() < 1e-6, "{band} vs {want} (cv {cv})");
    if disturbed {
        // The machine disturbed most trials of a side (measured steal or
        // other processes): no verdict, and the reason says which side.
        assert_eq!(m["verdict"], "inconclusive", "{c}");
        assert!(
            m["reason"].as_str().unwrap().contains(" unreliable: "),
            "{c}"
        );
    } else {
        assert_eq!(m["verdict"], "regressed", "{c}");
        // Three trials a side: Welch's t on their logs; fewer: the band alone.
        let method = if nb >= 3.0 && nc >= 3.0 {
            "welch-t (trials)"
        } else {
            "noise band"
        };
        assert_eq!(m["method"], method, "{c}");
    }
}

/// Two configuration files in `dir` for `compare --rerun`: the base, and
/// one whose `work` does `slowdown_pct` more.
fn configurations(dir: &Path, slowdown_pct: f64) -> (std::path::PathBuf, std::path::PathBuf) {
    let (base, slow) = (dir.join("base.toml"), dir.join("slow.toml"));
    std::fs::write(&base, "[params]\nslowdown_pct = 0.0\n").unwrap();
    std::fs::write(
        &slow,
        format!("[params]\nslowdown_pct = {slowdown_pct:.1}\n"),
    )
    .unwrap();
    (base, slow)
}

#[test]
fn rerun_interleaves_two_configurations_and_judges_the_pairs() {
    let _one = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let (base, slow) = configurations(dir.path(), 400.0);
    let out = warpt(&store)
        .args("benchmark compare --rerun --trials 6 --format json".split(' '))
        .arg(&base)
        .arg(&slow)
        .arg("--")
        .args(QUICK)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c["paired"], true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(c["trials"], serde_json::json!([6, 6]), "{stderr}");
    let m = &c["metrics"][0];
    // Six pairs: the signed-rank test (every passed round is kept, also
    // one the machine disturbed); fewer only where a trial failed.
    let method = m["method"].as_str().unwrap();
    assert!(method.ends_with("(paired trials)"), "{c}");
    assert_eq!(m["verdict"], "regressed", "{c}");
    let change = m["change_pct"].as_f64().unwrap();
    // Five times the work: about +400%, within what a noisy host moves it.
    assert!((200.0..800.0).contains(&change), "{change}");
    assert!(stderr.contains("round 6/6"), "{stderr}");
    // Both sides are in the store, with their trials.
    let list = json_of(warpt(&store).args(["results", "list", "--json"]));
    let trials: Vec<i64> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["trials"].as_i64().unwrap())
        .collect();
    assert_eq!(trials, vec![6, 6]);
}

/// Without `--trials` a rerun runs the default rounds, then as many again
/// while the comparison names a verdict more rounds could sharpen, up to
/// three batches. (Which verdicts those are is `warpt-report`'s
/// `unresolved`, tested there.)
#[test]
fn rerun_adds_batches_of_rounds_while_a_verdict_is_unresolved() {
    use warpt_run::trials::{Rounds, Schedule, Sides};
    let _one = common::one_at_a_time();
    let (_dir, config) = common::file_in(
        "nap.toml",
        "[[benchmarks]]\nname = \"nap\"\ncommand = \"sleep 0.01\"\n",
    );
    let bin = env!("CARGO_BIN_EXE_warpt");
    let args: Vec<String> = [
        "--config",
        config.to_str().unwrap(),
        "--suite",
        "user",
        "--duration",
        "0.1",
        "--burnin-seconds",
        "0",
    ]
    .map(String::from)
    .to_vec();
    let rounds = |answers: usize| {
        let mut asked = Vec::new();
        let mut unresolved = |s: &Sides| {
            asked.push((s.base.trials.len(), s.current.trials.len()));
            if asked.len() <= answers {
                vec!["user/nap: inconclusive".to_string()]
            } else {
                Vec::new()
            }
        };
        let schedule = Schedule::Interleaved { seed: 7 };
        let sides =
            warpt_run::trials::rerun(bin, bin, &args, Rounds::Adaptive, schedule, &mut unresolved)
                .unwrap();
        (sides.base.trials.len(), sides.current.trials.len(), asked)
    };
    assert_eq!(rounds(0), (5, 5, vec![(5, 5)]));
    assert_eq!(rounds(1), (10, 10, vec![(5, 5), (10, 10)]));
    assert_eq!(
        rounds(5),
        (15, 15, vec![(5, 5), (10, 10)]),
        "not asked after the last batch"
    );
}

/// A planted fivefold slowdown is decided by the default rounds: no more,
/// unless the host disturbed more than half of a side's rounds (their
/// aggregate is then `unreliable`, which more rounds can outvote: a loaded
/// CI runner did so once), which the line announcing more rounds must say.
#[test]
fn a_rerun_decided_by_its_first_rounds_adds_none() {
    let _one = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let (base, slow) = configurations(dir.path(), 400.0);
    let out = warpt(&store)
        .args(["benchmark", "compare", "--rerun", "--no-store"])
        .args(["--format", "json"])
        .arg(&base)
        .arg(&slow)
        .arg("--")
        .args(QUICK)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let c: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(c["metrics"][0]["verdict"], "regressed", "{c}");
    let more = stderr
        .lines()
        .find(|l| l.starts_with("5 rounds leave"))
        .map(str::to_string);
    match more {
        None => assert_eq!(c["trials"], serde_json::json!([5, 5]), "{stderr}"),
        Some(line) => assert!(
            line.contains("inconclusive, base unreliable:")
                || line.contains("inconclusive, current unreliable:"),
            "more rounds for a reason other than a disturbed host: {stderr}"
        ),
    }
}

#[test]
fn a_duet_runs_both_sides_at_once_and_judges_couples_of_rounds() {
    let _one = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let (base, slow) = configurations(dir.path(), 100.0);
    let mut cmd = warpt(&store);
    cmd.args(["benchmark", "compare", "--rerun", "--duet", "--trials", "4"])
        .args(["--format", "json"])
        .arg(&base)
        .arg(&slow)
        .arg("--")
        .args(QUICK);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("give it at least 2") {
        // One CPU here: --duet says why it cannot run, as a usage error.
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        return;
    }
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (c["paired"].clone(), c["duet"].clone()),
        (true.into(), true.into())
    );
    assert!(stderr.contains("at the same time, CPUs"), "{stderr}");
    let m = &c["metrics"][0];
    // Four rounds, two couples: the paired t test on their mean ratios.
    assert_eq!(m["method"], "paired-t (paired trials)", "{c}");
    // Twice the work: about +100%; both sides measured beside each other,
    // so neither is held back as disturbed by the other's CPU time.
    let change = m["change_pct"].as_f64().unwrap();
    assert!((50.0..200.0).contains(&change), "{change}");
    assert_ne!(m["verdict"], "~", "{c}");
}

#[test]
fn rerun_refuses_what_it_cannot_run() {
    let _one = common::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.db");
    let cfg = dir.path().join("a.toml");
    std::fs::write(&cfg, "").unwrap();
    let c = cfg.display().to_string();
    let err = |args: &[&str]| {
        stderr_of(
            warpt(&store)
                .args(["benchmark", "compare", "--rerun"])
                .args(args),
            2,
        )
    };
    assert!(err(&[&c, "missing.toml"]).contains("missing.toml"));
    assert!(err(&[&c, &c, "--", "--repeat", "3"]).contains("'--repeat' cannot be"));
    let bad = err(&[&c, &c, "--", "--suite", "nosuch"]);
    assert!(
        bad.contains("refused the run arguments") && bad.contains("nosuch"),
        "{bad}"
    );
}
