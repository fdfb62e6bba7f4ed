//! The configuration hierarchy (defaults < warpt.toml < WARPT_* < flags),
//! `warpt config show`, and `--replay`.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{json_of, selftest_run, stderr_of, stdout_of};

use std::path::Path;

use assert_cmd::Command;
use warpt_model::{BenchmarkSuiteRun, RunStatus, StageStatus, load_suite_run};

/// warpt in `dir`, with no WARPT_* variable from the caller's environment.
fn warpt(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("warpt").unwrap();
    cmd.current_dir(dir)
        .env("WARPT_NO_PROGRESS", "1")
        .env("XDG_CONFIG_HOME", dir.join("xdg"));
    for (k, _) in std::env::vars() {
        if k.starts_with("WARPT_") && k != "WARPT_NO_PROGRESS" {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// A directory holding a warpt.toml of `text`.
fn with_config(text: &str) -> tempfile::TempDir {
    common::dir_with("warpt.toml", text)
}

fn run_json(cmd: &mut Command) -> BenchmarkSuiteRun {
    let out = cmd.assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).unwrap()
}

fn ok_run(dir: &Path) -> Command {
    let mut cmd = warpt(dir);
    cmd.env("WARPT_SELFTEST", "1")
        .args(selftest_run("ok"))
        .args(["--json"]);
    cmd
}

#[test]
fn each_layer_overrides_the_one_below_end_to_end() {
    let dir = with_config("seed = 5\nduration = 0.05\nburnin_seconds = 0\n");
    let m = |run: BenchmarkSuiteRun| run.manifest.unwrap();
    assert_eq!(
        m(run_json(&mut ok_run(dir.path()))).seed,
        5,
        "file over default"
    );
    assert_eq!(
        m(run_json(ok_run(dir.path()).env("WARPT_SEED", "6"))).seed,
        6,
        "env over file"
    );
    let manifest = m(run_json(
        ok_run(dir.path())
            .env("WARPT_SEED", "6")
            .args(["--seed", "7"]),
    ));
    assert_eq!(manifest.seed, 7, "flag over env");
    assert_eq!(manifest.config.duration_s, Some(0.05));
    assert_eq!(manifest.config.config_file.as_deref(), Some("warpt.toml"));
}

#[test]
fn config_show_names_every_source() {
    let dir = with_config("precision = 2.5\n[params]\narray_mb = 64\n");
    let out = stdout_of(
        warpt(dir.path())
            .args(["config", "show"])
            .env("WARPT_SEED", "9"),
    );
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("config file: warpt.toml"), "{text}");
    for needle in [
        "file warpt.toml",
        "env WARPT_SEED",
        "default",
        "params.array_mb",
        "2.5 %",
    ] {
        assert!(text.contains(needle), "{needle} missing from\n{text}");
    }
    let json = json_of(warpt(dir.path()).args(["config", "show", "--json"]));
    assert_eq!(json["precision"]["value"], 2.5);
    assert_eq!(json["precision"]["source"]["kind"], "file");
    assert_eq!(json["seed"]["source"]["kind"], "default");
    // A PostgreSQL store's password is never shown.
    for args in [&["config", "show"][..], &["config", "show", "--json"][..]] {
        let out = stdout_of(
            warpt(dir.path())
                .args(args)
                .env("WARPT_STORE", "postgres://warpt:hunter2@db.example/h"),
        );
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("postgres://warpt:***@db.example/h"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }
}

#[test]
fn the_xdg_file_is_used_when_there_is_no_local_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("xdg/warpt")).unwrap();
    std::fs::write(dir.path().join("xdg/warpt/warpt.toml"), "seed = 77\n").unwrap();
    let json = json_of(warpt(dir.path()).args(["config", "show", "--json"]));
    assert_eq!(json["seed"]["value"], 77);
    assert!(
        json["file"]
            .as_str()
            .unwrap()
            .ends_with("xdg/warpt/warpt.toml")
    );
}

