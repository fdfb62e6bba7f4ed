//! The dashboard over `warpt demo`'s history, as a new user first sees it:
//! every page has data, the trend's hover shows value, CI and run, the
//! regression step is found and compared, no chart's category labels
//! overlap (the dashboard's and the HTML report's, full tags on hover),
//! and the screenshots are the docs' (`WARPT_DOCS_IMG=docs/img` writes
//! them there; otherwise to the test's target temp dir, `tour/`).

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::browser::Browser;
use crate::{get, start_on, succeeded, warpt};

/// Category labels of every chart on the page that overlap another or
/// stick out of their chart, and how many labels there are; each label
/// must carry its full text as a hover title.
const LABEL_CHECK: &str = "(() => { const bad = []; let n = 0; \
  for (const svg of document.querySelectorAll('svg')) { \
    const outer = svg.getBoundingClientRect(); \
    const texts = [...svg.querySelectorAll('text.category')]; \
    const boxes = texts.map(t => t.getBoundingClientRect()); n += texts.length; \
    texts.forEach((t, i) => { \
      const a = boxes[i], title = t.querySelector('title'); \
      if (!title || !title.textContent) bad.push(`no title: ${t.textContent}`); \
      if (a.left < outer.left - 1 || a.right > outer.right + 1) bad.push(`outside: ${t.textContent}`); \
      boxes.slice(i + 1).forEach((b, j) => { \
        if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) \
          bad.push(`${t.textContent} overlaps ${texts[i + 1 + j].textContent}`); }); }); } \
  return [n, bad]; })()";

/// Asserts the page's category labels: at least `min`, none overlapping.
fn labels_apart(b: &mut Browser, min: u64, page: &str) {
    let r = b.eval(LABEL_CHECK);
    assert!(r[0].as_u64().unwrap() >= min, "{page}: labels {r}");
    assert_eq!(r[1], json!([]), "{page}: {r}");
}

