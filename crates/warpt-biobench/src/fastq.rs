//! FASTQ input and output: the user's reads checked record by record (so
//! a bad file is reported with its line and the reason), then read
//! through noodles; simulated reads written through noodles.

use std::io::{BufRead, Write};
use std::path::Path;

use crate::reads::Read;

/// Every record of the FASTQ file at `path`, or what is wrong with it:
/// `path:line: reason`.
pub fn read(path: &Path) -> Result<Vec<Read>, String> {
    let shown = path.display();
    let open = || std::fs::File::open(path).map_err(|e| format!("{shown}: {e}"));
    check(std::io::BufReader::new(open()?)).map_err(|e| format!("{shown}:{e}"))?;
    let mut reader = noodles_fastq::io::Reader::new(std::io::BufReader::new(open()?));
    reader
        .records()
        .map(|r| {
            let r = r.map_err(|e| format!("{shown}: {e}"))?;
            Ok(Read {
                name: String::from_utf8_lossy(r.name()).into_owned(),
                seq: r.sequence().to_ascii_uppercase(),
                qual: r.quality_scores().to_vec(),
            })
        })
        .collect()
}

/// Checks the FASTQ shape: four-line records (`@name`, bases, `+`,
/// qualities of the same length in Phred+33), at least one. The error
/// is `line: reason`.
pub fn check(input: impl BufRead) -> Result<(), String> {
    let mut records = 0usize;
    let mut bases = 0usize;
    // Lines of records so far; blank lines may only end the file.
    let mut lines = 0usize;
    let mut blank_at = None;
    let (mut input, mut buf, mut line_no) = (input, Vec::new(), 0usize);
    loop {
        buf.clear();
        line_no += 1;
        if input
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("{line_no}: {e}"))?
            == 0
        {
            break;
        }
        // CRLF ends a line as LF does; a CR with no LF after it (the
        // file's last byte) is part of the line, as noodles reads it.
        let line = match buf.strip_suffix(b"\n") {
            Some(line) => line.strip_suffix(b"\r").unwrap_or(line),
            None => &buf[..],
        };
        if line.is_empty() && lines.is_multiple_of(4) {
            blank_at.get_or_insert(line_no);
            continue;
        }
        if let Some(blank) = blank_at {
            return Err(format!("{blank}: a blank line between records"));
        }
        lines += 1;
        match (lines - 1) % 4 {
            0 => {
                if line[0] != b'@' {
                    return Err(format!(
                        "{line_no}: not FASTQ: a record must start with '@'{}",
                        if line[0] == b'>' {
                            " (this looks like FASTA)"
                        } else {
                            ""
                        }
                    ));
                }
                if line.len() == 1 {
                    return Err(format!("{line_no}: a record without a name"));
                }
                records += 1;
            }
            1 => {
                if let Some(bad) = line.iter().find(|c| !c.is_ascii_alphabetic()) {
                    return Err(format!(
                        "{line_no}: '{}' is not a base",
                        (*bad as char).escape_default()
                    ));
                }
                bases = line.len();
            }
            2 => {
                if line.first() != Some(&b'+') {
                    return Err(format!("{line_no}: expected the '+' line"));
                }
            }
            _ => {
                if line.len() != bases {
                    return Err(format!(
                        "{line_no}: {} qualities for {bases} bases",
                        line.len()
                    ));
                }
                if let Some(bad) = line.iter().find(|&&c| !(33..=126).contains(&c)) {
                    return Err(format!(
                        "{line_no}: '{}' is not a Phred+33 quality",
                        (*bad as char).escape_default()
                    ));
                }
            }
        }
    }
    if records == 0 {
        return Err("1: no FASTQ records".into());
    }
    if !lines.is_multiple_of(4) {
        return Err(format!("{lines}: the last record is cut short"));
    }
    Ok(())
}

/// Writes `reads` as FASTQ to `path`.
pub fn write<'a>(path: &Path, reads: impl Iterator<Item = &'a Read>) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(fail)?;
    let mut writer = noodles_fastq::io::Writer::new(std::io::BufWriter::new(file));
    for r in reads {
        let record = noodles_fastq::Record::new(
            noodles_fastq::record::Definition::new(r.name.as_bytes(), ""),
            r.seq.clone(),
            r.qual.clone(),
        );
        writer.write_record(&record).map_err(fail)?;
    }
    writer.get_mut().flush().map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reports_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.fq");
        let reads = vec![
            Read {
                name: "a".into(),
                seq: b"ACGT".to_vec(),
                qual: b"IIII".to_vec(),
            },
            Read {
                name: "b".into(),
                seq: b"GGA".to_vec(),
                qual: b"#5I".to_vec(),
            },
        ];
        write(&good, reads.iter()).unwrap();
        assert_eq!(read(&good).unwrap(), reads);

        let cases: [(&str, &str); 6] = [
            (
                ">a\nACGT\n",
                ":1: not FASTQ: a record must start with '@' (this looks like FASTA)",
            ),
            ("@a\nAC GT\n+\nIIIII\n", ":2: ' ' is not a base"),
            ("@a\nACGT\n-\nIIII\n", ":3: expected the '+' line"),
            ("@a\nACGT\n+\nIII\n", ":4: 3 qualities for 4 bases"),
            (
                "@a\nACGT\n+\nIIII\n@b\nAC\n",
                ":6: the last record is cut short",
            ),
            ("", ":1: no FASTQ records"),
        ];
        for (text, want) in cases {
            let bad = dir.path().join("bad.fq");
            std::fs::write(&bad, text).unwrap();
            let err = read(&bad).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }

    /// Found by `scripts/fuzz fastq`: the check stripped a CR with no LF
    /// after it (the file's last byte) while noodles keeps it, so a read
    /// passed with more qualities than bases.
    #[test]
    fn the_check_ends_lines_where_noodles_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.fq");
        std::fs::write(&path, "@a\r\nACG\r\n+\r\nII#\r\n").unwrap();
        let reads = read(&path).unwrap();
        assert_eq!(
            (reads[0].seq.as_slice(), reads[0].qual.as_slice()),
            (&b"ACG"[..], &b"II#"[..])
        );
        for (text, want) in [
            ("@rGTN\n\n+A\n\r", ":4: 1 qualities for 0 bases"),
            ("@a\nA\n+\nI\r", ":4: 2 qualities for 1 bases"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = read(&path).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
