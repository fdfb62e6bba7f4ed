// The runs page: first one line per machine (its latest run, headline
// figures with their recent history, regressions flagged), then the runs
// table: filters as `warpt results list` takes them, pages of 50, two
// runs picked for the compare view.

import { h, fill, table, field, when, num, tags } from "../dom.js";
import { api, qs, hashParams, setHashParams } from "../api.js";
import { spark } from "../charts.js";

const PAGE = 50;

// A run's labels (`--label`) and description (`--description`), as text.
function about(r) {
  const labels = Object.entries(r.labels || {}).map(([k, v]) => `${k}=${v}`).join(" ");
  return [labels, r.description].filter(Boolean).join(" — ") || "–";
}

/** One headline figure as a row: what, the latest value, its sparkline,
 *  and a flag linking to the trend where its history ends in a regression
 *  step (else a plain link to the trend). */
function figureRow(m, f) {
  const what = `${f.benchmark} ${f.metric}${Object.keys(f.tags).length ? ` [${tags(f.tags)}]` : ""}`;
  const trend = `#/trends${qs({ benchmark: `${f.suite}/${f.benchmark}`, metric: f.metric, machine: m.fingerprint,
    tags: Object.entries(f.tags).map(([k, v]) => `${k}=${v}`).join(",") })}`;
  const r = f.regression;
  return h("tr", { class: "figure-line" },
    h("td", { class: "what" }, what),
    h("td", { class: "num" }, h("b", {}, `${num(f.value)} ${f.unit}`)),
    h("td", {}, spark(f.spark, `${what}: the last ${f.spark.length} of ${f.runs} runs on ${m.hostname} (${f.higher_is_better ? "higher" : "lower"} is better)`, Boolean(r))),
    h("td", {}, r ? h("a", { class: "flag", href: trend, title: `a step of ${num(r.change_pct)}% at run ${r.run_id}` },
      `regressed ${r.change_pct >= 0 ? "+" : ""}${num(r.change_pct)}%`) : h("a", { class: "muted", href: trend }, "trend")));
}

/** The machines' overview table, or nothing without runs. */
async function overview() {
  const lines = await api("overview");
  if (!lines.length) return null;
  const rows = lines.map(m => [
    h("div", {}, h("b", {}, m.hostname), h("div", { class: "muted" }, `${m.cpu_model}, ${m.logical_cores} CPUs`)),
    h("div", {}, h("a", { href: `#/run/${encodeURIComponent(m.latest.id)}` }, m.latest.id),
      h("div", { class: "muted" }, `${m.latest.suite} · ${when(m.latest.start_time)} · ${m.latest.passed}/${m.latest.benchmarks} passed`)),
    h("table", { class: "figures" }, h("tbody", {}, m.figures.map(f => figureRow(m, f)))),
    { v: m.regressions ? `${m.regressions} regressed` : "none", cls: m.regressions ? "bad" : "good" },
  ]);
  return [h("h2", {}, "Machines"),
    table(["machine", "latest run", "headline figures (latest, recent history)", "regressions"], rows, { id: "machines-overview" })];
}

export async function render(main) {
  const p = hashParams();
  const [specs, machines] = await Promise.all([api("benchmarks"), api("machines")]);
  const suites = [...new Set(specs.map(s => s.id.suite))].sort();
  const input = (name, attrs) => h("input", { name, value: p[name] || "", ...attrs });
  const select = (name, options) => h("select", { name },
    h("option", { value: "" }, "any"),
    options.map(([v, label]) => h("option", { value: v, selected: p[name] === v }, label)));
  const form = h("form", { class: "filters" },
    field("suite", select("suite", suites.map(s => [s, s]))),
    field("benchmark", input("benchmark", { placeholder: "e.g. cpu_flops", size: 14 })),
    field("machine", select("machine", machines.map(m => [m.fingerprint, `${m.hostname} (${m.fingerprint.slice(0, 8)})`]))),
    field("since", input("since", { type: "date" })),
    field("until", input("until", { type: "date" })),
    field("label", input("label", { placeholder: "key=value", size: 14 })),
    h("button", { type: "submit" }, "Filter"));
  const out = h("div");
  const picked = new Set();
  const compareBtn = h("button", { class: "secondary", disabled: true, onclick: () => {
    const [a, b] = [...picked];
    location.hash = `#/compare${qs({ base: a, current: b })}`;
  } }, "Compare the two selected");
  let offset = Number(p.offset || 0);

  async function load() {
    const f = Object.fromEntries(new FormData(form));
    setHashParams("runs", { ...f, offset: offset || "" });
    let data;
    try {
      data = await api(`runs${qs({ ...f, limit: PAGE, offset })}`);
    } catch (e) {
      fill(out, h("p", { class: "error" }, e.field ? `${e.field}: ${e.message}` : e.message));
      return;
    }
    const rows = data.runs.map(r => {
      const box = h("input", { type: "checkbox", "aria-label": `select ${r.id}`, onchange: ev => {
        if (ev.target.checked) picked.add(r.id); else picked.delete(r.id);
        compareBtn.disabled = picked.size !== 2;
      } });
      return [box, h("a", { href: `#/run/${encodeURIComponent(r.id)}` }, r.id), r.suite, when(r.start_time),
        r.hostname || "–", { v: `${r.passed}/${r.benchmarks}`, cls: r.passed === r.benchmarks ? "num good" : "num bad" },
        { v: r.trials, cls: "num" }, r.source, about(r)];
    });
    fill(out,
      rows.length ? table(["", "run", "suite", "started (UTC)", "machine", { v: "passed", cls: "num" }, { v: "trials", cls: "num" }, "source", "labels"], rows, { id: "runs-table" })
        : h("p", { class: "muted" }, "No runs match. Record some with `warpt benchmark run`, or start one in Live."),
      h("div", { class: "toolbar" },
        h("button", { class: "secondary", disabled: offset === 0, onclick: () => { offset = Math.max(0, offset - PAGE); load(); } }, "← newer"),
        h("span", { class: "muted" }, `runs ${offset + 1}–${offset + rows.length}`),
        h("button", { class: "secondary", disabled: rows.length < PAGE, onclick: () => { offset += PAGE; load(); } }, "older →"),
        compareBtn));
  }
  form.addEventListener("submit", ev => { ev.preventDefault(); offset = 0; load(); });
  fill(main, h("h1", {}, "Runs"), await overview(), h("h2", {}, "Every run"), form, out);
  await load();
}