#[test]
fn bad_configuration_exits_2_naming_file_line_and_key() {
    let dir = with_config("seed = 1\n\n[timeouts]\nsetup = 10\nsetpu = 3\n");
    let err = stderr_of(warpt(dir.path()).args(["benchmark", "run", "--dry-run"]), 2);
    assert!(
        err.contains("warpt.toml:5:") && err.contains("setpu"),
        "{err}"
    );
    std::fs::write(dir.path().join("warpt.toml"), "duration = \"long\"\n").unwrap();
    let err = stderr_of(warpt(dir.path()).args(["config", "show"]), 2);
    assert!(err.contains("warpt.toml:1:"), "{err}");
    let out = stderr_of(
        warpt(dir.path()).args(["benchmark", "run", "--config", "nope.toml", "--dry-run"]),
        2,
    );
    assert!(out.contains("'nope.toml' does not exist"));
    std::fs::remove_file(dir.path().join("warpt.toml")).unwrap();
    let out = stderr_of(
        warpt(dir.path())
            .args(["benchmark", "run", "--dry-run"])
            .env("WARPT_DURATION", "-3"),
        2,
    );
    assert!(out.contains("WARPT_DURATION"));
}

#[test]
fn configured_params_apply_only_where_a_benchmark_knows_them() {
    let dir = with_config("[params]\narray_mb = 48\n");
    // cpu_flops has no array_mb: not an error when it comes from the file.
    warpt(dir.path())
        .args(["benchmark", "run", "--component", "cpu", "--dry-run"])
        .assert()
        .success();
    let plan = json_of(
        warpt(dir.path())
            .args(["benchmark", "run"])
            .args(common::RAM_PLAN),
    );
    assert_eq!(plan["benchmarks"][0]["params"]["array_mb"], 48);
    // A flag still wins over the file.
    let plan = json_of(
        warpt(dir.path())
            .args("benchmark run --component ram --param array_mb=96 --dry-run --json".split(' ')),
    );
    assert_eq!(plan["benchmarks"][0]["params"]["array_mb"], 96);
}

#[test]
fn configured_param_names_are_checked_exactly() {
    // A name no benchmark declares, or one with stray characters (a quoted
    // TOML key), is an error naming the file: it would apply nowhere, or
    // to a parameter it does not name.
    for (toml, says) in [
        (
            "[params]
array_mbs = 48
",
            "no benchmark has a parameter 'array_mbs'",
        ),
        (
            "[params]
\" array_mb\" = 48
",
            "parameter name \" array_mb\" has spaces around it",
        ),
        (
            "[params]
\"array_mb=\" = 48
",
            "contains '='",
        ),
    ] {
        let dir = with_config(toml);
        let out = stderr_of(
            warpt(dir.path()).args(["benchmark", "run", "--component", "ram", "--dry-run"]),
            2,
        );
        assert!(
            out.contains(says) && out.contains("warpt.toml"),
            "{toml}: {out}"
        );
    }
    // On the command line the shell's spacing is trimmed: the name that
    // reaches the plan is exact either way.
    let dir = with_config("");
    let plan = json_of(warpt(dir.path()).args([
        "benchmark",
        "run",
        "--component",
        "ram",
        "--param",
        " array_mb =96",
        "--dry-run",
        "--json",
    ]));
    assert_eq!(plan["benchmarks"][0]["params"]["array_mb"], 96);
}

#[test]
fn per_benchmark_timeouts_from_the_file() {
    let dir = with_config("[benchmark_timeouts.\"selftest/hang_setup\"]\nsetup = 1.0\n");
    let mut cmd = warpt(dir.path());
    cmd.env("WARPT_SELFTEST", "1")
        .args(selftest_run("hang_setup"))
        .args(["--json"]);
    let out = cmd.assert().code(1).get_output().stdout.clone();
    let run: BenchmarkSuiteRun = serde_json::from_slice(&out).unwrap();
    let r = &run.benchmarks[0];
    assert_eq!(r.status, RunStatus::Timeout);
    let setup = r.watchdog.as_ref().unwrap().setup.clone().unwrap();
    assert_eq!(
        (setup.status, setup.limit_s),
        (StageStatus::Timeout, Some(1.0))
    );
}

