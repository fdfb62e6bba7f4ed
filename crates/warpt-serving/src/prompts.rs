//! Prompts from the user's files: JSONL (one `{"prompt": ...}` per line,
//! optionally with its own `output_tokens`) or the ShareGPT JSON format
//! (a list of conversations; the first human turn is the prompt). Errors
//! name the file and, for JSONL, the line.

use std::path::Path;

/// One prompt and, where the file gives it, its own output length.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The text.
    pub text: String,
    /// Tokens to ask for, when the file says.
    pub output_tokens: Option<u32>,
}

/// The formats [`read`] takes.
pub const FORMATS: &[&str] = &["jsonl", "sharegpt"];

/// The prompts in `path`, in `format` (`jsonl` or `sharegpt`).
pub fn read(path: &Path, format: &str) -> Result<Vec<Prompt>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("parameter 'prompts_file': reading {}: {e}", path.display()))?;
    let prompts = match format {
        "jsonl" => jsonl(&text, path)?,
        "sharegpt" => sharegpt(&text, path)?,
        other => {
            return Err(format!(
                "parameter 'dataset_format': '{other}' is not one of {}",
                FORMATS.join(", ")
            ));
        }
    };
    if prompts.is_empty() {
        return Err(format!(
            "parameter 'prompts_file': {} holds no prompt",
            path.display()
        ));
    }
    Ok(prompts)
}

fn jsonl(text: &str, path: &Path) -> Result<Vec<Prompt>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| {
            format!(
                "parameter 'prompts_file': {} line {}: {why}",
                path.display(),
                i + 1
            )
        };
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let text = v["prompt"]
            .as_str()
            .ok_or_else(|| bad("no \"prompt\" string".into()))?;
        let output_tokens = match v.get("output_tokens") {
            None | Some(serde_json::Value::Null) => None,
            Some(n) => Some(
                n.as_u64()
                    .filter(|&n| (1..=1 << 20).contains(&n))
                    .ok_or_else(|| bad(format!("\"output_tokens\" {n} is not a count from 1")))?
                    as u32,
            ),
        };
        out.push(Prompt {
            text: text.to_string(),
            output_tokens,
        });
    }
    Ok(out)
}

fn sharegpt(text: &str, path: &Path) -> Result<Vec<Prompt>, String> {
    let bad = |why: &str| {
        format!(
            "parameter 'prompts_file': {} is not ShareGPT JSON: {why}",
            path.display()
        )
    };
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
    let list = v
        .as_array()
        .ok_or_else(|| bad("not a list of conversations"))?;
    Ok(list
        .iter()
        .filter_map(|c| {
            c["conversations"].as_array()?.iter().find_map(|turn| {
                let human = matches!(turn["from"].as_str(), Some("human" | "user"));
                human.then(|| turn["value"].as_str()).flatten()
            })
        })
        .filter(|t| !t.trim().is_empty())
        .map(|t| Prompt {
            text: t.to_string(),
            output_tokens: None,
        })
        .collect())
}

/// `n` prompts drawn from `all` in an order the seed fixes (each once
/// before any repeats).
pub fn take(all: &[Prompt], n: usize, seed: u64) -> Vec<Prompt> {
    use rand_core::{RngCore, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x0070_726f_6d70_7473);
    let mut order: Vec<usize> = (0..all.len()).collect();
    for i in (1..order.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
        .iter()
        .cycle()
        .take(n)
        .map(|&i| all[i].clone())
        .collect()
}

/// `n` lengths of mean `mean` and standard deviation `sd` (a normal
/// distribution rounded, at least 1; `sd` 0: all `mean`), from `seed`.
pub fn lengths(mean: usize, sd: usize, n: usize, seed: u64) -> Vec<usize> {
    use rand_core::SeedableRng;
    use rand_distr::Distribution;
    let normal = rand_distr::Normal::new(mean as f64, sd as f64);
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x6c65_6e67_7468);
    (0..n)
        .map(|_| match (&normal, sd) {
            (Ok(d), 1..) => d.sample(&mut rng).round().max(1.0) as usize,
            _ => mean.max(1),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_have_their_mean_and_spread_and_repeat_from_the_seed() {
        assert_eq!(lengths(64, 0, 3, 1), [64, 64, 64]);
        let v = lengths(200, 50, 20_000, 9);
        let mean = v.iter().sum::<usize>() as f64 / v.len() as f64;
        let sd =
            (v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
        assert!(
            (mean - 200.0).abs() < 2.0 && (sd - 50.0).abs() < 2.0,
            "{mean} {sd}"
        );
        assert_eq!(lengths(200, 50, 10, 9), lengths(200, 50, 10, 9));
        assert!(lengths(2, 100, 1000, 3).iter().all(|&x| x >= 1));
    }

    #[test]
    fn files_are_read_and_bad_lines_named() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl_path = dir.path().join("p.jsonl");
        std::fs::write(
            &jsonl_path,
            "{\"prompt\": \"a\"}\n\n{\"prompt\": \"b\", \"output_tokens\": 7}\n",
        )
        .unwrap();
        let p = read(&jsonl_path, "jsonl").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].output_tokens, Some(7));
        std::fs::write(&jsonl_path, "{\"prompt\": \"a\"}\n{\"text\": \"b\"}\n").unwrap();
        let e = read(&jsonl_path, "jsonl").unwrap_err();
        assert!(e.contains("p.jsonl line 2: no \"prompt\""), "{e}");
        let share = dir.path().join("sg.json");
        std::fs::write(
            &share,
            r#"[{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]},
                {"conversations": [{"from": "gpt", "value": "only a reply"}]}]"#,
        )
        .unwrap();
        let p = read(&share, "sharegpt").unwrap();
        assert_eq!(
            p,
            [Prompt {
                text: "hi".into(),
                output_tokens: None
            }]
        );
        assert!(
            read(&share, "csv")
                .unwrap_err()
                .contains("'csv' is not one of jsonl, sharegpt")
        );
        let picked = take(
            &read(&jsonl_path.with_file_name("none"), "jsonl").unwrap_or(p.clone()),
            3,
            1,
        );
        assert_eq!(picked.len(), 3);
        let many: Vec<Prompt> = (0..10)
            .map(|i| Prompt {
                text: i.to_string(),
                output_tokens: None,
            })
            .collect();
        let a = take(&many, 10, 5);
        let mut seen: Vec<String> = a.iter().map(|p| p.text.clone()).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 10, "each once before repeats");
        assert_eq!(a, take(&many, 10, 5));
    }
}
