//! HPL's text: the input file it reads and the result lines it prints.

use std::path::Path;

/// HPL reads at most this many problem sizes from one input file.
pub const MAX_SIZES: usize = 20;

/// The program that runs HPL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// Netlib HPL's `xhpl`: reads `HPL.dat`, writes to stdout (device 6).
    Xhpl,
    /// The HPC Challenge suite: reads `hpccinf.txt`, writes `hpccoutf.txt`,
    /// and runs its other tests after HPL.
    Hpcc,
}

impl Tool {
    /// Which tool a binary is, by its file name (`hpcc*` is hpcc, anything
    /// else is taken for xhpl).
    pub fn of(binary: &Path) -> Tool {
        let name = binary
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        if name.starts_with("hpcc") {
            Tool::Hpcc
        } else {
            Tool::Xhpl
        }
    }

    /// The name reported in details.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Xhpl => "xhpl",
            Tool::Hpcc => "hpcc",
        }
    }

    /// The file name the tool reads its input from.
    pub fn input_file(self) -> &'static str {
        match self {
            Tool::Xhpl => "HPL.dat",
            Tool::Hpcc => "hpccinf.txt",
        }
    }
}

/// What HPL is asked to solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HplInput {
    /// Matrix order.
    pub n: usize,
    /// Block size.
    pub nb: usize,
    /// Process rows.
    pub p: usize,
    /// Process columns.
    pub q: usize,
    /// How many times N is solved (warm-up included), at most 20.
    pub solves: usize,
}

/// The input file for `tool`: HPL.dat's 31 lines (hpcc adds four for
/// PTRANS, asking for no extra sizes). Panel factorization, broadcast and
/// look-ahead are HPL's sample settings.
pub fn input_file(input: &HplInput, tool: Tool) -> String {
    let sizes = vec![input.n.to_string(); input.solves.clamp(1, MAX_SIZES)].join(" ");
    let (out_name, device) = match tool {
        Tool::Xhpl => ("HPL.out", 6),
        Tool::Hpcc => ("HPL.out", 8),
    };
    let mut s = format!(
        "HPLinpack benchmark input file\n\
         Written by warpt (linpack_external)\n\
         {out_name}      output file name (if any)\n\
         {device}            device out (6=stdout,7=stderr,file)\n\
         {count}            # of problems sizes (N)\n\
         {sizes}         Ns\n\
         1            # of NBs\n\
         {nb}          NBs\n\
         0            PMAP process mapping (0=Row-,1=Column-major)\n\
         1            # of process grids (P x Q)\n\
         {p}            Ps\n\
         {q}            Qs\n\
         16.0         threshold\n\
         1            # of panel fact\n\
         2            PFACTs (0=left, 1=Crout, 2=Right)\n\
         1            # of recursive stopping criterium\n\
         4            NBMINs (>= 1)\n\
         1            # of panels in recursion\n\
         2            NDIVs\n\
         1            # of recursive panel fact.\n\
         1            RFACTs (0=left, 1=Crout, 2=Right)\n\
         1            # of broadcast\n\
         1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)\n\
         1            # of lookahead depth\n\
         1            DEPTHs (>=0)\n\
         2            SWAP (0=bin-exch,1=long,2=mix)\n\
         64           swapping threshold\n\
         0            L1 in (0=transposed,1=no-transposed) form\n\
         0            U  in (0=transposed,1=no-transposed) form\n\
         1            Equilibration (0=no,1=yes)\n\
         8            memory alignment in double (> 0)\n",
        count = input.solves.clamp(1, MAX_SIZES),
        nb = input.nb,
        p = input.p,
        q = input.q,
    );
    if tool == Tool::Hpcc {
        s += "##### This line (no. 32) is ignored (it serves as a separator). ######\n\
              0                      \tNumber of additional problem sizes for PTRANS\n\
              1200                   \tvalues of N\n\
              0                      \tnumber of additional blocking sizes for PTRANS\n\
              40                     \tvalues of NB\n";
    }
    s
}