#[test]
fn replay_reproduces_plan_parameters_and_seed() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.json");
    let second = dir.path().join("second.json");
    warpt(dir.path())
        .args("benchmark run --component ram --seed 11 --duration 0.05".split(' '))
        .args("--burnin-seconds 0 --precision 4 --param array_mb=4 --param max_mb=1".split(' '))
        .arg("--export-file")
        .arg(&first)
        .assert()
        .success();
    warpt(dir.path())
        .args(["benchmark", "run", "--replay"])
        .arg(&first)
        .arg("--export-file")
        .arg(&second)
        .assert()
        .success();
    let load = |p: &Path| load_suite_run(&std::fs::read_to_string(p).unwrap()).unwrap();
    let (a, b) = (load(&first), load(&second));
    let (ma, mb) = (a.manifest.as_ref().unwrap(), b.manifest.as_ref().unwrap());
    assert_eq!(ma.config.plan, mb.config.plan);
    assert_eq!(mb.seed, 11);
    assert_eq!(ma.config.seed, mb.config.seed);
    assert_eq!(mb.config.duration_s, Some(0.05));
    assert_eq!(mb.config.burnin_s, 0.0);
    assert_eq!(ma.config.target_rel_ci, mb.config.target_rel_ci);
    assert_eq!(ma.config.param_overrides, mb.config.param_overrides);
    assert_eq!(a.suite, b.suite);
    assert_eq!(a.components, b.components);
    for (x, y) in a.benchmarks.iter().zip(&b.benchmarks) {
        assert_eq!(x.spec.id, y.spec.id);
        assert_eq!(x.params, y.params);
        assert_eq!(y.status, RunStatus::Passed);
    }
    assert_eq!(a.benchmarks.len(), b.benchmarks.len());
    assert!(mb.extra.contains_key("replay_of"));
    // Replaying is exact, so selection flags are refused alongside it.
    let out = stderr_of(
        warpt(dir.path())
            .args(["benchmark", "run", "--seed", "3", "--replay"])
            .arg(&first),
        2,
    );
    assert!(out.contains("--replay"));
    let bogus = dir.path().join("bogus.json");
    std::fs::write(&bogus, "{\"not\": \"a run\"}").unwrap();
    let out = stderr_of(
        warpt(dir.path())
            .args(["benchmark", "run", "--replay"])
            .arg(&bogus),
        2,
    );
    assert!(out.contains("bogus.json"));
}

#[test]
fn asked_percentiles_reach_every_metric_from_each_layer() {
    let dir = with_config("duration = 0.1\nburnin_seconds = 0\npercentiles = [10, 99.9]\n");
    let keys = |run: &BenchmarkSuiteRun| -> Vec<String> {
        let stats = run.benchmarks[0].metrics[0].stats.as_ref().unwrap();
        stats.percentiles.keys().cloned().collect()
    };
    let run = run_json(&mut ok_run(dir.path()));
    assert_eq!(keys(&run), ["p10", "p99.9"], "from the file");
    let run = run_json(ok_run(dir.path()).env("WARPT_PERCENTILES", "5"));
    assert_eq!(keys(&run), ["p5"], "env over file");
    let run = run_json(
        ok_run(dir.path())
            .env("WARPT_PERCENTILES", "5")
            .args(["--percentiles", "99.99,50"]),
    );
    // p50 is a field already: only the new one is added.
    assert_eq!(keys(&run), ["p99.99"], "flag over env");
    // The results table gives them.
    let mut cmd = warpt(dir.path());
    cmd.env("WARPT_SELFTEST", "1").args(selftest_run("ok"));
    let text = String::from_utf8(stdout_of(&mut cmd)).unwrap();
    assert!(text.contains("percentiles asked for"), "{text}");
    assert!(text.contains("p99.9"), "{text}");
    // Out of range: a usage error, from a flag and from the file.
    let e = stderr_of(ok_run(dir.path()).args(["--percentiles", "100"]), 2);
    assert!(e.contains("between 0 and 100"), "{e}");
    let bad = with_config("percentiles = [0]\n");
    let e = stderr_of(&mut ok_run(bad.path()), 2);
    assert!(e.contains("percentiles"), "{e}");
}

