// Any two runs side by side: the verdicts of `warpt benchmark compare`
// (same statistics, same noise bands), and each metric's ratio with its CI.
// Opened without a choice, it compares the latest run that has a
// predecessor on the same machine and suite with that predecessor.

import { h, fill, table, field, num, tags, when } from "../dom.js";
import { api, qs, hashParams, setHashParams } from "../api.js";
import { bars } from "../charts.js";

/** The latest run that has an earlier one of the same machine and suite,
 *  and that earlier one (the list is newest first): what a first look at
 *  Compare shows ({} when no two runs are comparable). */
function latestPair(list) {
  const runs = list.filter(r => r.kind !== "stress");
  for (const [i, current] of runs.entries()) {
    const base = runs.slice(i + 1).find(r => r.machine === current.machine && r.suite === current.suite);
    if (base) return { base: base.id, current: current.id };
  }
  return {};
}

export async function render(main) {
  const list = (await api("runs?limit=200")).runs;
  const given = hashParams();
  const p = given.base || given.current ? given : { ...given, ...latestPair(list) };
  const pick = (name, chosen) => h("select", { name, required: true },
    h("option", { value: "" }, "choose a run"),
    list.map(r => h("option", { value: r.id, selected: r.id === chosen }, `${r.id} · ${r.suite} · ${r.hostname || ""} · ${when(r.start_time)}`)));
  const form = h("form", { class: "filters" },
    field("base", pick("base", p.base)),
    field("current", pick("current", p.current)),
    field("threshold %", h("input", { name: "threshold", type: "number", step: "0.1", min: "0", value: p.threshold || "2", size: 5 })),
    h("button", { type: "submit" }, "Compare"));
  const out = h("div");
  async function load() {
    const f = Object.fromEntries(new FormData(form));
    if (!f.base || !f.current) {
      fill(out, h("p", { class: "muted" }, "Pick a base and a current run."));
      return;
    }
    setHashParams("compare", f);
    let c;
    try {
      c = await api(`compare${qs(f)}`);
    } catch (e) {
      fill(out, h("p", { class: "error" }, e.field ? `${e.field}: ${e.message}` : e.message));
      return;
    }
    const counts = c.counts || {};
    const rows = c.metrics.map(m => [
      `${m.suite}/${m.benchmark}`, m.metric, tags(m.tags),
      { v: num(m.base.median), cls: "num" }, { v: num(m.current.median), cls: "num" }, m.unit,
      { v: `${m.change_pct >= 0 ? "+" : ""}${num(m.change_pct)}%`, cls: "num" },
      { v: m.ratio_ci95 ? `${num(m.ratio_ci95[0])} – ${num(m.ratio_ci95[1])}` : "–", cls: "num" },
      { v: m.q_value === null || m.q_value === undefined ? "–" : num(m.q_value), cls: "num" },
      { v: `±${num(m.band_pct)}%`, cls: "num" },
      { v: m.verdict, cls: m.verdict === "~" ? "" : m.verdict, title: m.reason || "" },
    ]);
    fill(out,
      h("div", { class: "cards" }, Object.entries(counts).map(([k, v]) => h("div", { class: "card" }, k, h("b", { class: k }, v)))),
      table(["benchmark", "metric", "tags", { v: "base", cls: "num" }, { v: "current", cls: "num" }, "unit",
        { v: "change", cls: "num" }, { v: "ratio 95% CI", cls: "num" }, { v: "q", cls: "num" }, { v: "band", cls: "num" }, "verdict"], rows, { id: "compare-table" }),
      c.metrics.length ? bars(c.metrics.map(m => ({ label: `${m.benchmark} ${m.metric} ${tags(m.tags)}`.trim(), value: m.speedup,
        lo: m.ratio_ci95 ? (m.higher_is_better ? m.ratio_ci95[0] : 1 / m.ratio_ci95[1]) : undefined,
        hi: m.ratio_ci95 ? (m.higher_is_better ? m.ratio_ci95[1] : 1 / m.ratio_ci95[0]) : undefined })),
      "speedup of current over base (1 = same; whiskers: 95% CI)", "×") : null,
      (c.only_base.length || c.only_current.length) ? h("p", { class: "muted" },
        `Only in base: ${c.only_base.join(", ") || "none"}. Only in current: ${c.only_current.join(", ") || "none"}.`) : null,
      (c.warnings || []).map(w => h("p", { class: "warn" }, w)));
  }
  form.addEventListener("submit", ev => { ev.preventDefault(); load(); });
  fill(main, h("h1", {}, "Compare two runs"), form, out);
  await load();
}
