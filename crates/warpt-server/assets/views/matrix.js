// Machines × workloads: each machine's median headline figure normalised
// to the best machine (1 = best), and the machine to pick per workload by
// speed and, where power was measured, by speed per watt.

import { h, fill, table, field, num, tagLabel } from "../dom.js";
import { api, qs, hashParams, setHashParams } from "../api.js";
import { heat } from "../charts.js";

export async function render(main) {
  const p = hashParams();
  const specs = await api("benchmarks");
  const suites = [...new Set(specs.map(s => s.id.suite))].sort();
  const form = h("form", { class: "filters" },
    field("suite", h("select", { name: "suite" }, h("option", { value: "" }, "all"),
      suites.map(s => h("option", { value: s, selected: p.suite === s }, s)))),
    h("button", { type: "submit" }, "Show"));
  const out = h("div");
  async function load() {
    const f = Object.fromEntries(new FormData(form));
    setHashParams("matrix", f);
    const m = await api(`matrix${qs(f)}`);
    if (!m.workloads.length) {
      fill(out, h("p", { class: "muted" }, "No passed results yet."));
      return;
    }
    const label = w => `${w.benchmark} ${w.metric}${w.tags ? ` [${tagLabel(w.tags)}]` : ""}`;
    const heatRows = m.workloads.map(w => [label(w), w.unit,
      ...w.cells.map(c => c ? { v: `${num(c.score)}`, cls: "cell", title: `${num(c.value)} ${w.unit}, ${c.runs} run(s)` } : { v: "–", cls: "cell muted" })]);
    const tbl = table(["workload", "unit", ...m.machines.map(x => x.hostname)], heatRows, { id: "heatmap", class: "heat" });
    // Colour the cells (the table helper sets no style).
    tbl.querySelectorAll("tbody tr").forEach((tr, i) => {
      const w = m.workloads[i];
      [...tr.children].slice(2).forEach((td, j) => { const c = w.cells[j]; if (c) td.style.cssText = heat(c.score); });
    });
    const host = i => (i === null || i === undefined) ? "–" : m.machines[i].hostname;
    const recRows = m.workloads.map(w => {
      const best = w.cells[w.best];
      const pw = w.best_per_watt === null || w.best_per_watt === undefined ? null : w.cells[w.best_per_watt];
      return [label(w), host(w.best), { v: `${num(best.value)} ${w.unit}`, cls: "num" },
        pw ? host(w.best_per_watt) : { v: "no energy measured", cls: "muted" },
        pw ? { v: `${num(pw.per_watt)} ${w.unit}/W`, cls: "num" } : "–"];
    });
    fill(out,
      h("p", { class: "muted" }, "Each cell: the machine's median relative to the best machine for that workload (1 = best; for times, best ÷ value)."),
      tbl,
      h("h2", {}, "Best machine for each workload"),
      table(["workload", "fastest", { v: "its figure", cls: "num" }, "best per watt", { v: "per watt", cls: "num" }], recRows, { id: "recommendations" }));
  }
  form.addEventListener("submit", ev => { ev.preventDefault(); load(); });
  fill(main, h("h1", {}, "Machines"), form, out);
  await load();
}
