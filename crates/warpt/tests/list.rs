//! `warpt list`: the machine snapshot matches what the OS says.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{stdout_of, warpt};

use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let out = stdout_of(warpt().args(args));
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn list_json_validates_and_matches_the_os() {
    let list = json(&["list", "--json"]);
    let schema = json(&["schema", "--type", "list"]);
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&list)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let nproc = std::process::Command::new("nproc").output().unwrap();
    let nproc: u64 = String::from_utf8_lossy(&nproc.stdout)
        .trim()
        .parse()
        .unwrap();
    assert_eq!(list["cpu"]["logical_cores"], nproc);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(list["memory"]["total_bytes"], kib * 1024);
    let uname = std::process::Command::new("uname")
        .arg("-r")
        .output()
        .unwrap();
    assert_eq!(
        list["os"]["kernel"],
        String::from_utf8_lossy(&uname.stdout).trim()
    );
    for key in ["gpus", "storage", "network", "tools"] {
        assert!(list[key].is_array(), "{key}");
    }
    assert!(
        list["network"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["name"] == "lo" && n["loopback"] == true),
        "the loopback interface is listed"
    );
    // No GPU here is stated, not an error.
    if list["gpus"].as_array().unwrap().is_empty() {
        assert!(!list["gpu_notes"].as_array().unwrap().is_empty());
    }
}

#[test]
fn export_schema_validates_a_real_export() {
    let schema = json(&["schema"]);
    let validator = jsonschema::validator_for(&schema).unwrap();
    let example: Value = serde_json::from_str(include_str!(
        "../../warpt-model/tests/data/example_export.json"
    ))
    .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&example)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn list_summary_names_the_parts() {
    let out = stdout_of(warpt().arg("list"));
    let text = String::from_utf8(out).unwrap();
    for part in ["CPU", "Memory", "OS", "caches"] {
        assert!(text.contains(part), "{part} missing:\n{text}");
    }
    // People see storage; /proc, /sys and the like are counted, not listed,
    // and the JSON keeps every mount.
    assert!(!text.contains("Mount    /proc "), "{text}");
    let all = json(&["list", "--json"]);
    let mounts = all["mounts"].as_array().unwrap();
    assert!(
        mounts
            .iter()
            .any(|m| m["mount_point"] == "/proc" && m["pseudo"] == true)
    );
    let hidden = mounts
        .iter()
        .filter(|m| m["pseudo"] == true || m["bind"] == true)
        .count();
    assert!(
        text.contains(&format!("({hidden} pseudo and bind mounts hidden")),
        "{hidden}:\n{text}"
    );
}
