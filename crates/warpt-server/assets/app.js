// The dashboard: a hash router over the views. Each view is a module
// exporting `render(main, params)`.

import { h, fill } from "./dom.js";
import * as runs from "./views/runs.js";
import * as run from "./views/run.js";
import * as compare from "./views/compare.js";
import * as trends from "./views/trends.js";
import * as matrix from "./views/matrix.js";
import * as sql from "./views/sql.js";
import * as live from "./views/live.js";

const VIEWS = { runs, run, compare, trends, matrix, sql, live };
let cleanup = null;

async function route() {
  const main = document.getElementById("main");
  const [path] = location.hash.replace(/^#\/?/, "").split("?");
  const [name, ...rest] = path.split("/");
  const view = VIEWS[name || "runs"];
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", a.dataset.view === (name === "run" ? "runs" : name || "runs"));
  }
  if (cleanup) { cleanup(); cleanup = null; }
  if (!view) {
    fill(main, h("p", { class: "error" }, `No page '${name}'.`));
    return;
  }
  fill(main, h("p", { class: "muted" }, "Loading…"));
  try {
    cleanup = (await view.render(main, rest.map(decodeURIComponent))) || null;
  } catch (e) {
    fill(main, h("p", { class: "error" }, e.message || String(e)));
  }
  document.body.dataset.ready = name || "runs";
  // When the first view is on screen (the frame after it was built), in
  // ms since navigation started: what scripts/bench-serve reports.
  if (!document.body.dataset.firstViewMs) {
    requestAnimationFrame(() => requestAnimationFrame(() => {
      document.body.dataset.firstViewMs = performance.now().toFixed(1);
    }));
  }
}

window.addEventListener("hashchange", route);
route();
