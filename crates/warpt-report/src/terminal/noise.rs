//! `warpt noise`: a machine's noise profile, one line per metric.

use warpt_model::NoiseEntry;

use crate::compare::noise::{self, NOISE_K};
use crate::render::num;

fn band(e: &NoiseEntry, n: usize) -> f64 {
    noise::band_pct(&noise::from_profile(e), NOISE_K, n, n)
}

/// The profile as aligned columns: run-to-run spread, its sd, the
/// within-run CI and the band a comparison uses with 1 and 3 trials a side.
pub fn noise_profile(entries: &[NoiseEntry]) -> String {
    let header = [
        "benchmark",
        "metric",
        "tags",
        "median",
        "run-to-run",
        "(sd)",
        "within-run",
        "band 1/side",
        "band 3/side",
    ];
    let rows: Vec<[String; 9]> = entries
        .iter()
        .map(|e| {
            let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("±{:.2}%", v * 100.0));
            [
                format!("{}/{}", e.suite, e.benchmark),
                e.metric.clone(),
                warpt_model::tag_label(&e.tags),
                format!("{} {}", num(e.median), e.unit),
                pct(Some(e.cv)),
                pct(e.cv_sd),
                pct(e.within_ci),
                format!("±{:.1}%", band(e, 1)),
                format!("±{:.1}%", band(e, 3)),
            ]
        })
        .collect();
    let mut width = header.map(str::len);
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .zip(width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
            + "\n"
    };
    let mut s = line(header.map(String::from).to_vec());
    for r in rows {
        s += &line(r.to_vec());
    }
    s
}
