//! The dashboard in a real browser (headless Chromium over DevTools):
//! every page loads with no console error and draws its charts, the SQL
//! console returns rows, the live view follows a run to its result, and
//! `<script>` in a benchmark name, a tag, a host name or an SQL result
//! stays text. Screenshots of each page go to the test's target temp dir
//! (`dashboard/*.png`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::browser::Browser;
use crate::{record_runs, start, succeeded, warpt};

const EVIL_TAG: &str = "<script>window.__pwned=1</script>";
const EVIL_HOST: &str = "<img src=x onerror=\"window.__pwned=2\">";
const EVIL_NAME: &str = "<script>window.__pwned=4</script>";

/// One real tiny run exported (with telemetry), to derive imports from.
fn exported(dir: &Path) -> Value {
    let file = dir.join("base.json");
    succeeded(
        warpt()
            .args(crate::TINY_RUN)
            .args(
                "--param threads=1 --monitor --monitor-interval 0.05 --no-store --export-file"
                    .split(' '),
            )
            .arg(&file),
    );
    serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap()
}

/// Eight runs of a second machine, a day apart, stepping down 30% half
/// way (a change point), and one run full of markup.
fn imports(dir: &Path, base: &Value) -> Vec<PathBuf> {
    let files: Vec<PathBuf> = (0..8)
        .map(|i| dir.join(format!("lab-b-{i}.json")))
        .collect();
    for (i, f) in files.iter().enumerate() {
        let mut run = base.clone();
        run["id"] = json!(format!("lab-b-{i}"));
        run["start_time"] = json!(format!("2026-01-{:02}T10:00:00Z", i + 1));
        run["system"]["os"]["hostname"] = json!("lab-b");
        run["benchmarks"][0]["telemetry"]["mean_power_w"] = json!(50.0);
        let factor = if i < 4 { 1.0 } else { 0.7 };
        for m in run["benchmarks"][0]["metrics"].as_array_mut().unwrap() {
            m["value"] = json!(m["value"].as_f64().unwrap() * factor * (1.0 + 0.002 * i as f64));
        }
        std::fs::write(f, run.to_string()).unwrap();
    }
    let mut evil = base.clone();
    evil["id"] = json!("evil");
    evil["system"]["os"]["hostname"] = json!(EVIL_HOST);
    evil["benchmarks"][0]["spec"]["id"]["name"] = json!(EVIL_NAME);
    evil["benchmarks"][0]["metrics"][0]["tags"]["note"] = json!(EVIL_TAG);
    let f = dir.join("evil.json");
    std::fs::write(&f, evil.to_string()).unwrap();
    let mut files = files;
    files.push(f);
    files
}

/// A real llm_serve sweep (concurrency 1, 2, 8) against a scripted server
/// holding two completions at a time, exported: its run view draws
/// latency against throughput with the knee at 2.
fn serving_export(dir: &Path) -> PathBuf {
    use std::time::Duration;
    use warpt_serving::scripted::{Script, Scripted};
    let server = Scripted::start(Script {
        slots: 2,
        ..Script::steady(Duration::from_millis(20), Duration::from_millis(2))
    })
    .unwrap();
    let file = dir.join("serving.json");
    succeeded(
        warpt()
            .args("benchmark run --suite pepbench --benchmark llm_serve".split(' '))
            .args(["--burnin-seconds", "0", "--no-store", "--export-file"])
            .arg(&file)
            .arg("--param")
            .arg(format!("endpoint={}", server.url))
            .args(["--param", "concurrency=1,2,8", "--param", "requests=32"])
            .args(["--param", "output_tokens=6", "--param", "slo_ttft_ms=45"]),
    );
    file
}

/// Starts a cpu_flops run of 0.3 s from the live view (its token already
/// in the tab) and waits for it to finish.
pub(crate) fn live_run(b: &mut Browser, root: &str) {
    b.open(&format!("{root}#/live"), "live");
    b.eval(
        "document.querySelector('input[name=duration]').value = '0.3'; \
         document.querySelector('textarea[name=params]').value = 'threads=1'; \
         document.getElementById('start').click()",
    );
    b.wait("document.getElementById('live-state') && document.getElementById('live-state').textContent === 'finished'");
}