#[test]
fn labels_and_a_description_are_recorded_listed_and_filtered_on() {
    let dir = with_config("duration = 0.05\nburnin_seconds = 0\n[labels]\nrack = \"b7\"\n");
    let store = dir.path().join("results.db");
    let record = |extra: &[&str]| {
        let mut cmd = warpt(dir.path());
        cmd.env("WARPT_SELFTEST", "1")
            .args(selftest_run("ok"))
            .arg("--store")
            .arg(&store)
            .args(extra);
        cmd.assert().success();
    };
    record(&[
        "--label",
        "bios=1.2",
        "--description",
        "before the BIOS update",
        "--export-file",
        "before.json",
    ]);
    record(&["--label", "bios=1.3", "--label", "rack=b8"]);
    // The export's manifest holds them; the file's label joins the flag's.
    let before = common::load_export(&dir.path().join("before.json"));
    let m = before.manifest.unwrap();
    assert_eq!(m.labels["bios"], "1.2");
    assert_eq!(m.labels["rack"], "b7", "from warpt.toml");
    assert_eq!(m.description.as_deref(), Some("before the BIOS update"));
    let list = |args: &[&str]| {
        json_of(
            warpt(dir.path())
                .args(["results", "list", "--json", "--store"])
                .arg(&store)
                .args(args),
        )
    };
    let found = list(&["--label", "bios=1.2"]);
    assert_eq!(found.as_array().unwrap().len(), 1, "{found:#}");
    assert_eq!(found[0]["labels"]["rack"], "b7");
    assert_eq!(found[0]["description"], "before the BIOS update");
    assert_eq!(list(&["--label", "rack=b8"]).as_array().unwrap().len(), 1);
    assert_eq!(list(&[]).as_array().unwrap().len(), 2);
    let text = String::from_utf8(stdout_of(
        warpt(dir.path())
            .args(["results", "list", "--store"])
            .arg(&store),
    ))
    .unwrap();
    assert!(
        text.contains("bios=1.2 rack=b7 — before the BIOS update"),
        "{text}"
    );
    let shown = String::from_utf8(stdout_of(
        warpt(dir.path())
            .args(["results", "show", &before.id, "--store"])
            .arg(&store),
    ))
    .unwrap();
    assert!(
        shown.contains("description: before the BIOS update"),
        "{shown}"
    );
    assert!(shown.contains("labels: bios=1.2 rack=b7"), "{shown}");
    // `label:KEY=VALUE` names the latest run carrying it, wherever a run is
    // named: compare before and after.
    let compared = warpt(dir.path())
        .args([
            "benchmark",
            "compare",
            "label:bios=1.2",
            "label:bios=1.3",
            "--format",
            "json",
            "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    assert!(
        matches!(compared.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&compared.stderr)
    );
    let c: serde_json::Value = serde_json::from_slice(&compared.stdout).unwrap();
    assert_eq!(c["base"], format!("run {}", before.id).as_str(), "{c:#}");
    assert_ne!(c["current"], c["base"], "{c:#}");
    // `--label KEY`: the sides are the label's values, the same two runs.
    let by_key = warpt(dir.path())
        .args(["benchmark", "compare", "--label", "bios", "1.2", "1.3"])
        .args(["--format", "json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let k: serde_json::Value = serde_json::from_slice(&by_key.stdout).unwrap();
    assert_eq!((&k["base"], &k["current"]), (&c["base"], &c["current"]));
    // A value no run carries is named.
    let missing = warpt(dir.path())
        .args([
            "benchmark",
            "compare",
            "--label",
            "bios",
            "1.2",
            "9.9",
            "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let e = String::from_utf8_lossy(&missing.stderr);
    assert!(e.contains("label:bios=9.9"), "{e}");
    // A label that is not key=value, and a key with a space: usage errors.
    for bad in ["nokey", "a b=1"] {
        let e = stderr_of(ok_run(dir.path()).args(["--label", bad]), 2);
        assert!(e.contains("--label"), "{e}");
    }
}
