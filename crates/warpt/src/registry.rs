//! The suites this build offers: adding a suite is one line here.

use warpt_harness::Registry;

/// Every suite compiled into this binary; the fault-injection suite only
/// when `WARPT_SELFTEST=1` (workers inherit the variable, so they agree).
pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.register(Box::new(warpt_micro::MicroSuite));
    r.register(Box::new(warpt_linpack::LinpackSuite));
    r.register(Box::new(warpt_pepbench::PepbenchSuite));
    r.register(Box::new(warpt_userbench::suite::HarnessSuite));
    r.register(Box::new(warpt_mlperf::MlperfSuite));
    r.register(Box::new(warpt_biobench::BiobenchSuite));
    if std::env::var("WARPT_SELFTEST").is_ok_and(|v| v == "1") {
        r.register(Box::new(warpt_selftest::SelftestSuite));
    }
    r
}
