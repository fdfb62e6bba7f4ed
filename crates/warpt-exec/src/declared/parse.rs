//! A run's output into numbers, and an output against its reference.

use crate::spawn::Captured;

use super::file::{Parser, Stream};

/// Shows the start of `text` in an error: a few lines, or `(empty)`.
fn excerpt(text: &str) -> String {
    let t = text.trim();
    if t.is_empty() {
        return " (it was empty)".into();
    }
    let mut head: String = t.lines().take(3).collect::<Vec<_>>().join(" | ");
    if head.len() > 200 {
        let cut = (0..=200)
            .rev()
            .find(|&i| head.is_char_boundary(i))
            .unwrap_or(0);
        head.truncate(cut);
        head.push('…');
    }
    format!(" (it began: {head})")
}

fn stream_text(captured: &Captured, stream: Stream) -> String {
    let bytes = match stream {
        Stream::Stdout => &captured.stdout,
        Stream::Stderr => &captured.stderr,
    };
    String::from_utf8_lossy(bytes).into_owned()
}

fn number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

/// The numbers `parser` finds in a run's output, in the order of its
/// metrics; the error names the key that found nothing.
pub fn extract(parser: &Parser, captured: &Captured) -> Result<Vec<f64>, String> {
    match parser {
        Parser::Regex { stream, patterns } => {
            let text = stream_text(captured, *stream);
            let mut out = Vec::new();
            for re in patterns {
                let caps = re.captures(&text).ok_or_else(|| {
                    format!(
                        "key 'parse.regex': '{}' matches nothing in the command's {}{}",
                        re.as_str(),
                        stream.as_str(),
                        excerpt(&text)
                    )
                })?;
                for g in re.capture_names().flatten() {
                    let m = caps.name(g).ok_or_else(|| {
                        format!(
                            "key 'parse.regex': group '{g}' of '{}' took no part in the match",
                            re.as_str()
                        )
                    })?;
                    out.push(number(m.as_str()).ok_or_else(|| {
                        format!(
                            "key 'parse.regex': group '{g}' captured '{}', which is not a number",
                            m.as_str()
                        )
                    })?);
                }
            }
            Ok(out)
        }
        Parser::Json { stream, pointers } => {
            let text = stream_text(captured, *stream);
            let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                format!(
                    "key 'parse.json': the command's {} is not one JSON document: {e}{}",
                    stream.as_str(),
                    excerpt(&text)
                )
            })?;
            pointers
                .iter()
                .map(|(name, pointer)| {
                    let v = doc.pointer(pointer).ok_or_else(|| {
                        format!(
                            "key 'parse.json.{name}': '{pointer}' finds nothing in the command's {}",
                            stream.as_str()
                        )
                    })?;
                    v.as_f64()
                        .or_else(|| v.as_str().and_then(number))
                        .ok_or_else(|| {
                            format!("key 'parse.json.{name}': '{pointer}' holds {v}, not a number")
                        })
                })
                .collect()
        }
    }
}

/// Compares `actual` with `expected` line by line and token by token
/// (whitespace-separated): two numbers agree within `abs + rel * |expected|`,
/// anything else must be equal. Returns how many numbers were compared;
/// the error names the first difference and its line.
pub fn compare(actual: &str, expected: &str, abs: f64, rel: f64) -> Result<usize, String> {
    let a_lines: Vec<&str> = actual.lines().filter(|l| !l.trim().is_empty()).collect();
    let e_lines: Vec<&str> = expected.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut numbers = 0;
    for (i, (a, e)) in a_lines.iter().zip(&e_lines).enumerate() {
        let at: Vec<&str> = a.split_whitespace().collect();
        let et: Vec<&str> = e.split_whitespace().collect();
        if at.len() != et.len() {
            return Err(format!(
                "line {}: {} fields where the reference has {} ('{}' against '{}')",
                i + 1,
                at.len(),
                et.len(),
                a.trim(),
                e.trim()
            ));
        }
        for (x, y) in at.iter().zip(&et) {
            match (number(x), number(y)) {
                (Some(xv), Some(yv)) => {
                    let allowed = abs + rel * yv.abs();
                    if (xv - yv).abs() > allowed {
                        return Err(format!(
                            "line {}: {x} differs from the reference's {y} by {:.3e}, more than the tolerance {allowed:.3e}",
                            i + 1,
                            (xv - yv).abs()
                        ));
                    }
                    numbers += 1;
                }
                _ if x == y => {}
                _ => {
                    return Err(format!(
                        "line {}: '{x}' where the reference has '{y}'",
                        i + 1
                    ));
                }
            }
        }
    }
    if a_lines.len() != e_lines.len() {
        return Err(format!(
            "{} non-empty lines where the reference has {}",
            a_lines.len(),
            e_lines.len()
        ));
    }
    Ok(numbers)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use regex::RegexBuilder;

    fn out(text: &str) -> Captured {
        Captured {
            stdout: text.as_bytes().to_vec(),
            stderr: b"note 7\n".to_vec(),
        }
    }

    #[test]
    fn regex_groups_become_numbers_in_order_and_a_miss_names_the_key() {
        let re = RegexBuilder::new(r"^rate: (?P<rate>[0-9.]+) MB/s, (?P<ops>\d+) ops$")
            .multi_line(true)
            .build()
            .unwrap();
        let p = Parser::Regex {
            stream: Stream::Stdout,
            patterns: vec![re],
        };
        let got = extract(&p, &out("warming\nrate: 12.5 MB/s, 300 ops\n")).unwrap();
        assert_eq!(got, vec![12.5, 300.0]);
        let e = extract(&p, &out("nothing here\n")).unwrap_err();
        assert!(
            e.contains("parse.regex") && e.contains("nothing here"),
            "{e}"
        );
        let stderr = Parser::Regex {
            stream: Stream::Stderr,
            patterns: vec![RegexBuilder::new(r"note (?P<n>\d+)").build().unwrap()],
        };
        assert_eq!(extract(&stderr, &out("")).unwrap(), vec![7.0]);
    }

    #[test]
    fn json_pointers_read_numbers_and_numeric_strings() {
        let p = Parser::Json {
            stream: Stream::Stdout,
            pointers: vec![
                ("mean".into(), "/results/0/mean".into()),
                ("n".into(), "/n".into()),
            ],
        };
        let got = extract(&p, &out(r#"{"results":[{"mean":0.25}],"n":"40"}"#)).unwrap();
        assert_eq!(got, vec![0.25, 40.0]);
        let e = extract(&p, &out(r#"{"results":[]}"#)).unwrap_err();
        assert!(e.contains("parse.json.mean"), "{e}");
        let e = extract(&p, &out("not json")).unwrap_err();
        assert!(e.contains("not one JSON document"), "{e}");
    }

    #[test]
    fn compare_allows_the_tolerance_and_names_the_first_difference() {
        let reference = "sum 10.0\nmean 2.5\n";
        assert_eq!(
            compare("sum 10.0001\n\nmean 2.5\n", reference, 0.0, 1e-4),
            Ok(2)
        );
        let e = compare("sum 10.1\nmean 2.5\n", reference, 0.0, 1e-4).unwrap_err();
        assert!(e.starts_with("line 1:"), "{e}");
        let e = compare("total 10.0\nmean 2.5\n", reference, 1.0, 0.0).unwrap_err();
        assert!(e.contains("'total'"), "{e}");
        let e = compare("sum 10.0\n", reference, 1.0, 0.0).unwrap_err();
        assert!(e.contains("1 non-empty lines"), "{e}");
    }
}
