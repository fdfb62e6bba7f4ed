//! A worker's stderr, which carries the benchmark's own output (its
//! prints, a C library's messages): the last lines kept for a crash
//! report, and, when the caller asks, every line appended to a log file
//! (a harness run's `outputs/<benchmark>.log`), so a passing benchmark's
//! output is kept too.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use jiff::Timestamp;

/// Stderr lines kept for crash reports.
pub(crate) const TAIL_LINES: usize = 20;

/// Longest line kept in the tail, in characters (the log keeps lines whole).
const TAIL_LINE_CHARS: usize = 500;

/// The last lines read, shared with the reading thread.
pub(crate) type Tail = Arc<Mutex<VecDeque<String>>>;

/// Reads `stderr` to its end on a thread of its own, keeping the last
/// [`TAIL_LINES`] lines in the returned tail and appending every line to
/// `log` (created with its directory; a header names `label` and the time)
/// when given. A log that cannot be written is reported as the first line
/// of the tail and otherwise ignored: the run goes on.
pub(crate) fn follow(
    stderr: impl Read + Send + 'static,
    log: Option<&Path>,
    label: &str,
) -> (Tail, JoinHandle<()>) {
    let tail: Tail = Arc::new(Mutex::new(VecDeque::new()));
    let mut file = log.map(|p| open(p, label).map_err(|e| (p.to_path_buf(), e)));
    if let Some(Err((path, e))) = &file
        && let Ok(mut t) = tail.lock()
    {
        t.push_back(format!(
            "<warpt: cannot keep this output in {}: {e}>",
            path.display()
        ));
    }
    let shared = Arc::clone(&tail);
    let thread = std::thread::spawn(move || {
        let mut log = match file.take() {
            Some(Ok(f)) => Some(f),
            _ => None,
        };
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(f) = log.as_mut()
                && writeln!(f, "{line}").is_err()
            {
                log = None;
            }
            if let Ok(mut t) = shared.lock() {
                if t.len() == TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(line.chars().take(TAIL_LINE_CHARS).collect());
            }
        }
    });
    (tail, thread)
}

/// `path` opened for appending, after a header line for this worker.
fn open(path: &Path, label: &str) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(f, "== {label}: worker started {}", Timestamp::now())?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_goes_to_the_log_and_the_last_ones_to_the_tail() {
        let t = tempfile::tempdir().expect("tempdir");
        let log = t.path().join("out/b.log");
        let text: String = (0..30).map(|i| format!("line {i}\n")).collect();
        for round in 0..2 {
            let (tail, thread) = follow(std::io::Cursor::new(text.clone()), Some(&log), "b");
            thread.join().expect("reader");
            let tail = tail.lock().expect("tail");
            assert_eq!(tail.len(), TAIL_LINES);
            assert_eq!(tail.back().map(String::as_str), Some("line 29"));
            let kept = std::fs::read_to_string(&log).expect("log");
            // Appended: a header and 30 lines per worker.
            assert_eq!(kept.lines().count(), 31 * (round + 1), "{kept}");
            assert!(
                kept.lines()
                    .next()
                    .is_some_and(|l| l.starts_with("== b: worker started"))
            );
        }
    }

    #[test]
    fn a_log_that_cannot_be_written_is_said_in_the_tail() {
        let t = tempfile::tempdir().expect("tempdir");
        // A directory where the file should be.
        let (tail, thread) = follow(std::io::Cursor::new("x\n"), Some(t.path()), "b");
        thread.join().expect("reader");
        let tail = tail.lock().expect("tail");
        assert!(tail[0].contains("cannot keep this output"), "{tail:?}");
        assert_eq!(tail.back().map(String::as_str), Some("x"));
    }
}
