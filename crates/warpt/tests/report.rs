//! `warpt report`: Markdown and JSON contents, and an HTML report rendered
//! by a real headless Chromium whose charts must have drawn something.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod common;
use common::{stdout_of, warpt};

use std::path::{Path, PathBuf};
use std::process::Command as Std;

use warpt_model::BenchmarkSuiteRun;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../warpt-model/tests/data/example_export.json")
}

/// The fixture and a copy whose every value is 10% higher.
fn two_runs(dir: &Path) -> (PathBuf, PathBuf) {
    let mut run: BenchmarkSuiteRun =
        serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap();
    run.id = "second".into();
    let m = run.manifest.get_or_insert_with(Default::default);
    m.labels = [("bios".to_string(), "1.3".to_string())].into();
    m.description = Some("after the BIOS update".into());
    for b in &mut run.benchmarks {
        for m in &mut b.metrics {
            m.value *= 1.1;
            if let Some(s) = m.stats.as_mut() {
                s.samples.iter_mut().for_each(|v| *v *= 1.1);
                s.median *= 1.1;
                s.ci95_low *= 1.1;
                s.ci95_high *= 1.1;
            }
        }
    }
    let second = dir.join("second.json");
    std::fs::write(&second, serde_json::to_vec(&run).unwrap()).unwrap();
    (fixture(), second)
}

fn report(runs: &[&Path], args: &[&str]) -> String {
    let out = stdout_of(warpt().arg("report").args(runs).args(args));
    String::from_utf8(out).unwrap()
}

#[test]
fn markdown_and_json_cover_environment_results_and_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_runs(dir.path());
    let md = report(&[&a, &b], &[]);
    for needle in [
        "## Environment",
        "## Results: ",
        "## Comparison: ",
        "| benchmark | metric |",
        "validation passed",
        // The second run's labels and description, beside the first's none.
        "after the BIOS update",
        "bios=1.3",
    ] {
        assert!(md.contains(needle), "{needle}\n{md}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&report(&[&a, &b], &["--format", "json"])).unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 2);
    let c = &json["comparisons"][0];
    assert!(c["metrics"].as_array().unwrap().len() > 3);
}

fn chromium() -> PathBuf {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|n| warpt_system::which(n))
        .expect("a Chromium is needed for this test; scripts/test installs Debian's chromium")
}

#[test]
fn the_html_report_renders_its_charts_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_runs(dir.path());
    let html_path = dir.path().join("report.html");
    warpt()
        .arg("report")
        .args([&a, &b])
        .args(["--format", "html", "-o"])
        .arg(&html_path)
        .assert()
        .success();
    let html = std::fs::read_to_string(&html_path).unwrap();
    // Offline: nothing fetched; the line charts' script is inlined.
    for external in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "@import",
        "<script src",
        "<link",
    ] {
        assert!(
            !html.contains(external),
            "the report must need no network: {external}"
        );
    }
    assert!(html.matches("<svg").count() >= 4);

    // A copy with a probe that measures every chart as laid out by the
    // browser: the SVGs, and the line charts uPlot redrew (their SVG kept
    // for printing, hidden).
    let probe = r#"<pre id="probe"></pre><script>
      const out = [...document.querySelectorAll('figure')].map(f => {
        const live = f.querySelector('.live');
        if (live) {
          const b = live.querySelector('.uplot canvas').getBoundingClientRect();
          return { w: b.width, h: b.height, live: true,
                   hidden_svg: getComputedStyle(live.querySelector('svg')).display === 'none',
                   shapes: live.uplot.data.slice(1).flat().filter(v => v !== null).length,
                   text: [...live.querySelectorAll('.u-legend th')].map(t => t.textContent).join('|') };
        }
        const s = f.querySelector('svg'), b = s.getBoundingClientRect();
        return { w: b.width, h: b.height,
                 shapes: s.querySelectorAll('rect,path,line,polyline,circle').length,
                 text: [...s.querySelectorAll('text')].map(t => t.textContent).join('|') };
      });
      document.getElementById('probe').textContent = JSON.stringify(out);
    </script>"#;
    let probed = dir.path().join("probed.html");
    std::fs::write(&probed, html.replace("</body>", &format!("{probe}</body>"))).unwrap();
    let profile = dir.path().join("profile");
    let out = Std::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", probed.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom
        .find("<pre id=\"probe\">")
        .expect("chromium printed the DOM")
        + 16;
    let end = start + dom[start..].find("</pre>").unwrap();
    let charts: serde_json::Value = serde_json::from_str(&dom[start..end]).unwrap();
    let charts = charts.as_array().unwrap();
    assert!(charts.len() >= 4, "{charts:?}");
    for c in charts {
        assert!(
            c["w"].as_f64().unwrap() > 100.0 && c["h"].as_f64().unwrap() > 100.0,
            "{c}"
        );
        assert!(
            c["shapes"].as_u64().unwrap() >= 5,
            "a chart with almost nothing drawn: {c}"
        );
        assert!(!c["text"].as_str().unwrap().is_empty(), "no axis text: {c}");
        if c["live"] == true {
            assert_eq!(c["hidden_svg"], true, "{c}");
        }
    }
    assert!(
        charts.iter().any(|c| c["live"] == true),
        "no line chart redrawn: {charts:?}"
    );
}
