//! warpt's benchmark protocol (docs/protocol.md) for a benchmark written
//! in Rust: implement [`Benchmark`], call [`serve`] from `main`, and name
//! the program in the chapter's `bench.yaml` `command:`.
//!
//! ```no_run
//! struct Sum(Vec<f64>, f64);
//! impl warpt_protocol::Benchmark for Sum {
//!     fn setup(&mut self) -> Result<(), String> {
//!         self.0 = (0..1_000_000).map(f64::from).collect();
//!         Ok(())
//!     }
//!     fn call(&mut self) -> Result<(), String> {
//!         self.1 = self.0.iter().sum();
//!         Ok(())
//!     }
//!     fn output(&self) -> Vec<f64> {
//!         vec![self.1]
//!     }
//! }
//! fn main() -> std::io::Result<()> {
//!     warpt_protocol::serve(&mut Sum(Vec::new(), 0.0))
//! }
//! ```

use std::io::{BufRead, Write};
use std::time::Instant;

use serde_json::{Value, json};

/// A benchmark: warpt calls `setup` once, `call` as many times as its
/// stopping rule asks, then `validate` and `teardown`. An `Err` is the
/// benchmark's error, reported with its stage.
pub trait Benchmark {
    /// Allocates and fills inputs; not timed.
    fn setup(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// One call of the code under test; timed.
    fn call(&mut self) -> Result<(), String>;

    /// What is wrong with the last call's result; `None` when it is right.
    fn validate(&mut self) -> Option<String> {
        None
    }

    /// The last call's numbers, compared against the baseline's for accuracy.
    fn output(&self) -> Vec<f64> {
        Vec::new()
    }

    /// Releases what `setup` took; not timed.
    fn teardown(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// Serves `bench` on stdin and stdout until `exit`: first moves the
/// protocol onto private duplicates of stdin and stdout, points fd 1 at
/// stderr and fd 0 at /dev/null, so what the benchmark prints never
/// reaches warpt and what it reads from stdin is never one of warpt's
/// requests.
pub fn serve(bench: &mut dyn Benchmark) -> std::io::Result<()> {
    use std::os::fd::{FromRawFd, IntoRawFd};
    std::io::stdout().flush()?;
    let null = std::fs::File::open("/dev/null")?.into_raw_fd();
    // SAFETY: dup and dup2 on the process's own standard descriptors and
    // the one just opened; each duplicate is owned by the File made from
    // it and nothing else, and `null` is closed once copied.
    let (requests, channel) = unsafe {
        let out = libc::dup(1);
        let inp = libc::dup(0);
        if out < 0 || inp < 0 || libc::dup2(2, 1) < 0 || libc::dup2(null, 0) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        libc::close(null);
        (
            std::fs::File::from_raw_fd(inp),
            std::fs::File::from_raw_fd(out),
        )
    };
    serve_on(
        bench,
        std::io::BufReader::new(requests),
        std::io::BufWriter::new(channel),
    )
}

/// Serves `bench` on `requests` and `replies` (what [`serve`] does on the
/// standard streams; a test drives it with buffers).
pub fn serve_on(
    bench: &mut dyn Benchmark,
    requests: impl BufRead,
    mut replies: impl Write,
) -> std::io::Result<()> {
    for line in requests.lines() {
        let line = line?;
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(request) => answer(bench, &request),
            Err(e) => json!({"ok": false, "error": format!("not a JSON request: {e}")}),
        };
        writeln!(replies, "{reply}")?;
        replies.flush()?;
        if reply.get("exit").is_some() {
            break;
        }
    }
    Ok(())
}

/// The reply to one request.
fn answer(bench: &mut dyn Benchmark, request: &Value) -> Value {
    let op = request["op"].as_str().unwrap_or("");
    let done = |r: Result<(), String>| match r {
        Ok(()) => json!({"ok": true}),
        Err(e) => json!({"ok": false, "error": e}),
    };
    match op {
        "load" => json!({"ok": true, "config": {}, "timing": "host", "cold_cache": false}),
        "setup" => done(bench.setup()),
        "run" => {
            let calls = request["calls"].as_u64().unwrap_or(1);
            let start = Instant::now();
            for _ in 0..calls {
                if let Err(e) = bench.call() {
                    return json!({"ok": false, "error": e});
                }
            }
            json!({"ok": true, "elapsed_ns": start.elapsed().as_nanos() as u64})
        }
        "output" => {
            let values = bench.output();
            let mut reply = json!({"ok": true, "timing": "host", "timer_resolution_ns": 1});
            if !values.is_empty() {
                if let Some(path) = request["path"].as_str() {
                    let numbers: Vec<Value> = values
                        .iter()
                        .map(|v| if v.is_finite() { json!(v) } else { Value::Null })
                        .collect();
                    if let Err(e) = std::fs::write(path, Value::Array(numbers).to_string()) {
                        return json!({"ok": false, "error": format!("writing {path}: {e}")});
                    }
                }
                reply["output_count"] = json!(values.len());
            }
            reply
        }
        "validate" => json!({"ok": true, "problem": bench.validate()}),
        "teardown" => done(bench.teardown()),
        "exit" => json!({"ok": true, "exit": true}),
        other => json!({"ok": false, "error": format!("unknown request '{other}'")}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counter {
        calls: u64,
    }

    impl Benchmark for Counter {
        fn call(&mut self) -> Result<(), String> {
            self.calls += 1;
            if self.calls > 5 {
                return Err("only five calls allowed".into());
            }
            Ok(())
        }
        fn validate(&mut self) -> Option<String> {
            (self.calls != 5).then(|| format!("{} calls", self.calls))
        }
        fn output(&self) -> Vec<f64> {
            vec![self.calls as f64, f64::NAN]
        }
    }

    /// The replies to `requests`, one JSON value per line.
    fn replies(requests: &[Value]) -> Vec<Value> {
        let input: String = requests.iter().map(|r| format!("{r}\n")).collect();
        let mut out = Vec::new();
        serve_on(&mut Counter { calls: 0 }, input.as_bytes(), &mut out).expect("serves");
        String::from_utf8(out)
            .expect("utf-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON reply"))
            .collect()
    }

    #[test]
    fn answers_the_protocol_in_order_and_reports_errors() {
        let dir = std::env::temp_dir().join(format!("warpt-protocol-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("out.json");
        let r = replies(&[
            json!({"op": "load", "path": "bench"}),
            json!({"op": "setup"}),
            json!({"op": "run", "calls": 5, "record": true}),
            json!({"op": "output", "path": path}),
            json!({"op": "validate"}),
            json!({"op": "run", "calls": 1}),
            json!({"op": "frobnicate"}),
            json!({"op": "exit"}),
            json!({"op": "setup"}),
        ]);
        assert_eq!(r.len(), 8, "nothing is read after exit: {r:?}");
        assert_eq!(r[0]["timing"], "host");
        assert!(r[2]["elapsed_ns"].as_u64().is_some(), "{}", r[2]);
        assert_eq!(r[3]["output_count"], 2);
        let written = std::fs::read_to_string(&path).expect("output written");
        assert_eq!(written, "[5.0,null]");
        assert_eq!(r[4]["problem"], Value::Null);
        assert_eq!(r[5]["ok"], false);
        assert_eq!(r[5]["error"], "only five calls allowed");
        assert!(r[6]["error"].as_str().unwrap_or("").contains("frobnicate"));
        assert_eq!(r[7]["ok"], true);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A benchmark whose setup reads its standard input to the end.
    struct Reader;

    impl Benchmark for Reader {
        fn setup(&mut self) -> Result<(), String> {
            use std::io::Read;
            let mut read = String::new();
            std::io::stdin()
                .read_to_string(&mut read)
                .map_err(|e| e.to_string())?;
            match read.is_empty() {
                true => Ok(()),
                false => Err(format!("read {} bytes of stdin", read.len())),
            }
        }
        fn call(&mut self) -> Result<(), String> {
            Ok(())
        }
    }

    /// `serve` on the real standard streams, in a child process (this test
    /// binary again): the benchmark's read of stdin finds nothing, and every
    /// request still reaches the protocol.
    #[test]
    fn serve_keeps_the_requests_from_the_benchmarks_stdin() {
        if std::env::var_os("WARPT_PROTOCOL_CHILD").is_some() {
            serve(&mut Reader).expect("serves");
            return;
        }
        let exe = std::env::current_exe().expect("the test binary");
        let mut child = std::process::Command::new(exe)
            .args([
                "--exact",
                "tests::serve_keeps_the_requests_from_the_benchmarks_stdin",
                "--test-threads=1",
                "--nocapture",
            ])
            .env("WARPT_PROTOCOL_CHILD", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the child starts");
        let requests = [
            json!({"op": "load"}),
            json!({"op": "setup"}),
            json!({"op": "run", "calls": 3}),
            json!({"op": "exit"}),
        ];
        let mut stdin = child.stdin.take().expect("its stdin");
        for r in &requests {
            writeln!(stdin, "{r}").expect("a request");
        }
        drop(stdin);
        let out = child.wait_with_output().expect("the child ends");
        // The test harness's own words go to the same pipe (its "test ...
        // " before the first reply, on the same line): the replies are
        // the JSON objects.
        let replies: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.find('{').and_then(|i| serde_json::from_str(&l[i..]).ok()))
            .collect();
        assert_eq!(replies.len(), 4, "{replies:?}");
        assert_eq!(replies[1], json!({"ok": true}), "setup read stdin");
        assert!(replies[2]["elapsed_ns"].is_u64(), "{}", replies[2]);
        assert_eq!(replies[3]["exit"], true);
    }
}
