//! The packages users install: the wheel (`pip install warpt`) into a fresh
//! virtual environment, the .deb with dpkg. scripts/test builds them with
//! `scripts/package` before the tests (a cargo build cannot run inside
//! `cargo test`, which holds the target directory) and names them in
//! `WARPT_TEST_WHEEL` and `WARPT_TEST_DEB`.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::repo_root;

/// Runs `cmd`, which must succeed: its stdout.
fn ok(cmd: &mut Command) -> String {
    let o: Output = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{cmd:?}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_wheel_installs_into_a_fresh_venv_and_runs() {
    let Ok(wheel) = std::env::var("WARPT_TEST_WHEEL") else {
        eprintln!("not run here: WARPT_TEST_WHEEL is unset (scripts/test builds the wheel)");
        return;
    };
    let name = Path::new(&wheel).file_name().unwrap().to_string_lossy();
    assert!(
        name.starts_with(&format!("warpt-{}-py3-none-", env!("CARGO_PKG_VERSION"))),
        "{name}"
    );
    let t = tempfile::tempdir().unwrap();
    let venv = t.path().join("venv");
    ok(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    ok(Command::new(venv.join("bin/pip")).args(["install", "--quiet", "--no-index", &wheel]));
    let warpt = venv.join("bin/warpt");
    assert!(warpt.is_file(), "pip put no warpt in the venv's bin");
    let version = ok(Command::new(&warpt).arg("--version"));
    assert!(version.contains(env!("CARGO_PKG_VERSION")), "{version}");
    let manifest = ok(Command::new(&warpt)
        .args(["harness", "discover", "--json"])
        .arg(repo_root().join("examples/harness")));
    let m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    assert!(
        m["chapters"].as_array().is_some_and(|c| c.len() >= 3),
        "{m:#}"
    );
    let run = ok(Command::new(&warpt)
        .args("benchmark run --suite micro --benchmark mem_bandwidth --duration 0.05 --burnin-seconds 0 --no-store --json".split(' '))
        .env("WARPT_NO_PROGRESS", "1"));
    let r: serde_json::Value = serde_json::from_str(&run).unwrap();
    assert_eq!(r["benchmarks"][0]["status"], "passed", "{r:#}");
}

#[test]
fn the_deb_installs_its_man_page_and_completions_and_removes_cleanly() {
    let Ok(deb) = std::env::var("WARPT_TEST_DEB") else {
        eprintln!("not run here: WARPT_TEST_DEB is unset (scripts/test builds the .deb)");
        return;
    };
    let contents = ok(Command::new("dpkg-deb").args(["--contents", &deb]));
    for path in [
        "./usr/bin/warpt",
        "./usr/share/man/man1/warpt.1.gz",
        "./usr/share/bash-completion/completions/warpt",
        "./usr/share/zsh/vendor-completions/_warpt",
        "./usr/share/fish/vendor_completions.d/warpt.fish",
    ] {
        assert!(
            contents.contains(path),
            "{path} not in the package:\n{contents}"
        );
    }
    // Installed on the test machine itself (scripts/test runs as root in
    // CI; dpkg's --root alone cannot give man -w a system to search).
    let root = Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&root.stdout).trim() != "0" {
        eprintln!("not run here: installing a .deb needs root");
        return;
    }
    let query = Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", "warpt"])
        .output()
        .unwrap();
    let installed = String::from_utf8_lossy(&query.stdout).contains("install ok installed");
    assert!(
        !installed,
        "a warpt package is already installed here; the test would remove it"
    );
    ok(Command::new("dpkg").args(["-i", &deb]));
    let man = Command::new("man").args(["-w", "warpt"]).output().unwrap();
    let bash = Command::new("bash")
        .args([
            "-c",
            "source /usr/share/bash-completion/completions/warpt && \
             COMP_WORDS=(warpt harn) COMP_CWORD=1 && _warpt warpt harn warpt && echo \"${COMPREPLY[@]}\"",
        ])
        .output()
        .unwrap();
    let version = Command::new("/usr/bin/warpt")
        .arg("--version")
        .output()
        .unwrap();
    ok(Command::new("dpkg").args(["--purge", "warpt"]));
    // Checked after the purge, so a failure leaves nothing installed.
    assert!(
        String::from_utf8_lossy(&man.stdout).contains("/usr/share/man/man1/warpt.1.gz"),
        "man -w warpt: {man:?}"
    );
    assert_eq!(
        String::from_utf8_lossy(&bash.stdout).trim(),
        "harness",
        "bash completion of `warpt harn`: {bash:?}"
    );
    assert!(version.status.success(), "{version:?}");
    for gone in [
        "/usr/bin/warpt",
        "/usr/share/man/man1/warpt.1.gz",
        "/usr/share/bash-completion/completions/warpt",
    ] {
        assert!(!Path::new(gone).exists(), "{gone} left after dpkg --purge");
    }
}
