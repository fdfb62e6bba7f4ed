// One metric over time, a line per machine, with the change points
// `warpt results trend` finds marked where they step. The metric's headline
// tags (those its latest run reports first) get the large chart; every
// other tag combination a small chart of its own below, so a metric with
// many series reads as small multiples, not one tangle. Opened without a
// choice, it shows the most recently measured machine with a history and
// its first headline figure that has one.

import { h, fill, table, field, num, when, tagLabel } from "../dom.js";
import { api, qs, hashParams, setHashParams } from "../api.js";
import { lines } from "../charts.js";

/** A point's hover text: its run and, where known, its 95% CI. */
function ci(pt) {
  const lo = pt.ci95_low ?? (pt.stats && pt.stats.ci95 && pt.stats.ci95[0]);
  const hi = pt.ci95_high ?? (pt.stats && pt.stats.ci95 && pt.stats.ci95[1]);
  return `run ${pt.run_id}${lo !== undefined && lo !== null ? `, 95% CI ${num(lo)}–${num(hi)}` : ""}`;
}

/** The first view's choice: the most recently measured machine with a
 *  headline figure that has a history (three runs or more), and that
 *  figure; else the latest machine's first figure ({} without runs). */
async function firstLook() {
  const lines = await api("overview");
  const pick = lines.flatMap(m => m.figures.map(f => [m, f])).find(([, f]) => f.runs >= 3)
    || lines.flatMap(m => m.figures.map(f => [m, f]))[0];
  if (!pick) return {};
  const [m, f] = pick;
  return { benchmark: `${f.suite}/${f.benchmark}`, metric: f.metric, machine: m.fingerprint };
}

export async function render(main) {
  const given = hashParams();
  const p = Object.keys(given).length ? given : await firstLook();
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
    const toLines = list => list.map(se => ({
      name: se.hostname,
      points: se.points.map(i => ({ x: Date.parse(pts[i].start_time), y: pts[i].value, title: ci(pts[i]) })),
      marks: se.change_points.map(c => ({ x: Date.parse(c.start_time), label: `${c.change_pct >= 0 ? "+" : ""}${num(c.change_pct)}%` })),
    }));
    // The series by tag combination; the headline one is what the latest
    // run reports first.
    const groups = new Map();
    for (const se of data.series) {
      if (!groups.has(se.tags)) groups.set(se.tags, []);
      groups.get(se.tags).push(se);
    }
    const latest = pts[pts.length - 1].run_id;
    const first = pts.find(pt => pt.run_id === latest);
    const own = Object.entries(first.tags || {}).map(([k, v]) => `${k}=${v}`).join(",");
    const head = groups.has(own) ? own : [...groups.keys()][0];
    const opts = { time: true, calendar: f.axis === "calendar", log: f.scale === "log" };
    const better = `${pts[0].higher_is_better ? "higher" : "lower"} is better`;
    const runs = new Set(pts.map(pt => pt.run_id)).size;
    const others = [...groups.keys()].filter(k => k !== head);
    const steps = data.series.flatMap(se => se.change_points.map(c => [se.hostname, tagLabel(se.tags), when(c.start_time),
      h("a", { href: `#/run/${encodeURIComponent(c.run_id)}` }, c.run_id), { v: num(c.before), cls: "num" }, { v: num(c.after), cls: "num" },
      { v: `${c.change_pct >= 0 ? "+" : ""}${num(c.change_pct)}%`, cls: "num" }, { v: num(c.p_value), cls: "num" }]));
    fill(out,
      lines(toLines(groups.get(head)), `${f.benchmark} ${f.metric}${head ? ` [${tagLabel(head)}]` : ""} (${better}), ${runs} runs`, unit, opts),
      others.length ? [h("h2", {}, `The other series (${others.length})`),
        h("div", { class: "multiples", id: "multiples" }, others.map(k =>
          lines(toLines(groups.get(k)), tagLabel(k) || "(no tags)", unit, { ...opts, width: 420, height: 170 })))] : null,
      h("h2", {}, "Change points"),
      steps.length ? table(["machine", "tags", "at (UTC)", "first run after", { v: "before", cls: "num" }, { v: "after", cls: "num" }, { v: "step", cls: "num" }, { v: "p", cls: "num" }], steps, { id: "steps-table" })
        : h("p", { class: "muted" }, "No change points: the series holds steady within its own noise."));
  }
  form.addEventListener("submit", ev => { ev.preventDefault(); load(); });
  fill(main, h("h1", {}, "Trends"), form, out);
  await load();
}