/// One HPL result line and the residual check printed after it.
#[derive(Debug, Clone, PartialEq)]
pub struct HplResult {
    /// HPL's encoded variant (`WR11C2R4`).
    pub variant: String,
    /// Matrix order.
    pub n: usize,
    /// Block size.
    pub nb: usize,
    /// Process rows.
    pub p: usize,
    /// Process columns.
    pub q: usize,
    /// HPL's `Time` column, seconds (two decimals).
    pub time_s: f64,
    /// HPL's `Gflops` column.
    pub gflops: f64,
    /// The scaled residual HPL printed.
    pub residual: f64,
    /// Whether HPL said PASSED.
    pub passed: bool,
}

/// Output that is not a complete set of HPL results.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{reason}; the output's lines in question:\n{lines}")]
pub struct ParseError {
    /// What is wrong.
    pub reason: String,
    /// The offending lines (or the output's last lines).
    pub lines: String,
}

/// The last `count` lines of `output`, to show with an error.
pub fn tail(output: &str, count: usize) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

/// The fields of a `T/V N NB P Q Time Gflops` line, or `None` when `line`
/// is not one. `Err` when it starts like one but does not parse.
fn result_line(line: &str) -> Option<Result<HplResult, ParseError>> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let variant = *fields.first()?;
    let mut chars = variant.chars();
    let looks = chars.next() == Some('W')
        && matches!(chars.next(), Some('R' | 'C'))
        && chars.next().is_some_and(|c| c.is_ascii_digit());
    if !looks {
        return None;
    }
    let bad = || ParseError {
        reason: "an HPL result line does not have the fields T/V N NB P Q Time Gflops".into(),
        lines: line.to_string(),
    };
    if fields.len() != 7 {
        return Some(Err(bad()));
    }
    let int = |i: usize| fields[i].parse::<usize>().map_err(|_| bad());
    let float = |i: usize| {
        fields[i]
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(bad)
    };
    Some((|| {
        Ok(HplResult {
            variant: variant.to_string(),
            n: int(1)?,
            nb: int(2)?,
            p: int(3)?,
            q: int(4)?,
            time_s: float(5)?,
            gflops: float(6)?,
            residual: f64::NAN,
            passed: false,
        })
    })())
}

/// The residual and verdict of a `||Ax-b||_oo/(...)= 0.0034 ...... PASSED` line.
fn residual_line(line: &str) -> Option<Result<(f64, bool), ParseError>> {
    if !line.trim_start().starts_with("||Ax-b||") {
        return None;
    }
    let after = line.rsplit_once('=')?.1;
    let mut words = after.split_whitespace();
    let value = words.next().and_then(|v| v.parse::<f64>().ok());
    let verdict = words.last();
    Some(match (value, verdict) {
        (Some(v), Some("PASSED")) => Ok((v, true)),
        (Some(v), Some("FAILED")) => Ok((v, false)),
        _ => Err(ParseError {
            reason: "an HPL residual line has no value or no PASSED/FAILED".into(),
            lines: line.to_string(),
        }),
    })
}

/// The result lines HPL has printed so far (residuals not read), for
/// following a run in progress.
pub fn completed(output: &str) -> Vec<HplResult> {
    output
        .lines()
        .filter_map(result_line)
        .filter_map(Result::ok)
        .collect()
}

/// Every result of an HPL run's output, each with its residual check;
/// `expected` is how many there must be.
pub fn parse(output: &str, expected: usize) -> Result<Vec<HplResult>, ParseError> {
    let mut results: Vec<HplResult> = Vec::new();
    let mut pending = false;
    for line in output.lines() {
        if let Some(r) = result_line(line) {
            if pending {
                return Err(ParseError {
                    reason: "an HPL result line has no residual check after it".into(),
                    lines: results
                        .last()
                        .map(|r| r.variant.clone())
                        .unwrap_or_default()
                        + " ... "
                        + line,
                });
            }
            results.push(r?);
            pending = true;
        } else if let Some(res) = residual_line(line) {
            let (value, passed) = res?;
            if let Some(last) = results.last_mut().filter(|_| pending) {
                last.residual = value;
                last.passed = passed;
                pending = false;
            }
        }
    }
    if results.is_empty() {
        return Err(ParseError {
            reason: "no HPL result line (T/V N NB P Q Time Gflops) in the output".into(),
            lines: tail(output, 20),
        });
    }
    if pending || results.len() != expected {
        return Err(ParseError {
            reason: format!(
                "the output stops early: {} complete HPL result(s) of {expected}",
                results.len() - usize::from(pending)
            ),
            lines: tail(output, 12),
        });
    }
    Ok(results)
}

