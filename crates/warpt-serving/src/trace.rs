//! Recorded traces replayed at their own timestamps: JSONL, one request a
//! line with its `timestamp` in milliseconds and its `input_tokens` and
//! `output_tokens` — the shape of the public Mooncake traces, whose
//! `input_length` / `output_length` names are read too (their `hash_ids`
//! are not used). Errors name the file and the line.

use std::path::Path;

/// One recorded request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceLine {
    /// When it was sent, seconds after the trace's first request.
    pub at_s: f64,
    /// Its prompt length, tokens.
    pub input_tokens: usize,
    /// Its output length, tokens.
    pub output_tokens: u32,
}

/// The requests of the trace in `path`, in time order, times from the
/// first one and divided by `speedup` (2: twice as fast).
pub fn read(path: &Path, speedup: f64) -> Result<Vec<TraceLine>, String> {
    if !(speedup > 0.0 && speedup.is_finite()) {
        return Err(format!(
            "parameter 'trace_speedup' must be above 0, not {speedup}"
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("parameter 'trace_file': reading {}: {e}", path.display()))?;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| {
            format!(
                "parameter 'trace_file': {} line {}: {why}",
                path.display(),
                i + 1
            )
        };
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let at_ms = v["timestamp"]
            .as_f64()
            .filter(|t| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| bad("no \"timestamp\" (milliseconds, 0 or more)".into()))?;
        let count = |names: [&str; 2], min: u64| -> Result<u64, String> {
            let n = names
                .iter()
                .find_map(|k| v.get(*k))
                .ok_or_else(|| bad(format!("no \"{}\"", names[0])))?;
            n.as_u64()
                .filter(|&n| (min..=1 << 20).contains(&n))
                .ok_or_else(|| bad(format!("\"{}\" {n} is not a count from {min}", names[0])))
        };
        lines.push(TraceLine {
            at_s: at_ms / 1e3,
            input_tokens: count(["input_tokens", "input_length"], 1)? as usize,
            output_tokens: count(["output_tokens", "output_length"], 1)? as u32,
        });
    }
    if lines.is_empty() {
        return Err(format!(
            "parameter 'trace_file': {} holds no request",
            path.display()
        ));
    }
    lines.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    let start = lines[0].at_s;
    for l in &mut lines {
        l.at_s = (l.at_s - start) / speedup;
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn reads_both_namings_in_time_order_from_the_first_request() {
        let f = write(
            "{\"timestamp\": 1500, \"input_tokens\": 10, \"output_tokens\": 4}\n\n\
             {\"timestamp\": 1000, \"input_length\": 7, \"output_length\": 2, \"hash_ids\": [1, 2]}\n\
             {\"timestamp\": 3000, \"input_tokens\": 5, \"output_tokens\": 1}\n",
        );
        let t = read(f.path(), 2.0).unwrap();
        let at: Vec<f64> = t.iter().map(|l| l.at_s).collect();
        assert_eq!(at, [0.0, 0.25, 1.0]);
        assert_eq!((t[0].input_tokens, t[0].output_tokens), (7, 2));
        assert_eq!((t[1].input_tokens, t[1].output_tokens), (10, 4));
    }

    #[test]
    fn bad_lines_are_named() {
        let f = write(
            "{\"timestamp\": 0, \"input_tokens\": 3, \"output_tokens\": 2}\n{\"timestamp\": 5, \"input_tokens\": 3}\n",
        );
        let e = read(f.path(), 1.0).unwrap_err();
        assert!(e.contains("line 2") && e.contains("output_tokens"), "{e}");
        let f = write("{\"timestamp\": -1, \"input_tokens\": 3, \"output_tokens\": 2}\n");
        assert!(read(f.path(), 1.0).unwrap_err().contains("timestamp"));
        let f = write("{\"timestamp\": 0, \"input_tokens\": 0, \"output_tokens\": 2}\n");
        assert!(read(f.path(), 1.0).unwrap_err().contains("input_tokens"));
        assert!(read(f.path(), 0.0).unwrap_err().contains("trace_speedup"));
        let f = write("\n");
        assert!(read(f.path(), 1.0).unwrap_err().contains("no request"));
        assert!(
            read(Path::new("/nonexistent/trace.jsonl"), 1.0)
                .unwrap_err()
                .contains("trace_file")
        );
    }
}
