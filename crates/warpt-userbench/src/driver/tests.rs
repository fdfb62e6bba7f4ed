//! The driver against real adapters: Python's, a shell one, a socket's.

use super::*;
use std::path::PathBuf;

fn file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

const GOOD: &str = r#"
import time
class Sleepy:
    def get_config(self):
        return {"iterations": 3}
    def setup(self):
        print("setup chatter goes to stderr")
        self.n = 0
    def benchmark_fn(self):
        self.n += 1
        time.sleep(0.001)
    def validate_result(self):
        return None if self.n == 5 else f"ran {self.n} times"
    def teardown(self):
        pass
"#;

#[test]
fn runs_the_protocol_against_real_python() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = file(dir.path(), "baseline_sleepy.py", GOOD);
    let mut d = Driver::python("python3", &f).expect("loads");
    assert_eq!(d.config()["iterations"], 3);
    d.setup().expect("setup");
    let ns = d.run(5).expect("run");
    assert!(ns >= 5_000_000, "five 1 ms sleeps took {ns} ns");
    assert_eq!(d.validate().expect("validate"), None);
    d.run(1).expect("run");
    assert_eq!(
        d.validate().expect("validate").as_deref(),
        Some("ran 6 times")
    );
    d.teardown().expect("teardown");
    d.finish().expect("exits");
}

#[test]
fn requests_sent_ahead_are_answered_in_order_and_settled_before_the_next() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = file(dir.path(), "baseline_sleepy.py", GOOD);
    let mut d = Driver::python("python3", &f).expect("loads");
    d.setup().expect("setup");
    // Three samples of two calls, then one of one call, both sent
    // before either reply is read.
    d.send_ahead(2, 3, true).expect("sent");
    d.send_ahead(1, 1, true).expect("sent");
    assert_eq!(d.ahead(), 4);
    // Read once the three samples could be done at 1 ms each (the
    // one-call request queued behind it keeps the adapter busy).
    let first = d
        .take_ahead_due(Duration::from_millis(1))
        .expect("one ahead")
        .expect("timed");
    assert_eq!((first.samples_ns.len(), first.calls), (3, 2));
    assert!(
        first.samples_ns.iter().all(|&ns| ns >= 2_000_000),
        "{first:?}"
    );
    assert_eq!(d.ahead(), 1);
    // Another request reads (and drops) the reply still ahead first:
    // 3 x 2 + 1 calls ran.
    assert_eq!(
        d.validate().expect("validate").as_deref(),
        Some("ran 7 times")
    );
    assert_eq!(d.ahead(), 0);
    assert!(d.take_ahead().is_none());
    d.teardown().expect("teardown");
    d.finish().expect("exits");
}

#[test]
fn closing_requests_sent_behind_a_run_are_answered_after_it_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = file(dir.path(), "baseline_sleepy.py", GOOD);
    let out = dir.path().join("out.json");
    let mut d = Driver::python("python3", &f).expect("loads");
    d.setup().expect("setup");
    // Output, validate and teardown queued behind a run of two samples
    // of two calls, before its reply is read.
    d.send_ahead(2, 2, true).expect("sent");
    d.send_closing(Some(&out), false).expect("sent");
    let run = d.take_ahead().expect("one ahead").expect("timed");
    assert_eq!((run.samples_ns.len(), run.calls), (2, 2));
    d.output(Some(&out)).expect("output's reply");
    let (problem, closed) = d.validate_and_teardown(false);
    assert_eq!(problem.expect("validated").as_deref(), Some("ran 4 times"));
    closed.expect("torn down");
    // Nothing is left queued: the next request reads its own reply.
    d.finish().expect("exits");
}

#[test]
fn user_errors_come_back_with_their_traceback() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = file(
        dir.path(),
        "crash.py",
        "class C:\n    def setup(self): pass\n    def benchmark_fn(self):\n        raise ValueError('bad input')\n    def teardown(self): pass\n",
    );
    let mut d = Driver::python("python3", &f).expect("loads");
    d.setup().expect("setup");
    match d.run(1) {
        Err(DriverError::User {
            op,
            message,
            traceback,
        }) => {
            assert_eq!(op, "run");
            assert_eq!(message, "ValueError: bad input");
            assert!(traceback.unwrap_or_default().contains("benchmark_fn"));
        }
        other => panic!("expected a user error, got {other:?}"),
    }
}

/// docs/protocol.md's adapter in POSIX sh: a benchmark that "computes"
/// by sleeping, timed with `date +%s%N`.
const SH_ADAPTER: &str = r#"
while IFS= read -r line; do
  case "$line" in
    *'"load"'*) echo '{"ok": true, "config": {"language": "sh"}}' ;;
    *'"run"'*)
      calls=$(printf '%s' "$line" | sed 's/.*"calls": *\([0-9]*\).*/\1/')
      start=$(date +%s%N); i=0
      while [ "$i" -lt "$calls" ]; do sleep 0.01; i=$((i + 1)); done
      echo "{\"ok\": true, \"elapsed_ns\": $(( $(date +%s%N) - start ))}" ;;
    *'"validate"'*) echo '{"ok": true, "problem": null}' ;;
    *'"exit"'*) echo '{"ok": true}'; exit 0 ;;
    *'"setup"'*|*'"teardown"'*|*'"output"'*) echo '{"ok": true}' ;;
    *) echo '{"ok": false, "error": "unknown request"}' ;;
  esac
