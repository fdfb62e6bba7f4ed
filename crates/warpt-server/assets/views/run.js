// One run: what ran where, every result with its validation and quality,
// and charts: medians with 95% CI whiskers, sample distributions as box
// plots, serving sweeps' latency against throughput, and the telemetry
// measured during each benchmark.

import { h, fill, table, num, when, tags } from "../dom.js";
import { api } from "../api.js";
import { bars, boxes, lines } from "../charts.js";

function seconds(r) {
  return (new Date(r.end_time) - new Date(r.start_time)) / 1000;
}

function metricLabel(r, m) {
  const t = tags(m.tags);
  return `${r.spec.id.name} ${m.name}${t ? ` [${t}]` : ""}`;
}

// Serving sweeps (llm_serve at several concurrencies or rates): each
// latency against the requests/s its entry got through, p50 and p99, the
// SLO, and the knee (the entry with the most goodput) marked.
function servingCharts(results) {
  const out = [];
  const idOf = r => `${r.spec.id.suite}/${r.spec.id.name}`;
  const served = results.filter(r => r.spec.id.name === "llm_serve" && r.status === "passed");
  const value = (r, name) => { const m = r.metrics.find(m => m.name === name); return m ? m.value : undefined; };
  for (const id of new Set(served.map(idOf))) {
    const entries = served.filter(r => idOf(r) === id)
      .map(r => ({ r, x: value(r, "requests_per_s") }))
      .filter(e => e.x !== undefined)
      .sort((a, b) => a.x - b.x);
    if (entries.length < 2) continue;
    const params = entries[0].r.params || {};
    const slos = [["ttft_ms", "slo_ttft_ms"], ["tpot_ms", "slo_tpot_ms"], ["request_latency_ms", "slo_latency_ms"]];
    let knee = null;
    if (slos.some(([, k]) => params[k] > 0)) {
      for (const e of entries) {
        const good = value(e.r, "goodput_requests_per_s");
        if (good > 0 && (!knee || good > knee.good)) knee = { x: e.x, good };
      }
    }
    for (const [name, sloKey] of slos) {
      const at = q => entries.map(e => {
        const m = e.r.metrics.find(m => m.name === name);
        return m && m.stats ? { x: e.x, y: m.stats[q], title: `${tags(m.tags)}: ${num(m.stats[q])} ms at ${num(e.x)} requests/s` } : null;
      }).filter(Boolean);
      const p50 = at("p50");
      if (p50.length < 2) continue;
      const series = [
        { name: "p50", points: p50, marks: knee ? [{ x: knee.x, label: `knee: ${num(knee.good)} good requests/s` }] : [] },
        { name: "p99", points: at("p99") },
      ];
      if (params[sloKey] > 0) {
        series.push({ name: `SLO ${num(params[sloKey])}`, points: [{ x: p50[0].x, y: params[sloKey] }, { x: p50[p50.length - 1].x, y: params[sloKey] }] });
      }
      out.push(lines(series, `${id} ${name} against throughput (requests/s)`, "ms", { xLabel: "requests/s", logToggle: true }));
    }
  }
  return out;
}

