//! An adapter's replies read strictly: whatever a process prints on its
//! stdout is outside input, so a reply that is not the protocol's is
//! [`DriverError::Garbled`], never a panic or a made-up figure.

use serde_json::Value;

use super::DriverError;

/// One timed request's samples: nanoseconds, each for `calls` calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    /// Each sample's nanoseconds.
    pub samples_ns: Vec<u64>,
    /// Calls per sample.
    pub calls: u64,
}

impl Timed {
    /// Every sample's nanoseconds together ([`Timed::from_reply`] refuses
    /// samples whose sum overflows; saturated for any other).
    pub fn total_ns(&self) -> u64 {
        self.samples_ns
            .iter()
            .fold(0u64, |t, &ns| t.saturating_add(ns))
    }
}

/// What a benchmark returned and used, after its timed calls.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
pub struct Output {
    /// The adapter's peak resident set size, bytes.
    pub peak_rss_bytes: Option<u64>,
    /// Every `ttft_times_ms` the calls returned, in order.
    #[serde(default)]
    pub ttft_times_ms: Vec<f64>,
    /// Every `tpot_times_ms` the calls returned, in order.
    #[serde(default)]
    pub tpot_times_ms: Vec<f64>,
    /// How many numbers the last call returned (written to the output file).
    pub output_count: Option<usize>,
    /// Why the last call's return value is not an output.
    pub output_note: Option<String>,
    /// torch.cuda's peak allocated bytes, when the benchmark used CUDA.
    pub cuda_peak_allocated_bytes: Option<u64>,
    /// torch.cuda's allocated bytes at the end.
    pub cuda_allocated_bytes: Option<u64>,
    /// torch.cuda's reserved bytes at the end.
    pub cuda_reserved_bytes: Option<u64>,
    /// The timer behind the samples (`host`: perf_counter_ns around each
    /// batch of calls).
    pub timing: Option<String>,
    /// That timer's resolution, nanoseconds.
    pub timer_resolution_ns: Option<u64>,
    /// The timing asked for and where from (`device (flag)`), when it is not
    /// the default or not what was used.
    pub timing_requested: Option<String>,
    /// Why the timer used is not the one asked for.
    pub timing_note: Option<String>,
    /// What was cleaned before the first timed call (`off` when switched off).
    pub device_hygiene: Option<String>,
    /// How the cache was flushed between calls (`cold_cache`).
    pub cold_cache: Option<String>,
    /// How asynchronous work was waited for before a batch's clock stopped
    /// (JAX's `block_until_ready`), when it was.
    pub sync: Option<String>,
    /// Peak device memory of the benchmark (CUDA: allocated bytes since the
    /// hygiene's reset).
    pub peak_device_memory_bytes: Option<u64>,
    /// More details for the result, by name (the pytest plugin's `group`
    /// and `extra_info`): strings, numbers and booleans as they are, other
    /// values as JSON text.
    #[serde(default)]
    pub details: std::collections::BTreeMap<String, Value>,
}

/// The adapter's reply `line` to request `op`: the reply object when it
/// says `ok`, else the user's error, a skip, or [`DriverError::Garbled`]
/// for anything that is not a protocol reply.
pub fn parse_reply(op: &str, line: &str) -> Result<Value, DriverError> {
    let garbled = || DriverError::Garbled {
        op: op.to_string(),
        reply: line.trim_end().to_string(),
    };
    let reply: Value = serde_json::from_str(line).map_err(|_| garbled())?;
    let text = |key: &str| reply.get(key).and_then(Value::as_str).map(str::to_string);
    match reply.get("ok").and_then(Value::as_bool) {
        Some(true) => Ok(reply),
        Some(false) => match text("skipped") {
            Some(reason) => Err(DriverError::Skipped {
                op: op.to_string(),
                reason,
            }),
            None => Err(DriverError::User {
                op: op.to_string(),
                message: text("error").unwrap_or_else(|| "(no message)".into()),
                traceback: text("traceback"),
            }),
        },
        None => Err(garbled()),
    }
}

impl Timed {
    /// Each sample's seconds per call (at least a nanosecond a batch).
    pub fn seconds_per_call(&self) -> impl Iterator<Item = f64> + '_ {
        let per_call = 1e9 * self.calls as f64;
        self.samples_ns
            .iter()
            .map(move |&ns| ns.max(1) as f64 / per_call)
    }

    /// The samples a `run` reply for `calls` calls holds: `samples_ns` with
    /// their `calls` (an adapter that batches itself), or one `elapsed_ns`.
    /// No samples, no calls, or nanoseconds that overflow together are
    /// [`DriverError::Garbled`].
    pub fn from_reply(reply: &Value, calls: u64) -> Result<Timed, DriverError> {
        let garbled = || DriverError::Garbled {
            op: "run".into(),
            reply: reply.to_string(),
        };
        let count = |key: &str| reply.get(key).and_then(Value::as_u64).ok_or_else(garbled);
        let samples = match reply.get("samples_ns").and_then(Value::as_array) {
            Some(list) => Timed {
                samples_ns: list
                    .iter()
                    .map(Value::as_u64)
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(garbled)?,
                calls: count("calls")?,
            },
            None => Timed {
                samples_ns: vec![count("elapsed_ns")?],
                calls,
            },
        };
        let total = samples
            .samples_ns
            .iter()
            .try_fold(0u64, |t, &ns| t.checked_add(ns));
        if samples.samples_ns.is_empty() || samples.calls == 0 || total.is_none() {
            return Err(garbled());
        }
        Ok(samples)
    }
}