#[test]
fn the_demo_history_fills_every_page_and_its_charts_explain_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("demo.db");
    let filled: Value = serde_json::from_slice(
        &succeeded(warpt().args(["demo", "--json", "--store"]).arg(&store)).stdout,
    )
    .unwrap();
    let shots = match std::env::var_os("WARPT_DOCS_IMG") {
        Some(d) => crate::common::repo_root().join(d),
        None => PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tour"),
    };
    std::fs::create_dir_all(&shots).unwrap();
    let server = start_on(dir.path(), store.as_os_str());
    let root = format!("http://{}/", server.addr);
    let mut b = Browser::launch(&dir.path().join("profile"));
    let measured: Vec<String> = serde_json::from_value(filled["measured"].clone()).unwrap();
    let (micro, serving) = (&measured[0], &measured[3]);

    // Runs: this machine's and the made-up machines', newest first.
    b.open(&format!("{root}#/runs"), "runs");
    assert!(b.count("#runs-table tbody tr") >= 20);
    let hosts = b.eval("document.querySelector('#runs-table').textContent");
    let hosts = hosts.as_str().unwrap();
    assert!(
        hosts.contains("demo-big") || hosts.contains("demo-small"),
        "{hosts}"
    );
    // It opens on one line per machine: each machine's headline figures
    // with a sparkline of their history, and demo-small's mem_bandwidth
    // step flagged as a regression.
    assert_eq!(b.count("#machines-overview > tbody > tr"), 3);
    assert!(b.count("#machines-overview svg.spark") >= 6);
    let flagged: Vec<String> = serde_json::from_value(b.eval(
        "[...document.querySelectorAll('#machines-overview > tbody > tr')] \
           .filter(r => r.querySelector('td').textContent.includes('demo-small')) \
           .flatMap(r => [...r.querySelectorAll('.figure-line')]) \
           .filter(l => l.querySelector('.flag')).map(l => l.querySelector('.what').textContent)",
    ))
    .unwrap();
    assert!(
        flagged.iter().any(|w| w.starts_with("mem_bandwidth ")),
        "{flagged:?}"
    );
    b.screenshot(&shots.join("serve-runs.png"));
    b.screenshot_at(
        &shots.join("serve-overview.png"),
        "#machines-overview",
        1200.0,
    );

    // The micro run: results, CI bars and boxes with labels apart, telemetry.
    b.open(&format!("{root}#/run/{micro}"), "run");
    assert!(b.count("#results-table tbody tr") >= 7);
    // The thread sweep over cpu_flops's own `threads` series reads as one
    // label saying what was varied.
    let results = b.eval("document.querySelector('main').textContent");
    let results = results.as_str().unwrap();
    assert!(
        results.contains("threads=all (swept: 1)") && !results.contains("param.threads"),
        "{results}"
    );
    assert!(b.count("svg .whisker") >= 4);
    assert!(b.count("#telemetry-table tbody tr") >= 1);
    labels_apart(&mut b, 7, "run");
    b.screenshot_at(&shots.join("serve-run.png"), "main", 900.0);
    b.screenshot_at(&shots.join("serve-run-charts.png"), "figure.chart", 900.0);
    b.screenshot_at(
        &shots.join("serve-run-telemetry.png"),
        "#telemetry-table",
        700.0,
    );

    // The serving sweep: latency against throughput with its knee.
    b.open(&format!("{root}#/run/{serving}"), "run");
    assert!(
        b.eval("[...document.querySelectorAll('figure.chart')].some(f => f.textContent.includes('knee: '))")
            == json!(true)
    );
    // Its latency axis switches to log (p99 sits far above p50).
    let distr = b.eval(
        "(() => { const f = [...document.querySelectorAll('figure.chart')].find(f => f.textContent.includes('knee: ')); \
         const box = f.querySelector('.log-toggle input'); box.click(); \
         return [f.uplot.scales.y.distr, f.querySelectorAll('.uplot').length]; })()",
    );
    assert_eq!(distr, json!([3, 1]), "log y axis, one chart");
    b.screenshot(&shots.join("serve-serving.png"));

    // Trends: STREAM triad on two threads, a line per machine; demo-small's
    // step found; hover gives the run's index and date, each value with
    // its CI and run id.
    let trend = "benchmark=micro/mem_bandwidth&metric=bandwidth&tags=kernel%3Dtriad%2Cthreads%3D2";
    b.open(&format!("{root}#/trends?{trend}"), "trends");
    b.wait("document.querySelectorAll('figure.chart .u-legend .u-series').length === 4");
    b.wait("document.querySelectorAll('#steps-table tbody tr').length === 1");
    assert!(
        b.eval("document.querySelector('#steps-table').textContent.includes('demo-small')")
            == json!(true)
    );
    let hover = b.eval(
        "(() => { const u = document.querySelector('figure.chart').uplot; \
         u.setCursor({ left: u.valToPos(u.data[0][u.data[0].length - 1], 'x'), top: 10 }); \
         return [...document.querySelectorAll('figure.chart .u-legend .u-value')] \
           .map(e => e.textContent).join(' | '); })()",
    );
    let hover = hover.as_str().unwrap();
    assert!(
        hover.contains("GB/s (run ") && hover.contains("95% CI "),
        "{hover}"
    );
    b.screenshot(&shots.join("serve-trends.png"));
    // The calendar axis shows demo-big's eleven-day gap.
    b.open(&format!("{root}#/trends?{trend}&axis=calendar"), "trends");
    b.wait(
        "document.querySelector('figure.chart') && document.querySelector('figure.chart').uplot",
    );
    assert_eq!(
        b.eval("document.querySelector('figure.chart').uplot.scales.x.time"),
        json!(true)
    );
    b.screenshot(&shots.join("serve-trends-calendar.png"));

    // Opened bare, Trends shows one machine (the most recently measured
    // with a history: demo-small, as this machine has one run of each) and
    // its first headline figure with a history: one line of its runs.
    b.open(&format!("{root}#/trends"), "trends");
    b.wait(
        "document.querySelector('figure.chart') && document.querySelector('figure.chart').uplot",
    );
    assert_ne!(
        b.eval("document.querySelector('select[name=machine]').value"),
        json!("")
    );
    assert_eq!(
        b.eval("document.querySelector('figure.chart').uplot.series.length"),
        json!(2),
        "the run axis and one line"
    );
    assert_eq!(
        b.eval("document.querySelector('select[name=machine]').selectedOptions[0].textContent"),
        json!("demo-small")
    );
    assert!(
        b.eval("document.querySelector('figure.chart').uplot.data[0].length")
            .as_u64()
            .unwrap()
            >= 3
    );
    b.screenshot(&shots.join("serve-trends-first.png"));
    // cpu_flops on one machine: fp64 and fp32 at each thread count, each
    // combination its own small chart beside the headline one.
    let (_, machines) = get(&server, "/api/v1/machines");
    let big = machines
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["hostname"] == "demo-big")
        .unwrap()["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    let cpu = format!("benchmark=micro/cpu_flops&metric=gflops&machine={big}");
    b.open(&format!("{root}#/trends?{cpu}"), "trends");
    b.wait("document.querySelectorAll('#multiples figure.chart').length >= 3");
    assert!(
        b.eval("[...document.querySelectorAll('#multiples figure.chart')].every(f => f.uplot.series.length === 2)")
            == json!(true)
    );
    b.screenshot(&shots.join("serve-trends-multiples.png"));

    // Opened bare, Compare picks the latest run that has an earlier one on
    // the same machine and suite, and that one.
    b.open(&format!("{root}#/compare"), "compare");
    b.wait("document.querySelectorAll('#compare-table tbody tr').length > 0");
    let picked: Vec<String> = serde_json::from_value(
        b.eval("['base', 'current'].map(n => document.querySelector(`select[name=${n}]`).value)"),
    )
    .unwrap();
    let (_, runs) = get(&server, "/api/v1/runs?limit=200");
    let runs = runs["runs"].as_array().unwrap();
    let runs: Vec<&Value> = runs.iter().filter(|r| r["kind"] != "stress").collect();
    let same = |a: &Value, b: &Value| a["machine"] == b["machine"] && a["suite"] == b["suite"];
    let want = runs
        .iter()
        .enumerate()
        .find_map(|(i, c)| {
            let b = runs[i + 1..].iter().find(|b| same(b, c))?;
            Some(vec![
                b["id"].as_str().unwrap().to_string(),
                c["id"].as_str().unwrap().to_string(),
            ])
        })
        .unwrap();
    assert_eq!(picked, want);

    // Compare demo-small's last run before the step with the first after:
    // mem_bandwidth about 22% down, cpu_flops within the jitter. (Whether
    // that is `regressed` depends on the machine's noise, which a debug
    // build's unreliable runs cannot tell.)
    let (status, series) = get(
        &server,
        "/api/v1/series?benchmark=mem_bandwidth&metric=bandwidth&tags=kernel%3Dtriad,threads%3D2&machine=demo-small",
    );
    assert_eq!(status, 200, "{series}");
    let step = &series["series"][0]["change_points"][0];
    let index = step["index"].as_u64().unwrap() as usize;
    let points = &series["points"];
    let (before, after) = (
        points[index - 1]["run_id"].as_str().unwrap(),
        points[index]["run_id"].as_str().unwrap(),
    );
    let (status, cmp) = get(
        &server,
        &format!("/api/v1/compare?base={before}&current={after}"),
    );
    assert_eq!(status, 200, "{cmp}");
    let metrics = cmp["metrics"].as_array().unwrap();
    for m in metrics {
        let change = m["change_pct"].as_f64().unwrap();
        match m["benchmark"].as_str().unwrap() {
            "mem_bandwidth" => {
                assert!((-26.0..-18.0).contains(&change), "{m}");
                assert!(
                    ["regressed", "inconclusive"].contains(&m["verdict"].as_str().unwrap()),
                    "{m}"
                );
            }
            "cpu_flops" => assert!(change.abs() < 6.0, "{m}"),
            _ => {}
        }
    }
    b.open(
        &format!("{root}#/compare?base={before}&current={after}"),
        "compare",
    );
    b.wait("document.querySelectorAll('#compare-table tbody tr').length > 0");
    assert_eq!(b.count("#compare-table tbody tr"), metrics.len() as u64);
    labels_apart(&mut b, 1, "compare");
    b.screenshot_at(&shots.join("serve-compare.png"), "main", 1000.0);

    // Machines: three, side by side.
    b.open(&format!("{root}#/matrix"), "matrix");
    b.wait("document.querySelectorAll('#heatmap tbody tr').length > 0");
    assert_eq!(
        b.eval("document.querySelectorAll('#heatmap thead th').length"),
        5,
        "workload, unit and three machines"
    );
    b.screenshot_at(&shots.join("serve-matrix.png"), "main", 900.0);

    // SQL: the runs per machine.
    b.open(&format!("{root}#/sql"), "sql");
    b.eval(&format!(
        "sessionStorage.setItem('warpt-token', '{}')",
        server.token
    ));
    b.eval(
        "document.getElementById('sql').value = 'SELECT m.hostname, count(*) AS runs, min(s.start_time) AS first, max(s.start_time) AS last \
         FROM suite_runs s JOIN machines m ON m.id = s.machine_id GROUP BY m.hostname ORDER BY runs'; \
         document.getElementById('sql-run').click()",
    );
    b.wait("document.querySelectorAll('#sql-grid tbody tr').length === 3");
    b.screenshot(&shots.join("serve-sql.png"));

    // Live: a run started from the page, followed to its result.
    crate::dashboard::live_run(&mut b, &root);
    b.screenshot(&shots.join("serve-live.png"));

    // The HTML report of the micro run: cpu_flops' and gemm's many series
    // labelled apart, the full tags on hover.
    let report = dir.path().join("micro.html");
    succeeded(
        warpt()
            .args(["report", micro, "--format", "html", "--store"])
            .arg(&store)
            .arg("-o")
            .arg(&report),
    );
    b.call(
        "Page.navigate",
        json!({"url": format!("file://{}", report.display())}),
    );
    b.wait("document.readyState === 'complete' && document.querySelectorAll('svg text.category').length > 0");
    labels_apart(&mut b, 10, "HTML report");
    let titles =
        b.eval("[...document.querySelectorAll('svg text.category title')].map(t => t.textContent)");
    assert!(
        titles
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t.as_str().unwrap().contains("precision=")),
        "{titles}"
    );
    // Its line charts (the latency ladder over working sets, telemetry)
    // redrawn with the inlined uPlot: the SVG hidden, hover gives values.
    let live = b.eval(
        "(() => { const figs = [...document.querySelectorAll('[data-chart]')]; \
         const f = figs.find(f => f.textContent.includes('size_kib')); \
         const u = f.uplot; u.setCursor({ left: u.valToPos(u.data[0][2], 'x'), top: 10 }); \
         return [figs.length, figs.filter(f => f.uplot && getComputedStyle(f.querySelector('svg')).display === 'none').length, \
           u.scales.x.distr, [...f.querySelectorAll('.u-legend .u-value')].map(e => e.textContent).join(' | ')]; })()",
    );
    let figures = live[0].as_u64().unwrap();
    assert!(figures >= 2, "{live}");
    assert_eq!(live[1].as_u64().unwrap(), figures, "{live}");
    assert_eq!(live[2], 3, "the working sets on a log axis: {live}");
    assert!(live[3].as_str().unwrap().contains(" ns"), "{live}");
    b.screenshot_at(&shots.join("report-html.png"), "h2:nth-of-type(3)", 1000.0);
    assert!(b.errors.is_empty(), "{:#?}", b.errors);
}
