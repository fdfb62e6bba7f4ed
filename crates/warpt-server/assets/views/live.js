// The live view: start a run (with the token), then follow it over the
// WebSocket: queue position, stage, progress, samples as they arrive,
// telemetry, each benchmark's result, the end.

import { h, fill, table, field, num } from "../dom.js";
import { api, hashParams, setHashParams, token } from "../api.js";
import { lines } from "../charts.js";
import { tokenField } from "./token.js";

function plan(form) {
  const f = Object.fromEntries(new FormData(form));
  const body = {};
  if (f.suite) body.suite = f.suite;
  const benches = (f.benchmarks || "").split(",").map(s => s.trim()).filter(Boolean);
  if (benches.length) body.benchmarks = benches;
  if (f.duration) body.duration = Number(f.duration);
  if (f.burnin !== "") body.burnin_seconds = Number(f.burnin);
  const params = {};
  for (const line of (f.params || "").split("\n").map(s => s.trim()).filter(Boolean)) {
    const i = line.indexOf("=");
    if (i < 1) throw new Error(`parameter '${line}' is not KEY=VALUE`);
    params[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  if (Object.keys(params).length) body.params = params;
  return body;
}

export async function render(main) {
  const specs = await api("benchmarks");
  const suites = [...new Set(specs.map(s => s.id.suite))].sort();
  const p = hashParams();
  const form = h("form", { class: "filters" },
    tokenField(),
    field("suite", h("select", { name: "suite" }, suites.map(s => h("option", { value: s, selected: s === "micro" }, s)))),
    field("benchmarks (comma-separated)", h("input", { name: "benchmarks", value: "cpu_flops", size: 18 })),
    field("duration s", h("input", { name: "duration", type: "number", step: "0.1", min: "0.1", value: "1", size: 5 })),
    field("burn-in s", h("input", { name: "burnin", type: "number", step: "0.1", min: "0", value: "0", size: 5 })),
    field("params (KEY=VALUE per line)", h("textarea", { name: "params", rows: 2, style: "min-height:2.4rem;width:14rem" })),
    h("button", { type: "submit", id: "start" }, "Start run"));
  const formError = h("p", { class: "error", id: "live-error" });
  const queueBox = h("div");
  const view = h("div", { id: "live-run" });
  let socket = null;

  async function refreshQueue() {
    try {
      const q = await api("queue");
      fill(queueBox, q.runs.length ? table(["position", "run", "state", "submitted", ""], q.runs.map(r => [
        { v: r.position === 0 ? "running" : String(r.position), cls: "num" },
        h("a", { href: `#/live?id=${encodeURIComponent(r.id)}` }, r.id), r.state, r.submitted_at.slice(0, 19),
        h("button", { class: "secondary", onclick: async () => {
          try { await api(`runs/${encodeURIComponent(r.id)}`, { method: "DELETE", auth: true }); refreshQueue(); }
          catch (e) { formError.textContent = e.message; }
        } }, "Cancel")]), { id: "queue-table" }) : h("p", { class: "muted" }, "Nothing queued or running."));
    } catch (e) { fill(queueBox, h("p", { class: "error" }, e.message)); }
  }

  function follow(id) {
    if (socket) socket.close();
    setHashParams("live", { id });
    const state = h("b", { id: "live-state" }, "connecting");
    const stage = h("span", {}, "");
    const bar = h("div");
    const tel = h("span", { class: "muted" }, "");
    const chart = h("div");
    const results = h("div");
    const log = h("div", { class: "log" });
    const series = new Map();
    let dirty = false;
    fill(view, h("h2", {}, "Run ", h("a", { href: `#/run/${encodeURIComponent(id)}` }, id)),
      h("p", {}, state, " · ", stage), h("div", { class: "progress" }, bar), h("p", {}, tel), chart, results, h("h2", {}, "Events"), log);
    const resultRows = [];
    const redraw = setInterval(() => {
      if (!dirty) return;
      dirty = false;
      fill(chart, lines([...series.values()].map(se => ({ name: se.name, points: se.values.map((y, x) => ({ x, y })) })), "samples as they arrive", ""));
    }, 400);
    // A browser cannot set a WebSocket's headers: the token (needed under
    // --token-for-reads) rides in the query.
    const auth = token() ? `?token=${encodeURIComponent(token())}` : "";
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/v1/runs/${encodeURIComponent(id)}/events${auth}`;
    socket = new WebSocket(url);
    socket.onmessage = msg => {
      const e = JSON.parse(msg.data);
      if (e.type !== "sample" && e.type !== "telemetry") {
        log.append(h("div", {}, `${e.type}${e.benchmark ? ` ${e.benchmark}` : ""}${e.stage ? ` ${e.stage}` : ""}${e.state ? ` ${e.state}` : ""}${e.message ? `: ${e.message}` : ""}`));
        while (log.childNodes.length > 300) log.firstChild.remove();
      }
      switch (e.type) {
        case "queued": state.textContent = `queued (position ${e.position})`; break;
        case "run_started": state.textContent = "running"; break;
        case "benchmark_started": stage.textContent = `${e.benchmark} (${e.index + 1}/${e.total})`; bar.style.width = "0"; break;
        case "stage": stage.textContent = `${e.benchmark}: ${e.stage}`; break;
        case "progress": bar.style.width = `${Math.round(100 * Math.min(1, e.fraction))}%`; break;
        case "series_started": series.set(`${e.benchmark}#${e.key}`, { name: `${e.benchmark.split("/")[1]} ${e.def.name || ""} ${Object.entries(e.def.tags || {}).map(([k, v]) => `${k}=${v}`).join(",")}`.trim(), values: [] }); break;
        case "sample": { const se = series.get(`${e.benchmark}#${e.key}`); if (se) { se.values.push(e.value); dirty = true; } break; }
        case "telemetry": { const t = e.sample; tel.textContent = `CPU ${num(t.cpu_utilization_percent)}% · memory ${num(t.memory_utilization_percent)}%${t.package_power_w ? ` · ${num(t.package_power_w)} W` : ""}`; break; }
        case "result": {
          const r = e.result;
          for (const m of r.metrics) resultRows.push([e.benchmark, { v: r.status, cls: r.status }, m.name,
            Object.entries(m.tags || {}).map(([k, v]) => `${k}=${v}`).join(","), { v: num(m.value), cls: "num" }, m.unit,
            r.validation ? (r.validation.passed ? "✓ " : "✗ ") + r.validation.message : "–"]);
          if (!r.metrics.length) resultRows.push([e.benchmark, { v: r.status, cls: r.status }, "–", "", "", "", r.error_message || ""]);
          fill(results, h("h2", {}, "Results"), table(["benchmark", "status", "metric", "tags", { v: "median", cls: "num" }, "unit", "validation"], resultRows, { id: "live-results" }));
          break;
        }
        case "run_finished": state.textContent = e.state; state.className = e.state; bar.style.width = "100%"; dirty = true; refreshQueue(); break;
        default: break;
      }
    };
    socket.onclose = () => { clearInterval(redraw); if (state.textContent === "connecting") state.textContent = "no such run"; };
  }

  form.addEventListener("submit", async ev => {
    ev.preventDefault();
    formError.textContent = "";
    try {
      const res = await api("runs", { body: plan(form), auth: true });
      follow(res.id);
      refreshQueue();
    } catch (e) {
      formError.textContent = e.status === 401 ? "Give the token (from the token file named when warpt serve started)." : (e.field && e.field !== "body" ? `${e.field}: ${e.message}` : e.message);
    }
  });
  fill(main, h("h1", {}, "Live"), form, formError, h("h2", {}, "Queue"), queueBox, view);
  await refreshQueue();
  if (p.id) follow(p.id);
  const timer = setInterval(refreshQueue, 3000);
  return () => { clearInterval(timer); if (socket) socket.close(); };
}
