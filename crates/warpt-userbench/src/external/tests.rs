//! Benchmark files driven for real through the Python adapter.

use super::*;
use std::time::Duration;
use warpt_harness::NoProgress;

fn ctx() -> RunContext {
    RunContext {
        params: Default::default(),
        seed: 1,
        duration: Duration::from_millis(200),
        burnin: Duration::from_millis(20),
        target_rel_ci: 0.05,
        clock_probe: None,
    }
}

fn run(text: &str) -> (Result<Measured, BenchmarkError>, Option<Validation>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("baseline_x.py");
    std::fs::write(&file, text).expect("write");
    let mut b = ExternalBenchmark::python(&file, "python3");
    let ctx = ctx();
    if let Err(e) = b.prepare(&ctx) {
        return (Err(e), None);
    }
    let progress = NoProgress;
    let mut measure = Measure::new(&progress);
    let measured = b.measure(&ctx, &mut measure);
    let v = measured.is_ok().then(|| b.validate(&ctx));
    (measured, v)
}

#[test]
fn a_fast_function_is_timed_in_batches_per_call() {
    let (m, v) = run(
        "class B:\n    def setup(self): self.n = 0\n    def benchmark_fn(self): self.n += 1\n    def teardown(self): pass\n",
    );
    let m = m.expect("measured");
    let calls = m
        .details
        .iter()
        .find(|(k, _)| k == "calls_per_sample")
        .and_then(|(_, v)| v.as_i64())
        .expect("calls in the details");
    assert!(calls > 100, "a trivial call is batched: {calls} per sample");
    let latency = m.metrics[0].value;
    assert!(
        latency > 0.0 && latency < 0.01,
        "{latency} ms per trivial call"
    );
    assert!(v.expect("validated").passed);
}

#[test]
fn a_crash_fails_and_a_wrong_result_fails_validation() {
    let (m, _) = run(
        "class B:\n    def setup(self): pass\n    def benchmark_fn(self): 1 / 0\n    def teardown(self): pass\n",
    );
    match m {
        Err(BenchmarkError::Raised(e)) => {
            assert_eq!(e.stage, "measure");
            assert_eq!(e.message, "ZeroDivisionError: division by zero");
            assert!(e.traceback.unwrap_or_default().contains("Traceback"));
        }
        other => panic!("expected a failure, got {:?}", other.map(|m| m.metrics)),
    }
    let (m, v) = run(
        "class B:\n    def setup(self): pass\n    def benchmark_fn(self): pass\n    def validate_result(self): return 'off by one'\n    def teardown(self): pass\n",
    );
    assert!(m.is_ok());
    let v = v.expect("validated");
    assert!(!v.passed && v.message.contains("off by one"), "{v:?}");
}

#[test]
fn no_interpreter_is_a_skip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("b.py");
    std::fs::write(&file, "").expect("write");
    let mut b = ExternalBenchmark::python(&file, "no-such-python3");
    match b.prepare(&ctx()) {
        Err(BenchmarkError::Skipped(why)) => assert!(why.contains("no-such-python3"), "{why}"),
        other => panic!("expected a skip, got {other:?}"),
    }
}
