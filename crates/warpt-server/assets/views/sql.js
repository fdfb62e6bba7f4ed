// The SQL console: read-only queries against the store (the server caps
// rows and time), results in a grid, CSV download, errors in place.

import { h, fill, table } from "../dom.js";
import { api, hashParams, setHashParams } from "../api.js";
import { tokenField } from "./token.js";

// The ML results with the model's facts as columns (the model_results view,
// docs/store.md); the same SQL on SQLite and PostgreSQL.
const EXAMPLE = `SELECT model, family, precision, batch, sequence_length, metric, unit,
  count(*) AS runs, round(CAST(avg(value) AS NUMERIC), 3) AS mean
FROM model_results WHERE status = 'passed'
GROUP BY model, family, precision, batch, sequence_length, metric, unit
ORDER BY model, metric LIMIT 50`;

function csvCell(v) {
  const t = v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v);
  return /[",\n\r]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
}

export async function render(main) {
  const p = hashParams();
  const editor = h("textarea", { id: "sql", spellcheck: "false", "aria-label": "SQL" });
  editor.value = p.sql || EXAMPLE;
  const out = h("div", { id: "sql-result" });
  let last = null;
  const download = h("button", { class: "secondary", disabled: true, onclick: () => {
    if (!last) return;
    const text = [last.columns, ...last.rows].map(r => r.map(csvCell).join(",")).join("\r\n") + "\r\n";
    const a = h("a", { href: URL.createObjectURL(new Blob([text], { type: "text/csv" })), download: "warpt-query.csv" });
    document.body.append(a); a.click(); a.remove();
  } }, "Download CSV");
  async function run() {
    setHashParams("sql", { sql: editor.value });
    fill(out, h("p", { class: "muted" }, "Running…"));
    const started = performance.now();
    try {
      last = await api("query", { body: { sql: editor.value }, auth: true });
    } catch (e) {
      last = null;
      download.disabled = true;
      fill(out, h("p", { class: "error", id: "sql-error" }, e.status === 401 ? "Give the token (from the token file named when warpt serve started)." : e.message));
      return;
    }
    download.disabled = false;
    const ms = performance.now() - started;
    fill(out,
      h("p", { class: "muted" }, `${last.rows.length} row(s) in ${ms.toFixed(0)} ms${last.truncated ? " (truncated at the row cap)" : ""}`),
      h("div", { class: "grid" }, table(last.columns, last.rows.map(r => r.map(v =>
        v === null ? { v: "NULL", cls: "muted" } : typeof v === "number" ? { v: String(v), cls: "num" } : (typeof v === "object" ? JSON.stringify(v) : String(v)))), { id: "sql-grid" })));
  }
  editor.addEventListener("keydown", ev => { if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); run(); } });
  fill(main, h("h1", {}, "SQL"),
    h("p", { class: "muted" }, "Read-only SQL over the store (tables: suite_runs, results, metrics, samples, machines, stress_runs, noise_profiles, server_jobs). Ctrl+Enter runs."),
    h("div", { class: "toolbar" }, tokenField()), editor,
    h("div", { class: "toolbar" }, h("button", { id: "sql-run", onclick: run }, "Run"), download), out);
}
