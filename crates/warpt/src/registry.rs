//! The suites this build offers: adding a suite is one line here.

use warpt_harness::Registry;

/// Every suite compiled into this binary.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.register(Box::new(warpt_micro::MicroSuite));
    r
}
