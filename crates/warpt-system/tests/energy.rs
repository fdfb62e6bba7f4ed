//! RAPL energy from a powercap tree: a fake one, written here the way the
//! kernel lays it out, so the arithmetic is checked on every machine (the
//! real counters are root-only or absent on most).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::fs;
use std::path::Path;

use warpt_system::{EnergySnapshot, EnergyUnavailable};

fn domain(root: &Path, dir: &str, name: &str, energy_uj: u64, range_uj: u64) {
    let d = root.join(dir);
    fs::create_dir_all(&d).unwrap();
    fs::write(d.join("name"), format!("{name}\n")).unwrap();
    fs::write(d.join("energy_uj"), format!("{energy_uj}\n")).unwrap();
    fs::write(d.join("max_energy_range_uj"), format!("{range_uj}\n")).unwrap();
}

fn set(root: &Path, dir: &str, energy_uj: u64) {
    fs::write(root.join(dir).join("energy_uj"), format!("{energy_uj}\n")).unwrap();
}

#[test]
fn packages_sum_and_a_wrapped_counter_is_unwrapped() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // Two packages, the first 2 J short of its counter's range; a DRAM
    // subdomain under it; a non-RAPL zone that must be ignored.
    const RANGE: u64 = 262_143_328_850;
    domain(root, "intel-rapl:0", "package-0", RANGE - 2_000_000, RANGE);
    domain(root, "intel-rapl:0:0", "dram", 5_000_000, RANGE);
    domain(root, "intel-rapl:1", "package-1", 10_000_000, RANGE);
    domain(root, "dtpm:0", "other", 1, RANGE);
    let before = EnergySnapshot::read_in(root).unwrap();
    let dram_before = EnergySnapshot::read_dram_in(root).unwrap();
    // Package 0 wraps past its range to 3 J (5 J used), package 1 uses 7 J,
    // DRAM 1.5 J.
    set(root, "intel-rapl:0", 3_000_000);
    set(root, "intel-rapl:1", 17_000_000);
    set(root, "intel-rapl:0:0", 6_500_000);
    let after = EnergySnapshot::read_in(root).unwrap();
    let joules = before.joules_until(&after).unwrap();
    assert!((joules - 12.0).abs() < 1e-9, "{joules}");
    let dram = dram_before
        .joules_until(&EnergySnapshot::read_dram_in(root).unwrap())
        .unwrap();
    assert!((dram - 1.5).abs() < 1e-9, "{dram}");
    // A domain that vanished between the two reads gives no figure.
    fs::remove_dir_all(root.join("intel-rapl:1")).unwrap();
    assert_eq!(
        before.joules_until(&EnergySnapshot::read_in(root).unwrap()),
        None
    );
}

#[test]
fn no_domain_and_an_unreadable_counter_say_why_and_how_to_fix_it() {
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(
        EnergySnapshot::read_in(tmp.path()).unwrap_err(),
        EnergyUnavailable::NoDomain
    );
    // A counter that cannot be read (a directory where the file should be:
    // unreadable for root as well as for a user, unlike a mode of 0400).
    let d = tmp.path().join("intel-rapl:0");
    fs::create_dir_all(d.join("energy_uj")).unwrap();
    fs::write(d.join("max_energy_range_uj"), "100\n").unwrap();
    let e = EnergySnapshot::read_in(tmp.path()).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, EnergyUnavailable::Unreadable(_)), "{text}");
    assert!(text.contains("energy_uj"), "{text}");
    assert!(
        text.contains("cap_dac_read_search") && text.contains("udev"),
        "the fix is named: {text}"
    );
}
