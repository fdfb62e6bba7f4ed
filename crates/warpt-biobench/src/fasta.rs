//! FASTA input: checked line by line (so a bad file is reported with its
//! line and the reason), then read through noodles.

use std::io::BufRead;
use std::path::Path;

/// One named sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The name (the definition line up to the first space).
    pub name: String,
    /// The residues, as letters.
    pub sequence: Vec<u8>,
}

/// Every record of the FASTA file at `path`, or what is wrong with it:
/// `path:line: reason`.
pub fn read(path: &Path) -> Result<Vec<Record>, String> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("{shown}: {e}"))?;
    check(std::io::BufReader::new(file)).map_err(|e| format!("{shown}:{e}"))?;
    let file = std::fs::File::open(path).map_err(|e| format!("{shown}: {e}"))?;
    let mut reader = noodles_fasta::io::Reader::new(std::io::BufReader::new(file));
    reader
        .records()
        .map(|r| {
            let r = r.map_err(|e| format!("{shown}: {e}"))?;
            Ok(Record {
                name: String::from_utf8_lossy(r.name()).into_owned(),
                sequence: r.sequence().as_ref().to_vec(),
            })
        })
        .collect()
}

/// Checks the FASTA shape: a definition line (`>name`) first, then
/// sequence lines of letters (and `*`, `-`), every record non-empty, at
/// least one record. The error is `line: reason`.
pub fn check(input: impl BufRead) -> Result<(), String> {
    let mut records = 0;
    let mut residues_in_record = 0usize;
    let mut last_header = 0;
    for (n, line) in input.split(b'\n').enumerate() {
        let n = n + 1;
        let line = line.map_err(|e| format!("{n}: {e}"))?;
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.is_empty() {
            continue;
        }
        if line[0] == b'>' {
            if records > 0 && residues_in_record == 0 {
                return Err(format!("{last_header}: record without a sequence"));
            }
            if line.len() == 1 || line[1].is_ascii_whitespace() {
                return Err(format!("{n}: a definition line without a name"));
            }
            records += 1;
            residues_in_record = 0;
            last_header = n;
        } else if records == 0 {
            return Err(format!(
                "{n}: not FASTA: the first line must start with '>'"
            ));
        } else if let Some(bad) = line
            .iter()
            .find(|&&c| !(c.is_ascii_alphabetic() || c == b'*' || c == b'-'))
        {
            return Err(format!(
                "{n}: '{}' is not a residue letter",
                (*bad as char).escape_default()
            ));
        } else {
            residues_in_record += line.len();
        }
    }
    match (records, residues_in_record) {
        (0, _) => Err("1: no FASTA records".into()),
        (_, 0) => Err(format!("{last_header}: record without a sequence")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_records_and_reports_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.fa");
        std::fs::write(&good, ">a first\nACGT\nAC\n\n>b\r\nMKV*\r\n").unwrap();
        let records = read(&good).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].name, "a");
        assert_eq!(records[0].sequence, b"ACGTAC");
        assert_eq!(records[1].sequence, b"MKV*");

        let cases: [(&str, &str); 5] = [
            ("ACGT\n", ":1: not FASTA"),
            (">a\nAC GT\n", ":2: ' ' is not a residue"),
            (">a\n>b\nAC\n", ":1: record without a sequence"),
            ("", ":1: no FASTA records"),
            (">\nAC\n", ":1: a definition line without a name"),
        ];
        for (text, want) in cases {
            let bad = dir.path().join("bad.fa");
            std::fs::write(&bad, text).unwrap();
            let err = read(&bad).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
        assert!(read(&dir.path().join("missing.fa")).is_err());
    }
}
