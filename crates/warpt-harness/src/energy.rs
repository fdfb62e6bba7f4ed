//! A monitored result's energy as metrics: `energy_j` and `mean_power_w`
//! summed over the power sources and per source (tag `source`), and
//! `energy_per_<unit>` for each rate metric (joules per unit of work).

use std::collections::BTreeMap;

use warpt_model::{BenchmarkMetric, TelemetrySummary};

/// The unit of work of a rate unit, as a metric-name word and a display
/// unit: `tokens/s` -> (`token`, `token`), `GFLOP/s` -> (`gflop`, `GFLOP`),
/// `IOPS` -> (`io`, `IO`). `None` for a unit that is not a rate.
pub fn work_unit(rate_unit: &str) -> Option<(String, String)> {
    let what = if rate_unit == "IOPS" {
        "IO"
    } else {
        rate_unit.strip_suffix("/s")?.trim()
    };
    if what.is_empty() {
        return None;
    }
    // `tokens` -> `token`; `GB`, `bytes`... as said, bar a plural `s`.
    let singular = match what.strip_suffix('s') {
        Some(stem) if stem.len() > 1 && !stem.ends_with('s') => stem,
        _ => what,
    };
    let word: String = singular
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    Some((word, singular.to_string()))
}

fn metric(name: String, value: f64, unit: &str, tags: BTreeMap<String, String>) -> BenchmarkMetric {
    BenchmarkMetric {
        tags,
        ..BenchmarkMetric::single(&name, value, unit, false)
    }
}

/// The energy metrics of a result whose window `summary` covers, given the
/// result's own `metrics` (the rates the work unit comes from); fills the
/// summary's [`TelemetrySummary::energy_per_unit`] too. None without a
/// power reading.
pub fn energy_metrics(
    summary: &mut TelemetrySummary,
    metrics: &[BenchmarkMetric],
) -> Vec<BenchmarkMetric> {
    let (Some(energy), Some(power)) = (summary.energy_j, summary.mean_power_w) else {
        return Vec::new();
    };
    let mut out = vec![
        metric("energy_j".into(), energy, "J", BTreeMap::new()),
        metric("mean_power_w".into(), power, "W", BTreeMap::new()),
    ];
    for (source, e) in &summary.energy_sources {
        let tags = BTreeMap::from([("source".to_string(), source.clone())]);
        out.push(metric("energy_j".into(), e.energy_j, "J", tags.clone()));
        out.push(metric("mean_power_w".into(), e.mean_power_w, "W", tags));
    }
    let rates: Vec<(&BenchmarkMetric, (String, String))> = metrics
        .iter()
        .filter(|m| m.higher_is_better && m.value > 0.0 && m.value.is_finite())
        .filter_map(|m| Some((m, work_unit(&m.unit)?)))
        .collect();
    for (m, (word, unit)) in &rates {
        // Two rates of one unit and tags (prefill and decode tokens/s) are
        // told apart by the rate's name.
        let shared = rates
            .iter()
            .filter(|(o, (w, _))| w == word && o.tags == m.tags)
            .count()
            > 1;
        let mut tags = m.tags.clone();
        if shared {
            tags.insert("rate".into(), m.name.clone());
        }
        let per = power / m.value;
        let key = format!("{} {}", m.name, m.tag_label()).trim().to_string();
        summary.energy_per_unit.insert(key, per);
        out.push(metric(
            format!("energy_per_{word}"),
            per,
            &format!("J/{unit}"),
            tags,
        ));
    }
    out
}

/// How the run's warning that the CPU's energy cannot be read begins.
pub const UNMEASURED: &str = "energy not measured: ";

/// The run's warning when the monitor cannot read the CPU's energy (RAPL
/// absent or root-only), from the monitor's `missing` sources: the reason
/// and, when it is a permission, how to grant it. None when it reads.
pub fn unmeasured(missing: &[String]) -> Option<String> {
    missing
        .iter()
        .find_map(|n| n.strip_prefix("power: "))
        .map(|why| format!("{UNMEASURED}{why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpt_model::SourceEnergy;

    #[test]
    fn unreadable_power_is_one_warning_with_its_reason() {
        let missing = vec![
            "GPU: NVML unavailable (no driver)".to_string(),
            "power: RAPL counters are not readable (x): fix".to_string(),
        ];
        assert_eq!(
            unmeasured(&missing).as_deref(),
            Some("energy not measured: RAPL counters are not readable (x): fix")
        );
        assert_eq!(unmeasured(&missing[..1]), None);
    }

    #[test]
    fn work_units_from_rate_units() {
        let w = |u: &str| work_unit(u).map(|(a, b)| format!("{a} {b}"));
        assert_eq!(w("tokens/s").as_deref(), Some("token token"));
        assert_eq!(w("GFLOP/s").as_deref(), Some("gflop GFLOP"));
        assert_eq!(w("GB/s").as_deref(), Some("gb GB"));
        assert_eq!(w("ops/s").as_deref(), Some("op op"));
        assert_eq!(w("IOPS").as_deref(), Some("io IO"));
        assert_eq!(w("ms"), None);
        assert_eq!(w("/s"), None);
    }

    #[test]
    fn totals_sources_and_joules_per_unit_of_work() {
        let mut s = TelemetrySummary {
            energy_j: Some(300.0),
            mean_power_w: Some(150.0),
            energy_sources: [
                ("cpu_package".to_string(), 100.0),
                ("gpu".to_string(), 200.0),
            ]
            .into_iter()
            .map(|(k, j)| {
                (
                    k,
                    SourceEnergy {
                        energy_j: j,
                        mean_power_w: j / 2.0,
                        samples: 2,
                    },
                )
            })
            .collect(),
            ..TelemetrySummary::default()
        };
        let rate = |name: &str, v: f64| BenchmarkMetric::single(name, v, "tokens/s", true);
        let metrics = vec![
            rate("prefill", 3000.0),
            rate("decode", 50.0),
            BenchmarkMetric::single("ttft_ms", 12.0, "ms", false),
        ];
        let out = energy_metrics(&mut s, &metrics);
        let find = |name: &str, tag: Option<(&str, &str)>| {
            out.iter()
                .find(|m| {
                    m.name == name
                        && match tag {
                            Some((k, v)) => m.tags.get(k).map(String::as_str) == Some(v),
                            None => m.tags.is_empty(),
                        }
                })
                .map(|m| (m.value, m.unit.clone()))
        };
        assert_eq!(find("energy_j", None), Some((300.0, "J".into())));
        assert_eq!(find("mean_power_w", None), Some((150.0, "W".into())));
        assert_eq!(
            find("energy_j", Some(("source", "gpu"))),
            Some((200.0, "J".into()))
        );
        assert_eq!(
            find("mean_power_w", Some(("source", "cpu_package"))),
            Some((50.0, "W".into()))
        );
        // 150 W over 50 tokens/s: 3 J a decoded token; the two rates of one
        // unit are told apart by name.
        assert_eq!(
            find("energy_per_token", Some(("rate", "decode"))),
            Some((3.0, "J/token".into()))
        );
        assert_eq!(
            find("energy_per_token", Some(("rate", "prefill"))),
            Some((0.05, "J/token".into()))
        );
        assert!(out.iter().all(|m| !m.higher_is_better));
        assert_eq!(s.energy_per_unit["decode"], 3.0);
        // No power reading: no energy metrics.
        let mut quiet = TelemetrySummary::default();
        assert!(energy_metrics(&mut quiet, &metrics).is_empty());
    }
}