done
"#;

#[test]
fn any_executable_that_follows_the_protocol_is_an_adapter() {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(SH_ADAPTER);
    let mut d = Driver::start(cmd, "sh", Path::new("kernel.sh")).expect("loads");
    assert_eq!(d.config()["language"], "sh");
    d.setup().expect("setup");
    let ns = d.run(3).expect("run");
    assert!(ns >= 30_000_000, "three 10 ms sleeps took {ns} ns");
    assert_eq!(d.output(None).expect("output"), Output::default());
    assert_eq!(d.validate().expect("validate"), None);
    d.teardown().expect("teardown");
    d.finish().expect("exits");
}

/// An adapter that is already running and listens on a Unix socket
/// (as the pytest plugin does): one connection per benchmark, `exit`
/// ends the connection, not the adapter.
const SOCKET_ADAPTER: &str = r#"
import json, socket, sys, time
server = socket.socket(socket.AF_UNIX)
server.bind(sys.argv[1])
server.listen(1)
print("listening", flush=True)
for _ in range(2):
    conn, _ = server.accept()
    # Separate streams: a text stream opened "rw" drops what it read
    # ahead on a write, and warpt sends some requests together.
    f, out = conn.makefile("r"), conn.makefile("w")
    for line in f:
        r = json.loads(line)
        if r["op"] == "load":
            reply = {"ok": True, "config": {"name": r["path"]}}
        elif r["op"] == "run":
            t = time.perf_counter_ns()
            for _ in range(r["calls"]):
                time.sleep(0.001)
            reply = {"ok": True, "samples_ns": [time.perf_counter_ns() - t], "calls": r["calls"]}
        elif r["op"] == "output":
            reply = {"ok": True, "details": {"group": "g", "extra_info": {"k": 1}}}
        else:
            reply = {"ok": True}
        out.write(json.dumps(reply) + "\n")
        out.flush()
        if r["op"] == "exit":
            break
    conn.close()
"#;

#[test]
fn a_socket_adapter_serves_one_benchmark_per_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("adapter.sock");
    let mut adapter = Command::new("python3")
        .arg("-c")
        .arg(SOCKET_ADAPTER)
        .arg(&socket)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut ready = String::new();
    BufReader::new(adapter.stdout.take().expect("stdout"))
        .read_line(&mut ready)
        .expect("the adapter says it listens");
    for name in ["tests/a.py::test_one", "tests/a.py::test_two[2]"] {
        // Loaded and set up.
        let mut d = Driver::connect(&socket, name, &LoadOptions::default()).expect("connects");
        assert_eq!(d.config()["name"], name);
        assert!(d.run(3).expect("run") >= 3_000_000);
        let out = d.output(None).expect("output");
        assert_eq!(out.details["group"], "g");
        assert_eq!(out.details["extra_info"]["k"], 1);
        if name.ends_with("test_one") {
            d.teardown().expect("teardown");
            d.finish().expect("ends the connection");
        } else {
            // Validate, teardown and exit sent at once, answered in turn.
            let (problem, closed) = d.validate_and_teardown(true);
            assert_eq!(problem.expect("validates"), None);
            closed.expect("tears down and ends the connection");
        }
    }
    assert!(adapter.wait().expect("waits").success());
    let err = Driver::connect(&socket, "t.py::t", &LoadOptions::default())
        .err()
        .expect("nobody listens now");
    assert!(matches!(err, DriverError::Spawn { .. }), "{err}");
}

#[test]
fn a_file_without_a_benchmark_and_a_dying_adapter_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let none = file(dir.path(), "empty.py", "X = 1\n");
    let err = Driver::python("python3", &none)
        .err()
        .expect("nothing to load");
    assert!(
        err.to_string().contains("0 classes defining benchmark_fn"),
        "{err}"
    );
    let dies = file(
        dir.path(),
        "dies.py",
        "import os\nclass C:\n    def setup(self): os._exit(3)\n    def benchmark_fn(self): pass\n    def teardown(self): pass\n",
    );
    let mut d = Driver::python("python3", &dies).expect("loads");
    match d.setup() {
        Err(DriverError::Exited { op, status }) => {
            assert_eq!(op, "setup");
            assert!(status.contains('3'), "{status}");
        }
        other => panic!("expected the adapter's exit, got {other:?}"),
    }
    let err = Driver::python("no-such-python", &none)
        .err()
        .expect("no interpreter");
    assert!(matches!(err, DriverError::Spawn { .. }), "{err}");
}
