//! `warpt noise`: a machine's noise profile, one line per metric.

use warpt_model::NoiseEntry;

use crate::compare::noise::{self, NOISE_K, Unprofiled};
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

/// `warpt noise`'s report: the profile, what its columns mean for
/// `trials` trials, and the metrics left unprofiled.
pub fn noise_report(entries: &[NoiseEntry], unprofiled: &[Unprofiled], trials: u32) -> String {
    let mut out = noise_profile(entries);
    out += &format!(
        "\nrun-to-run: robust CV (1.4826 x MAD / median) of the {trials} trial medians, (sd) the \
         classical CV; within-run: what one run's 95% CI claims; band: what `benchmark \
         compare` treats as noise: {NOISE_K} x the larger CV x {:.2} (its upper 90% bound from \
         {trials} trials) for one run a side, / sqrt(3) for 3 trials a side\n",
        warpt_stats::spread_upper_factor(trials as usize, noise::SPREAD_ALPHA),
    );
    if !unprofiled.is_empty() {
        out += "\nnot profiled (fewer than 3 undisturbed trials; compare calls their noise unknown):\n";
        for u in unprofiled {
            out += &format!(
                "  {} {} {}: {} of {} trials undisturbed\n",
                u.benchmark,
                u.metric,
                warpt_model::tag_label(&u.tags),
                u.undisturbed,
                u.trials
            );
        }
    }
    out
}