#[test]
fn every_page_renders_in_chromium_without_errors_and_markup_stays_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db");
    record_runs(&store, 1);
    succeeded(
        warpt()
            .args(crate::TINY_RUN)
            .args([
                "--label",
                "bios=1.2",
                "--description",
                "before the BIOS update",
            ])
            .arg("--store")
            .arg(&store),
    );
    let base = exported(dir.path());
    let serving = serving_export(dir.path());
    let serving_id = serde_json::from_str::<Value>(&std::fs::read_to_string(&serving).unwrap())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    succeeded(
        warpt()
            .args(["results", "import"])
            .args(imports(dir.path(), &base))
            .arg(&serving)
            .arg("--store")
            .arg(&store),
    );
    let server = start(dir.path());
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard");
    std::fs::create_dir_all(&shots).unwrap();
    let mut b = Browser::launch(&dir.path().join("profile"));
    let root = format!("http://{}/", server.addr);

    // Runs: every run listed.
    b.open(&format!("{root}#/runs"), "runs");
    assert_eq!(
        b.eval("document.querySelectorAll('#runs-table tbody tr').length"),
        12
    );
    b.screenshot(&shots.join("runs.png"));
    // The labelled run says so, and the label filter finds it alone.
    let table = b.eval("document.querySelector('#runs-table').textContent");
    assert!(
        table
            .as_str()
            .is_some_and(|t| t.contains("bios=1.2 — before the BIOS update")),
        "{table}"
    );
    b.eval(
        "document.querySelector('input[name=label]').value = 'bios=1.2'; \
         document.querySelector('form.filters button[type=submit]').click()",
    );
    b.wait("document.querySelectorAll('#runs-table tbody tr').length === 1");
    b.open(&format!("{root}#/runs"), "runs");
    let ids: Vec<String> = serde_json::from_value(
        b.eval("[...document.querySelectorAll('#runs-table tbody a')].map(a => a.textContent)"),
    )
    .unwrap();
    let real: Vec<&String> = ids
        .iter()
        .filter(|i| !i.starts_with("lab-b") && *i != "evil" && **i != serving_id)
        .collect();
    assert_eq!(real.len(), 2, "{ids:?}");

    // Run detail: results, validation, CI bars, box plots, telemetry.
    b.open(&format!("{root}#/run/{}", real[0]), "run");
    assert_eq!(
        b.eval("document.querySelector('#results-table tbody td:nth-child(2)').textContent"),
        "passed"
    );
    assert!(b.count("svg .whisker") >= 4);
    assert!(b.count("svg .box") >= 1);
    b.screenshot(&shots.join("run.png"));

    // A serving sweep's run: latency against throughput, the SLO, the knee.
    b.open(&format!("{root}#/run/{serving_id}"), "run");
    let titles: Vec<String> = serde_json::from_value(b.eval(
        "[...document.querySelectorAll('figure.chart')].map(f => f.textContent).filter(t => t.includes('against throughput'))",
    ))
    .unwrap();
    assert_eq!(titles.len(), 3, "{titles:?}");
    // The knee on every curve; the SLO line where one was set (TTFT).
    assert!(titles.iter().all(|t| t.contains("knee: ")), "{titles:?}");
    let with_slo: Vec<bool> = titles.iter().map(|t| t.contains("SLO 45")).collect();
    assert_eq!(with_slo, [true, false, false], "{titles:?}");
    b.screenshot(&shots.join("serving.png"));

    // Compare two real runs: verdicts and the speedup chart.
    b.open(
        &format!("{root}#/compare?base={}&current={}", real[1], real[0]),
        "compare",
    );
    b.wait("document.querySelectorAll('#compare-table tbody tr').length > 0");
    let verdicts: Vec<String> = serde_json::from_value(b.eval(
        "[...document.querySelectorAll('#compare-table tbody td:last-child')].map(t => t.textContent)",
    ))
    .unwrap();
    assert!(
        verdicts
            .iter()
            .all(|v| ["improved", "regressed", "~", "inconclusive"].contains(&v.as_str())),
        "{verdicts:?}"
    );
    assert!(b.count("svg .bar") >= 1);
    b.screenshot(&shots.join("compare.png"));

    // Trends: a line per machine, lab-b's step found and marked.
    b.open(
        &format!("{root}#/trends?benchmark=micro/cpu_flops&metric=gflops&tags=precision%3Dfp64"),
        "trends",
    );
    // uPlot's legend: the x series and a line per machine.
    b.wait("document.querySelectorAll('figure.chart .u-legend .u-series').length >= 3");
    b.wait("document.querySelectorAll('#steps-table tbody tr').length >= 1");
    assert!(b.count("figure.chart ul.marks li") >= 1);
    b.screenshot(&shots.join("trends.png"));
    // Hover over the first run: its index and date, each line's value and run id.
    let hover = b.eval(
        "(() => { const u = document.querySelector('figure.chart').uplot; \
         u.setCursor({ left: u.valToPos(u.data[0][0], 'x'), top: 10 }); \
         return [...document.querySelectorAll('figure.chart .u-legend .u-value')] \
           .map(e => e.textContent).join(' | '); })()",
    );
    let hover = hover.as_str().unwrap().to_string();
    assert!(hover.starts_with("#1 20"), "run index and date: {hover}");
    assert!(hover.contains("GFLOP/s (run "), "value and run id: {hover}");
    // Dragging across the plot zooms the x axis; a legend click hides a line.
    // (uPlot draws the selection on the next animation frame: one per event.)
    let zoom = b.eval(
        "(async () => { const f = document.querySelector('figure.chart'), u = f.uplot; \
         const frame = () => new Promise(r => requestAnimationFrame(() => r())); \
         const span = u.scales.x.max - u.scales.x.min; \
         const over = f.querySelector('.u-over'), r = over.getBoundingClientRect(); \
         const ev = (t, x, target) => target.dispatchEvent(new MouseEvent(t, \
           { clientX: r.left + x, clientY: r.top + 20, movementX: 80, bubbles: true, button: 0, buttons: 1 })); \
         ev('mouseenter', 40, over); await frame(); \
         ev('mousedown', 40, over); await frame(); \
         ev('mousemove', 120, over); await frame(); \
         ev('mousemove', 200, over); await frame(); \
         ev('mouseup', 200, document); await frame(); \
         const zoomed = u.scales.x.max - u.scales.x.min; \
         f.querySelectorAll('.u-legend .u-series')[1].querySelector('th').click(); \
         return [span, zoomed, u.series[1].show]; })()",
    );
    let span = zoom[0].as_f64().unwrap();
    let zoomed = zoom[1].as_f64().unwrap();
    assert!(zoomed < span * 0.8, "a drag zooms: {zoom}");
    assert_eq!(
        zoom[2],
        json!(false),
        "a legend click hides the line: {zoom}"
    );
    assert!(
        b.eval("document.querySelector('#steps-table').textContent.includes('lab-b')")
            == json!(true)
    );

    // Machines: heatmap normalised to the best, recommendations with per watt.
    b.open(&format!("{root}#/matrix"), "matrix");
    b.wait("document.querySelectorAll('#heatmap tbody tr').length > 0");
    assert_eq!(
        b.eval("document.querySelectorAll('#heatmap thead th').length"),
        5,
        "workload, unit and three machines"
    );
    assert!(b.eval("[...document.querySelectorAll('#recommendations td')].some(t => t.textContent.endsWith('/W'))") == json!(true));
    b.screenshot(&shots.join("matrix.png"));

    // The markup imported went in as text everywhere it shows.
    b.open(&format!("{root}#/run/evil"), "run");
    let text = b.eval("document.body.innerText");
    let text = text.as_str().unwrap();
    assert!(
        text.contains(EVIL_TAG) && text.contains(EVIL_NAME),
        "{text}"
    );
    b.open(&format!("{root}#/runs"), "runs");
    assert!(
        b.eval("document.body.innerText")
            .as_str()
            .unwrap()
            .contains(EVIL_HOST)
    );
    b.open(&format!("{root}#/matrix"), "matrix");
    b.wait("document.querySelectorAll('#heatmap tbody tr').length > 0");
    assert!(
        b.eval("document.body.innerText")
            .as_str()
            .unwrap()
            .contains(EVIL_NAME)
    );

    // SQL console: the token, a query, rows in the grid (markup as text).
    b.open(&format!("{root}#/sql"), "sql");
    b.eval(&format!(
        "sessionStorage.setItem('warpt-token', '{}')",
        server.token
    ));
    b.eval(&format!(
        "document.getElementById('sql').value = \"SELECT id, '{EVIL_TAG}' AS evil FROM suite_runs ORDER BY id\"; \
         document.getElementById('sql-run').click()"
    ));
    b.wait("document.querySelectorAll('#sql-grid tbody tr').length === 12");
    assert!(
        b.eval("document.querySelector('#sql-grid tbody tr td:nth-child(2)').textContent")
            == json!(EVIL_TAG)
    );
    b.screenshot(&shots.join("sql.png"));
    // CSV download: the file the button makes, captured as it is handed
    // to the browser.
    let csv = b.eval(
        "new Promise(done => { URL.createObjectURL = blob => { blob.text().then(done); return 'about:blank'; }; \
         HTMLAnchorElement.prototype.click = () => {}; \
         [...document.querySelectorAll('button')].find(x => x.textContent === 'Download CSV').click(); })",
    );
    let csv = csv.as_str().unwrap();
    assert!(csv.starts_with("id,evil\r\n"), "{csv}");
    assert_eq!(csv.lines().count(), 13, "{csv}");
    assert!(csv.contains(&format!(",{EVIL_TAG}\r\n")), "{csv}");
    // A write is refused in place.
    b.eval("document.getElementById('sql').value = 'DELETE FROM suite_runs'; document.getElementById('sql-run').click()");
    b.wait("document.getElementById('sql-error')");
    assert_eq!(b.eval("document.querySelectorAll('#sql-error').length"), 1);
    // The browser logs that refusal (403) as a failed load: the one error
    // this test causes on purpose.
    let refused = b.errors.pop().unwrap_or_default();
    assert!(
        refused.contains("403") && refused.contains("/api/v1/query"),
        "{refused}"
    );

    // Live: start a run with the token and follow it to its result.
    live_run(&mut b, &root);
    b.wait("document.querySelectorAll('#live-results tbody tr').length >= 2");
    assert!(b.count("#live-run .uplot") >= 1);
    b.screenshot(&shots.join("live.png"));
    // The live run (monitored) in the run view: telemetry measured.
    let live_id = b.eval("document.querySelector('#live-run h2 a').textContent");
    b.open(&format!("{root}#/run/{}", live_id.as_str().unwrap()), "run");
    assert!(b.count("#telemetry-table tbody tr") >= 1);
    b.screenshot(&shots.join("run-telemetry.png"));

    assert_eq!(b.eval("typeof window.__pwned"), "undefined");
    assert!(b.errors.is_empty(), "{:#?}", b.errors);
}
