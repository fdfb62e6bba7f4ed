// One metric over time, a line per machine (and tag combination), with
// the change points `warpt results trend` finds marked where they step.

import { h, fill, table, field, num, when } from "../dom.js";
import { api, qs, hashParams, setHashParams } from "../api.js";
import { lines } from "../charts.js";

/** A point's hover text: its run and, where known, its 95% CI. */
function ci(pt) {
  const lo = pt.ci95_low ?? (pt.stats && pt.stats.ci95 && pt.stats.ci95[0]);
  const hi = pt.ci95_high ?? (pt.stats && pt.stats.ci95 && pt.stats.ci95[1]);
  return `run ${pt.run_id}${lo !== undefined && lo !== null ? `, 95% CI ${num(lo)}–${num(hi)}` : ""}`;
}

export async function render(main) {
  const p = hashParams();
  const [specs, machines] = await Promise.all([api("benchmarks"), api("machines")]);
  const key = s => `${s.id.suite}/${s.id.name}`;
  const benchSel = h("select", { name: "benchmark" }, specs.map(s =>
    h("option", { value: key(s), selected: p.benchmark === key(s) || p.benchmark === s.id.name && p.suite === s.id.suite }, key(s))));
  const metricSel = h("select", { name: "metric" });
  const fillMetrics = chosen => {
    const spec = specs.find(s => key(s) === benchSel.value);
    fill(metricSel, (spec ? spec.metrics : []).map(m => h("option", { value: m, selected: m === chosen }, m)));
  };
  fillMetrics(p.metric);
  benchSel.addEventListener("change", () => fillMetrics());
  const form = h("form", { class: "filters" },
    field("benchmark", benchSel), field("metric", metricSel),
    field("machine", h("select", { name: "machine" }, h("option", { value: "" }, "all"),
      machines.map(m => h("option", { value: m.fingerprint, selected: p.machine === m.fingerprint }, m.hostname)))),
    field("tags", h("input", { name: "tags", value: p.tags || "", placeholder: "threads=1", size: 14 })),
    field("x axis", h("select", { name: "axis" },
      h("option", { value: "runs", selected: p.axis !== "calendar" }, "runs"),
      h("option", { value: "calendar", selected: p.axis === "calendar" }, "calendar"))),
    field("y axis", h("select", { name: "scale" },
      h("option", { value: "linear", selected: p.scale !== "log" }, "linear"),
      h("option", { value: "log", selected: p.scale === "log" }, "log"))),
    h("button", { type: "submit" }, "Show"));
  const out = h("div");
  async function load() {
    const f = Object.fromEntries(new FormData(form));
    const [suite, name] = (f.benchmark || "/").split("/");
    const query = { suite, benchmark: name, metric: f.metric, machine: f.machine, tags: f.tags };
    setHashParams("trends", { ...f, benchmark: f.benchmark });
    let data;
    try {
      data = await api(`series${qs(query)}`);
    } catch (e) {
      fill(out, h("p", { class: "error" }, e.field ? `${e.field}: ${e.message}` : e.message));
      return;
    }
    const pts = data.points;
    if (!pts.length) {
      fill(out, h("p", { class: "muted" }, "No passed results of this metric yet."));
      return;
    }
    const unit = pts[0].unit;
    const series = data.series.map(se => ({
      name: `${se.hostname}${se.tags ? ` [${se.tags}]` : ""}`,
      points: se.points.map(i => ({ x: Date.parse(pts[i].start_time), y: pts[i].value, title: ci(pts[i]) })),
      marks: se.change_points.map(c => ({ x: Date.parse(c.start_time), label: `${c.change_pct >= 0 ? "+" : ""}${num(c.change_pct)}%` })),
    }));
    const steps = data.series.flatMap(se => se.change_points.map(c => [se.hostname, se.tags, when(c.start_time),
      h("a", { href: `#/run/${encodeURIComponent(c.run_id)}` }, c.run_id), { v: num(c.before), cls: "num" }, { v: num(c.after), cls: "num" },
      { v: `${c.change_pct >= 0 ? "+" : ""}${num(c.change_pct)}%`, cls: "num" }, { v: num(c.p_value), cls: "num" }]));
    fill(out,
      lines(series, `${f.benchmark} ${f.metric} (${pts[0].higher_is_better ? "higher" : "lower"} is better), ${pts.length} runs`, unit,
        { time: true, calendar: f.axis === "calendar", log: f.scale === "log" }),
      h("h2", {}, "Change points"),
      steps.length ? table(["machine", "tags", "at (UTC)", "first run after", { v: "before", cls: "num" }, { v: "after", cls: "num" }, { v: "step", cls: "num" }, { v: "p", cls: "num" }], steps, { id: "steps-table" })
        : h("p", { class: "muted" }, "No change points: the series holds steady within its own noise."));
  }
  form.addEventListener("submit", ev => { ev.preventDefault(); load(); });
  fill(main, h("h1", {}, "Trends"), form, out);
  await load();
}
