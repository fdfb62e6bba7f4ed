//! bench.yaml's parsing, checks and matrix.

use super::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

#[test]
fn a_matrix_with_a_skip_condition() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "bench.yaml",
        concat!(
            "problem_size:\n  n: 64\nprecisions: [fp32, fp64]\nbackends: [cpu, cuda]\n",
            "tolerances:\n  rmse: 1.0e-3\nskip_conditions:\n",
            "  - backend: cuda\n    reason: no CUDA\n    check: \"true\"\n",
            "  - backend: cpu\n    reason: never\n    check: \"false\"\n",
        ),
    );
    let (c, path) = BenchConfig::beside(&dir.path().join("baseline_x.py")).expect("valid");
    assert!(path.is_some());
    let m = c.combinations("python3", &MatrixFilter::default());
    assert_eq!(m.len(), 4);
    assert_eq!(m[0].kwargs["n"], 64);
    assert_eq!(m[0].kwargs["precision"], "fp32");
    assert_eq!(m[0].tags["backend"], "cpu");
    assert_eq!(m[0].skip, None);
    assert_eq!(m[1].tags["backend"], "cuda");
    assert_eq!(m[1].skip.as_deref(), Some("no CUDA"));
    assert_eq!(c.tolerances().rmse, Some(1e-3));
    assert_eq!(c.tolerances().relative_error, None);
    // --precision / --backends keep their values; a file without the
    // axis runs as it is; values no file declares are named.
    let only = |p: &[&str], b: &[&str]| MatrixFilter {
        precisions: p.iter().map(|s| s.to_string()).collect(),
        backends: b.iter().map(|s| s.to_string()).collect(),
    };
    let tags = |f: &MatrixFilter| {
        c.combinations("python3", f)
            .into_iter()
            .map(|m| warpt_model::tag_label(&m.tags))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        tags(&only(&["fp64"], &["cpu"])),
        ["backend=cpu,precision=fp64"]
    );
    assert_eq!(tags(&only(&["fp32"], &[])).len(), 2);
    let plain = BenchConfig::default();
    assert_eq!(
        plain.combinations("python3", &only(&["fp64"], &[])).len(),
        1
    );
    assert_eq!(
        only(&["fp64", "fp8"], &["rocm"]).unknown([&c, &plain]),
        ["--precision fp8", "--backends rocm"]
    );
}

#[test]
fn a_command_runs_its_extensions_with_the_path_quoted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let y = write(
        dir.path(),
        "bench.yaml",
        "command: \"sh run.sh {file}\"\ntiming: pytorch\ncold_cache: true\n",
    );
    let c = BenchConfig::load(&y).expect("valid");
    let f = c.foreign().expect("a command");
    assert!(f.runs(Path::new("a/baseline_x.cpp")) && f.runs(Path::new("b.rs")));
    assert!(!f.runs(Path::new("baseline_x.py")));
    assert_eq!(
        f.line_for(Path::new("/t/it's here.cpp")),
        "sh run.sh '/t/it'\\''s here.cpp'"
    );
    let settings = c.run_settings();
    assert_eq!(settings["timing"], "pytorch");
    assert_eq!(settings["cold_cache"], true);
    let only = BenchConfig::load(&write(
        dir.path(),
        "bench.yml",
        "command: ./bench\nextensions: [.go]\n",
    ))
    .expect("valid");
    let f = only.foreign().expect("a command");
    assert!(f.runs(Path::new("x.go")) && !f.runs(Path::new("x.cpp")));
    let e = BenchConfig::load(&write(dir.path(), "bench.yaml", "timing: gpu\n"))
        .expect_err("no such mode");
    assert!(e.to_string().contains("bench.yaml:1"), "{e}");
}

#[test]
fn no_file_is_one_plain_combination_with_default_tolerances() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (c, path) = BenchConfig::beside(&dir.path().join("x.py")).expect("none");
    assert!(path.is_none());
    let m = c.combinations("python3", &MatrixFilter::default());
    assert_eq!(m.len(), 1);
    assert!(m[0].tags.is_empty() && m[0].kwargs.is_empty());
    assert_eq!(c.tolerances(), Tolerances::DEFAULT);
}

#[test]
fn a_malformed_file_names_its_line_and_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let y = write(
        dir.path(),
        "bench.yaml",
        "precisions: [fp32]\nbakends: [cpu]\n",
    );
    let e = BenchConfig::load(&y).expect_err("typo");
    let text = e.to_string();
    assert!(text.contains("bench.yaml:2:"), "{text}");
    assert!(text.contains("bakends"), "{text}");
    let t = write(
        dir.path(),
        "bench.toml",
        "precisions = [\"fp32\"]\n\n[tolerances]\nrmse = \"small\"\n",
    );
    let e = BenchConfig::load(&t).expect_err("a string tolerance");
    let text = e.to_string();
    assert!(text.contains("bench.toml:4:"), "{text}");
    assert!(text.contains("rmse") || text.contains("f64"), "{text}");
    let e = BenchConfig::beside(&y).expect_err("both");
    assert!(matches!(e, ConfigError::Both(_)), "{e}");
}

#[test]
fn references_are_a_file_a_function_elsewhere_or_one_beside() {
    assert_eq!(
        Reference::parse("expected_{precision}.json")
            .unwrap()
            .for_combination(Some("fp32"), None),
        Reference::Expected(PathBuf::from("expected_fp32.json"))
    );
    assert_eq!(
        Reference::parse("ref.py:matmul")
            .unwrap()
            .under(Path::new("k")),
        Reference::Callable {
            file: Some(PathBuf::from("k/ref.py")),
            function: "matmul".into()
        }
    );
    assert_eq!(
        Reference::parse("exact").unwrap(),
        Reference::Callable {
            file: None,
            function: "exact".into()
        }
    );
    for bad in ["lib:fn", "ref.py:2x", "a b"] {
        assert!(Reference::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn bench_yaml_labels_merge_and_a_conflict_names_both_files() {
    let config = |labels: &[(&str, &str)]| BenchConfig {
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..BenchConfig::default()
    };
    let mut configs = BTreeMap::new();
    configs.insert(PathBuf::from("tree/ch1"), config(&[("team", "ml")]));
    configs.insert(
        PathBuf::from("tree/kernels"),
        config(&[("team", "ml"), ("dataset", "imagenet")]),
    );
    let labels = run_labels(&configs).unwrap();
    assert_eq!(labels.len(), 2);
    assert_eq!(labels["dataset"], "imagenet");
    configs.insert(PathBuf::from("tree/ch2"), config(&[("team", "hpc")]));
    let e = run_labels(&configs).unwrap_err();
    assert!(
        e.contains("label team") && e.contains("tree/ch1") && e.contains("tree/ch2"),
        "{e}"
    );
}