export async function render(main, [id]) {
  const runData = await api(`runs/${encodeURIComponent(id)}`);
  const results = runData.benchmarks || [];
  const sys = runData.system || {};
  const passed = results.filter(r => r.status === "passed").length;
  const cards = h("div", { class: "cards" },
    h("div", { class: "card" }, "suite", h("b", {}, runData.suite)),
    h("div", { class: "card" }, "started (UTC)", h("b", {}, when(runData.start_time))),
    h("div", { class: "card" }, "machine", h("b", {}, (sys.os && sys.os.hostname) || "–"),
      h("span", { class: "muted" }, (sys.cpu && sys.cpu.model) || "")),
    h("div", { class: "card" }, "passed", h("b", { class: passed === results.length ? "good" : "bad" }, `${passed}/${results.length}`)),
    runData.interrupted ? h("div", { class: "card" }, "state", h("b", { class: "interrupted" }, "interrupted")) : null);
  const rows = results.map(r => [
    r.spec.id.suite + "/" + r.spec.id.name,
    { v: r.status, cls: r.status },
    { v: r.quality || "–", cls: r.quality === "good" ? "good" : "warn", title: (r.quality_reasons || []).join("; ") },
    r.validation ? { v: `${r.validation.passed ? "✓" : "✗"} ${r.validation.message}`, cls: r.validation.passed ? "" : "bad" } : "–",
    { v: num(seconds(r)), cls: "num" },
    r.error_message || (r.warnings || []).join("; ") || "",
  ]);
  const metricRows = results.flatMap(r => r.metrics.map(m => [
    r.spec.id.name, m.name, tags(m.tags), { v: num(m.value), cls: "num" }, m.unit,
    { v: m.stats ? `${num(m.stats.ci95_low)} – ${num(m.stats.ci95_high)}` : "–", cls: "num" },
    { v: m.stats ? m.stats.n : 1, cls: "num" }, m.higher_is_better ? "higher" : "lower",
  ]));
  // One chart per metric name and unit, so bars share a scale.
  const groups = new Map();
  for (const r of results) for (const m of r.metrics) {
    const key = `${m.name} (${m.unit})`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push([r, m]);
  }
  const charts = [];
  for (const [key, list] of groups) {
    charts.push(bars(list.map(([r, m]) => ({ label: metricLabel(r, m), value: m.value,
      lo: m.stats ? m.stats.ci95_low : undefined, hi: m.stats ? m.stats.ci95_high : undefined })),
    `${key}: median, 95% CI whiskers`, list[0][1].unit));
    const withStats = list.filter(([, m]) => m.stats && m.stats.n > 1);
    if (withStats.length) {
      // Each series relative to its own median: the spread is what matters.
      const rel = (m, v) => (v / m.stats.p50 - 1) * 100;
      charts.push(boxes(withStats.map(([r, m]) => ({ label: metricLabel(r, m), min: rel(m, m.stats.min), p25: rel(m, m.stats.p25),
        p50: 0, p75: rel(m, m.stats.p75), max: rel(m, m.stats.max) })), `${key}: spread of the samples around each median (box: p25–p75, whiskers: min–max)`, "% from median"));
    }
  }
  const tel = results.filter(r => r.telemetry);
  const telemetry = tel.length ? [
    table(["benchmark", { v: "samples", cls: "num" }, { v: "CPU %", cls: "num" }, { v: "mean W", cls: "num" },
      { v: "energy J", cls: "num" }, { v: "max °C", cls: "num" }, { v: "min MHz", cls: "num" }, "throttled", "notes"],
    tel.map(r => { const t = r.telemetry; return [r.spec.id.name, { v: t.samples, cls: "num" },
      { v: num(t.mean_cpu_utilization_percent), cls: "num" }, { v: num(t.mean_power_w), cls: "num" },
      { v: num(t.energy_j), cls: "num" }, { v: num(t.max_temp_c), cls: "num" }, { v: num(t.min_freq_mhz), cls: "num" },
      t.throttled ? "yes" : "no", (t.notes || []).join("; ")]; }), { id: "telemetry-table" }),
    tel.some(r => r.telemetry.mean_cpu_utilization_percent !== null && r.telemetry.mean_cpu_utilization_percent !== undefined)
      ? bars(tel.map(r => ({ label: r.spec.id.name, value: r.telemetry.mean_cpu_utilization_percent || 0 })), "CPU utilisation during measurement", "%")
      : null,
  ] : [h("p", { class: "muted" }, "No telemetry: run with --monitor (the live view does) to record it.")];
  fill(main,
    h("h1", {}, "Run ", runData.id),
    cards,
    h("p", {}, h("a", { href: `/api/v1/report/${encodeURIComponent(runData.id)}`, target: "_blank", rel: "noopener" }, "HTML report"),
      " · ", h("a", { href: `/api/v1/runs/${encodeURIComponent(runData.id)}` }, "JSON"),
      " · ", h("a", { href: `#/compare?current=${encodeURIComponent(runData.id)}` }, "compare with…")),
    h("h2", {}, "Results"),
    table(["benchmark", "status", "quality", "validation", { v: "s", cls: "num" }, "notes"], rows, { id: "results-table" }),
    h("h2", {}, "Metrics"),
    table(["benchmark", "metric", "tags", { v: "median", cls: "num" }, "unit", { v: "95% CI", cls: "num" }, { v: "n", cls: "num" }, "better"], metricRows),
    h("h2", {}, "Charts"), charts,
    ...(() => { const c = servingCharts(results); return c.length ? [h("h2", {}, "Latency against throughput"), c] : []; })(),
    h("h2", {}, "Telemetry"), telemetry);
}