/// The version line of HPL and of hpcc, when the output names them.
pub fn versions(output: &str) -> Vec<String> {
    output
        .lines()
        .filter(|l| l.starts_with("HPLinpack ") || l.contains("HPC Challenge Benchmark version"))
        .map(|l| l.split("  --").next().unwrap_or(l).trim().to_string())
        .take(2)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = include_str!("../tests/data/hpccoutf.txt");
    const TRUNCATED: &str = include_str!("../tests/data/hpccoutf-truncated.txt");

    #[test]
    fn parses_real_hpcc_output() {
        let results = parse(RUN, 4).unwrap();
        assert_eq!(results.len(), 4);
        for r in &results {
            assert_eq!((r.n, r.nb, r.p, r.q), (1000, 128, 1, 1));
            assert!(r.passed && r.residual > 0.0 && r.residual < 16.0, "{r:?}");
            assert!(r.gflops > 0.0 && r.time_s >= 0.0);
            assert!(r.variant.starts_with("WR"));
        }
        assert!(
            versions(RUN).iter().any(|v| v.starts_with("HPLinpack 2.0")),
            "{:?}",
            versions(RUN)
        );
        let e = parse(RUN, 5).unwrap_err();
        assert!(e.reason.contains("4 complete HPL result(s) of 5"), "{e}");
    }

    #[test]
    fn truncated_output_is_an_error_with_the_lines() {
        let e = parse(TRUNCATED, 4).unwrap_err();
        assert!(
            e.to_string().contains("stops early") || e.to_string().contains("fields"),
            "{e}"
        );
        assert!(!e.lines.is_empty());
        let e = parse("WR11C2R4  1000  128  1\n", 1).unwrap_err();
        assert!(e.reason.contains("T/V N NB P Q Time Gflops"), "{e}");
        assert_eq!(e.lines, "WR11C2R4  1000  128  1");
        let e = parse("mpirun: command not found\n", 1).unwrap_err();
        assert!(
            e.reason.contains("no HPL result line") && e.lines.contains("mpirun"),
            "{e}"
        );
    }

    #[test]
    fn a_failed_residual_check_is_kept_as_failed() {
        let out = "WR11C2R4  100  32  1  1  0.00  1.0e+00\n\
                   ||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=  123.4 ...... FAILED\n";
        let r = parse(out, 1).unwrap();
        assert_eq!((r[0].passed, r[0].residual), (false, 123.4));
    }

    #[test]
    fn the_input_file_asks_for_the_sizes_and_grid() {
        let input = HplInput {
            n: 5000,
            nb: 192,
            p: 1,
            q: 2,
            solves: 3,
        };
        let dat = input_file(&input, Tool::Xhpl);
        let lines: Vec<&str> = dat.lines().collect();
        assert_eq!(lines.len(), 31);
        assert!(lines[3].starts_with("6 "), "xhpl writes to stdout");
        assert!(lines[4].starts_with("3 ") && lines[5].starts_with("5000 5000 5000 "));
        assert!(
            lines[7].starts_with("192 ")
                && lines[10].starts_with("1 ")
                && lines[11].starts_with("2 ")
        );
        let hpcc = input_file(&input, Tool::Hpcc);
        assert_eq!(hpcc.lines().count(), 36);
        assert_eq!(Tool::of(Path::new("/usr/bin/hpcc")), Tool::Hpcc);
        assert_eq!(Tool::of(Path::new("/opt/hpl/bin/xhpl")), Tool::Xhpl);
    }
}
