//! A command counted under valgrind's cachegrind: every instruction the
//! command and its children execute (`--trace-children=yes`), and the
//! misses of a simulated first-level and last-level cache. Exact and
//! repeatable for a deterministic program; the program runs 20 to 100
//! times slower than natively.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::{CacheCounts, CountError, Counts};

/// Counts one run of `argv` (set up by `setup`) under `valgrind`.
pub fn count(
    valgrind: &Path,
    argv: &[String],
    setup: &dyn Fn(&mut Command),
) -> Result<Counts, CountError> {
    if argv.is_empty() {
        return Err(CountError::Failed("an empty command".into()));
    }
    let dir = tempfile::tempdir().map_err(|e| CountError::Read(e.to_string()))?;
    let mut cmd = Command::new(valgrind);
    cmd.arg("--tool=cachegrind")
        .arg("--cache-sim=yes")
        .arg("--trace-children=yes")
        .arg(format!(
            "--cachegrind-out-file={}/cachegrind.out.%p",
            dir.path().display()
        ))
        .arg(format!(
            "--log-file={}/valgrind.log.%p",
            dir.path().display()
        ))
        .arg("--")
        .args(argv);
    setup(&mut cmd);
    cmd.stderr(Stdio::null());
    let status = cmd.status().map_err(|source| CountError::Spawn {
        program: valgrind.display().to_string(),
        source,
    })?;
    let mut files: Vec<_> = std::fs::read_dir(dir.path())
        .map_err(|e| CountError::Read(e.to_string()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    if !status.success() {
        let log = files
            .iter()
            .filter(|p| p.to_string_lossy().contains("valgrind.log"))
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect::<String>();
        let tail: Vec<&str> = log.lines().rev().take(5).collect();
        return Err(CountError::Failed(format!(
            "{} under cachegrind: {status}{}",
            argv[0],
            if tail.is_empty() {
                String::new()
            } else {
                format!(
                    " (valgrind: {})",
                    tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
                )
            }
        )));
    }
    let mut total = Counts {
        instructions: 0,
        cache: Some(CacheCounts {
            data_refs: 0,
            l1_misses: 0,
            ll_misses: 0,
        }),
    };
    let mut read = 0;
    for p in files
        .iter()
        .filter(|p| p.to_string_lossy().contains("cachegrind.out"))
    {
        let text = std::fs::read_to_string(p)
            .map_err(|e| CountError::Read(format!("{}: {e}", p.display())))?;
        let c = parse(&text).map_err(|e| CountError::Read(format!("{}: {e}", p.display())))?;
        total = add(total, c);
        read += 1;
    }
    if read == 0 {
        return Err(CountError::Read("cachegrind wrote no output file".into()));
    }
    Ok(total)
}

fn add(a: Counts, b: Counts) -> Counts {
    let cache = match (a.cache, b.cache) {
        (Some(x), Some(y)) => Some(CacheCounts {
            data_refs: x.data_refs.saturating_add(y.data_refs),
            l1_misses: x.l1_misses.saturating_add(y.l1_misses),
            ll_misses: x.ll_misses.saturating_add(y.ll_misses),
        }),
        (x, y) => x.or(y),
    };
    Counts {
        instructions: a.instructions.saturating_add(b.instructions),
        cache,
    }
}

/// The totals of one cachegrind output file: its `events:` line names
/// the columns of its `summary:` line. Instructions (`Ir`) are required;
/// the cache columns count when the simulation ran.
pub fn parse(text: &str) -> Result<Counts, String> {
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|rest| rest.split_whitespace().collect::<Vec<_>>())
    };
    let events = field("events:").ok_or("no 'events:' line")?;
    let summary = field("summary:").ok_or("no 'summary:' line")?;
    if events.len() != summary.len() {
        return Err(format!(
            "{} events but {} summary figures",
            events.len(),
            summary.len()
        ));
    }
    let mut value = std::collections::HashMap::new();
    for (name, figure) in events.iter().zip(&summary) {
        let n: u64 = figure
            .parse()
            .map_err(|_| format!("summary figure {figure:?} of {name} is not a count"))?;
        value.insert(*name, n);
    }
    let get = |n: &str| value.get(n).copied();
    let instructions = get("Ir").ok_or("no Ir (instructions) event")?;
    let sum = |names: &[&str]| -> Option<u64> {
        names
            .iter()
            .map(|n| get(n))
            .try_fold(0u64, |t, v| v.map(|v| t.saturating_add(v)))
    };
    let cache = match (
        sum(&["Dr", "Dw"]),
        sum(&["I1mr", "D1mr", "D1mw"]),
        sum(&["ILmr", "DLmr", "DLmw"]),
    ) {
        (Some(data_refs), Some(l1_misses), Some(ll_misses)) => Some(CacheCounts {
            data_refs,
            l1_misses,
            ll_misses,
        }),
        _ => None,
    };
    Ok(Counts {
        instructions,
        cache,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "desc: I1 cache:         32768 B, 64 B, 8-way associative
desc: D1 cache:         32768 B, 64 B, 8-way associative
desc: LL cache:         33554432 B, 64 B, 16-way associative
cmd: /bin/true
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
fl=???
fn=0x0000000000001100
0 3 1 1 0 0 0 0 0 0
summary: 1000 10 5 300 20 8 100 4 2
";

    #[test]
    fn the_summary_is_read_by_its_event_names() {
        let c = parse(OUT).unwrap();
        assert_eq!(c.instructions, 1000);
        let cache = c.cache.unwrap();
        assert_eq!(
            cache,
            CacheCounts {
                data_refs: 400,
                l1_misses: 34,
                ll_misses: 15
            }
        );
        // 1000 + 400 refs, 19 first-level-only misses at 10, 15 at 100.
        assert_eq!(
            cache.estimated_cycles(c.instructions),
            1000 + 400 + 190 + 1500
        );
    }

    #[test]
    fn instructions_alone_without_the_cache_simulation() {
        let c = parse("events: Ir\nsummary: 42\n").unwrap();
        assert_eq!((c.instructions, c.cache), (42, None));
    }

    #[test]
    fn broken_files_say_what_is_wrong() {
        for (text, says) in [
            ("summary: 1\n", "no 'events:'"),
            ("events: Ir\n", "no 'summary:'"),
            ("events: Ir Dr\nsummary: 1\n", "2 events but 1"),
            ("events: Ir\nsummary: -1\n", "not a count"),
            ("events: Dr\nsummary: 1\n", "no Ir"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }

    /// The real thing, where valgrind is installed (scripts/test installs it).
    #[test]
    fn a_repeated_run_counts_the_same() {
        let Some(valgrind) = crate::source::detect()
            .ok()
            .and_then(|s| match s {
                crate::Source::Cachegrind(v) => Some(v),
                crate::Source::Perf => None,
            })
            .or_else(|| {
                let p = Path::new("/usr/bin/valgrind");
                p.exists().then(|| p.to_path_buf())
            })
        else {
            eprintln!("not run here: no valgrind");
            return;
        };
        let argv: Vec<String> = ["sh", "-c", "i=0; while [ $i -lt 200 ]; do i=$((i+1)); done"]
            .map(String::from)
            .to_vec();
        let quiet = |c: &mut Command| {
            c.stdin(Stdio::null()).stdout(Stdio::null());
        };
        let a = count(&valgrind, &argv, &quiet).unwrap();
        let b = count(&valgrind, &argv, &quiet).unwrap();
        assert!(a.instructions > 100_000, "{a:?}");
        assert_eq!(a.instructions, b.instructions, "{a:?} vs {b:?}");
        // More work, more instructions, by about the loop's share.
        let longer: Vec<String> = ["sh", "-c", "i=0; while [ $i -lt 400 ]; do i=$((i+1)); done"]
            .map(String::from)
            .to_vec();
        let c = count(&valgrind, &longer, &quiet).unwrap();
        assert!(c.instructions > a.instructions, "{c:?} vs {a:?}");
        let failing: Vec<String> = ["sh", "-c", "exit 3"].map(String::from).to_vec();
        let e = count(&valgrind, &failing, &quiet).unwrap_err();
        assert!(e.to_string().contains("exit status: 3"), "{e}");
    }
}