impl Output {
    /// The `output` reply's fields; a reply of another shape is
    /// [`DriverError::Garbled`].
    pub fn from_reply(reply: &Value) -> Result<Output, DriverError> {
        serde_json::from_value(reply.clone()).map_err(|_| DriverError::Garbled {
            op: "output".into(),
            reply: reply.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn garbled(r: Result<impl std::fmt::Debug, DriverError>) -> bool {
        matches!(r, Err(DriverError::Garbled { .. }))
    }

    #[test]
    fn replies_say_ok_skipped_or_the_users_error() {
        let ok = parse_reply("run", r#"{"ok": true, "elapsed_ns": 5}"#).expect("ok");
        assert_eq!(ok["elapsed_ns"], 5);
        match parse_reply("setup", r#"{"ok": false, "skipped": "no GPU"}"#) {
            Err(DriverError::Skipped { op, reason }) => {
                assert_eq!((op.as_str(), reason.as_str()), ("setup", "no GPU"))
            }
            other => panic!("{other:?}"),
        }
        match parse_reply(
            "run",
            r#"{"ok": false, "error": "boom", "traceback": "tb"}"#,
        ) {
            Err(DriverError::User {
                message, traceback, ..
            }) => {
                assert_eq!(
                    (message.as_str(), traceback.as_deref()),
                    ("boom", Some("tb"))
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn anything_else_on_stdout_is_garbled() {
        for line in [
            "",
            "hello from print()\n",
            "[]",
            "{}",
            r#"{"ok": "yes"}"#,
            r#"{"ok": 1}"#,
            "{\"ok\": tru",
        ] {
            assert!(garbled(parse_reply("run", line)), "{line:?}");
        }
    }

    #[test]
    fn timed_samples_come_from_elapsed_ns_or_samples_ns() {
        let one = Timed::from_reply(&json!({"ok": true, "elapsed_ns": 900}), 3).expect("timed");
        assert_eq!(
            one,
            Timed {
                samples_ns: vec![900],
                calls: 3
            }
        );
        let many = Timed::from_reply(&json!({"ok": true, "samples_ns": [4, 6], "calls": 2}), 9)
            .expect("timed");
        assert_eq!(
            many,
            Timed {
                samples_ns: vec![4, 6],
                calls: 2
            }
        );
        assert_eq!(many.total_ns(), 10);
    }

    /// Found by `scripts/fuzz protocol_reply`: samples whose nanoseconds
    /// overflow together panicked (debug) or wrapped (release) where the
    /// driver summed them.
    #[test]
    fn overflowing_negative_empty_or_callless_samples_are_garbled() {
        for reply in [
            json!({"samples_ns": [u64::MAX, 1], "calls": 1}),
            json!({"samples_ns": [], "calls": 1}),
            json!({"samples_ns": [5], "calls": 0}),
            json!({"samples_ns": [5], "calls": -1}),
            json!({"samples_ns": [-5], "calls": 1}),
            json!({"samples_ns": [1.5], "calls": 1}),
            json!({"samples_ns": [5]}),
            json!({"elapsed_ns": "5"}),
            json!({"elapsed_ns": -1}),
            json!({}),
        ] {
            assert!(garbled(Timed::from_reply(&reply, 1)), "{reply}");
        }
        assert!(garbled(Timed::from_reply(&json!({"elapsed_ns": 5}), 0)));
        let huge = Timed {
            samples_ns: vec![u64::MAX, u64::MAX],
            calls: 1,
        };
        assert_eq!(huge.total_ns(), u64::MAX);
    }

    #[test]
    fn output_replies_of_another_shape_are_garbled() {
        let out =
            Output::from_reply(&json!({"ok": true, "peak_rss_bytes": 7, "ttft_times_ms": [1.5]}))
                .expect("output");
        assert_eq!(
            (out.peak_rss_bytes, out.ttft_times_ms),
            (Some(7), vec![1.5])
        );
        for reply in [
            json!({"peak_rss_bytes": -7}),
            json!({"ttft_times_ms": "1"}),
            json!([1]),
        ] {
            assert!(garbled(Output::from_reply(&reply)), "{reply}");
        }
    }
}
