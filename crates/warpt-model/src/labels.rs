//! A run's labels and description: what the person who ran it says about
//! it ("before the BIOS update", `bios=1.2`), recorded in its manifest,
//! stored, exported, listed and filtered on.

use std::collections::BTreeMap;

/// Longest label key, characters.
pub const MAX_KEY: usize = 64;
/// Longest label value, characters.
pub const MAX_VALUE: usize = 200;
/// Longest description, characters.
pub const MAX_DESCRIPTION: usize = 2000;
/// Most labels on one run.
pub const MAX_LABELS: usize = 32;

/// Why a label key is refused, if it is: 1 to [`MAX_KEY`] ASCII letters,
/// digits, `_`, `-` and `.`.
pub fn key_problem(key: &str) -> Option<String> {
    if key.is_empty() || key.chars().count() > MAX_KEY {
        return Some(format!(
            "label key '{key}' must have 1 to {MAX_KEY} characters"
        ));
    }
    key.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .map(|c| format!("label key '{key}' holds {c:?}: use letters, digits, '_', '-' and '.'"))
}

/// Why a label value is refused, if it is: at most [`MAX_VALUE`]
/// characters, no control characters.
pub fn value_problem(key: &str, value: &str) -> Option<String> {
    if value.chars().count() > MAX_VALUE {
        return Some(format!(
            "label {key}: the value is longer than {MAX_VALUE} characters"
        ));
    }
    value
        .chars()
        .any(char::is_control)
        .then(|| format!("label {key}: the value holds a control character"))
}

/// `key=value` as a label (`--label bios=1.2`).
pub fn parse_label(text: &str) -> Result<(String, String), String> {
    let (k, v) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}' is not key=value"))?;
    let k = k.trim();
    if let Some(why) = key_problem(k).or_else(|| value_problem(k, v)) {
        return Err(why);
    }
    Ok((k.to_string(), v.to_string()))
}

/// Why a set of labels is refused as a whole, if it is (each checked, and
/// at most [`MAX_LABELS`]).
pub fn labels_problem(labels: &BTreeMap<String, String>) -> Option<String> {
    if labels.len() > MAX_LABELS {
        return Some(format!("{} labels: at most {MAX_LABELS}", labels.len()));
    }
    labels
        .iter()
        .find_map(|(k, v)| key_problem(k).or_else(|| value_problem(k, v)))
}

/// Why a description is refused, if it is: at most [`MAX_DESCRIPTION`]
/// characters, no control characters but line breaks and tabs.
pub fn description_problem(text: &str) -> Option<String> {
    if text.chars().count() > MAX_DESCRIPTION {
        return Some(format!(
            "the description is longer than {MAX_DESCRIPTION} characters"
        ));
    }
    text.chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\t'))
        .then(|| "the description holds a control character".to_string())
}

/// `k=v k2=v2`, for one line of a table.
pub fn label_text(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_key_value_with_plain_keys() {
        assert_eq!(
            parse_label("bios=1.2 (before update)").unwrap(),
            ("bios".into(), "1.2 (before update)".into())
        );
        assert_eq!(
            parse_label("empty=").unwrap(),
            ("empty".into(), String::new())
        );
        for bad in ["nokey", "=v", "sp ace=v", "k=a\u{7}b"] {
            assert!(parse_label(bad).is_err(), "{bad}");
        }
        assert!(parse_label(&format!("k={}", "x".repeat(MAX_VALUE + 1))).is_err());
        assert!(description_problem("two\nlines\tok").is_none());
        assert!(description_problem("bell\u{7}").is_some());
    }
}
