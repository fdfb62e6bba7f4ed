// Charts built from data, nothing fetched: bars with 95% CI whiskers and box
// plots as SVG; lines (over time, or against throughput) with uPlot through
// lines.js, which the page loads from the binary (vendor/, MIT licence
// beside it).

import { h, s, num } from "./dom.js";

const PALETTE = ["#2f6fde", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#1098ad", "#5c940d", "#e67700"];

/** The i-th series colour. */
export function colour(i) { return PALETTE[i % PALETTE.length]; }

function scale(lo, hi, a, b) {
  const span = hi - lo || 1;
  return v => a + ((v - lo) / span) * (b - a);
}

/** Width of the label column for these labels (about 6.5 px a character). */
function labelWidth(items) {
  return Math.min(460, Math.max(100, 14 + 6.5 * Math.max(...items.map(i => String(i.label).length))));
}

/** A category label at the left of a row, cut to fit `width` px (an
 *  ellipsis says so) with its full text as the hover title. */
function rowLabel(label, width, attrs) {
  const t = String(label), room = Math.max(4, Math.floor((width - 10) / 6.5));
  const shown = t.length > room ? `${t.slice(0, room - 1)}…` : t;
  return s("text", { ...attrs, class: "category", "text-anchor": "end" }, s("title", {}, t), shown);
}

function frame(width, height, title, ...children) {
  return h("figure", { class: "chart" },
    title ? h("figcaption", { class: "muted" }, title) : null,
    s("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img" }, ...children));
}

/** Horizontal bars from 0 with whiskers at [lo, hi]:
 *  items = [{label, value, lo, hi}]. */
export function bars(items, title, unit) {
  const label = labelWidth(items), w = label + 520, row = 22, top = 6, height = top + items.length * row + 24;
  const max = Math.max(...items.map(i => Math.max(i.value, i.hi ?? i.value)), 0) * 1.05 || 1;
  const x = scale(0, max, label, w - 60);
  const kids = [s("line", { class: "axis", x1: label, y1: top, x2: label, y2: height - 20 })];
  items.forEach((it, i) => {
    const y = top + i * row;
    kids.push(rowLabel(it.label, label, { x: label - 6, y: y + 14 }));
    kids.push(s("rect", { class: "bar", x: label, y: y + 3, width: Math.max(1, x(it.value) - label), height: row - 8 },
      s("title", {}, `${it.label}: ${num(it.value)} ${unit || ""}`)));
    if (it.lo !== undefined && it.hi !== undefined && it.lo !== null && it.hi !== null) {
      const ym = y + row / 2 - 1;
      kids.push(s("line", { class: "whisker", x1: x(it.lo), y1: ym, x2: x(it.hi), y2: ym }));
      kids.push(s("line", { class: "whisker", x1: x(it.lo), y1: ym - 5, x2: x(it.lo), y2: ym + 5 }));
      kids.push(s("line", { class: "whisker", x1: x(it.hi), y1: ym - 5, x2: x(it.hi), y2: ym + 5 }));
    }
    kids.push(s("text", { x: x(Math.max(it.value, it.hi ?? 0)) + 6, y: y + 14 }, num(it.value)));
  });
  kids.push(s("text", { x: w - 60, y: height - 6, "text-anchor": "end", class: "muted" }, unit || ""));
  return frame(w, height, title, ...kids);
}

/** Horizontal box plots: items = [{label, min, p25, p50, p75, max}]. */
export function boxes(items, title, unit) {
  const label = labelWidth(items), w = label + 500, row = 26, top = 6, height = top + items.length * row + 24;
  const lo = Math.min(...items.map(i => i.min)), hi = Math.max(...items.map(i => i.max));
  const pad = (hi - lo) * 0.05 || Math.abs(hi) * 0.05 || 1;
  const x = scale(lo - pad, hi + pad, label, w - 20);
  const kids = [];
  items.forEach((it, i) => {
    const y = top + i * row, ym = y + row / 2;
    kids.push(rowLabel(it.label, label, { x: label - 6, y: ym + 4 }));
    kids.push(s("line", { class: "whisker", x1: x(it.min), y1: ym, x2: x(it.p25), y2: ym }));
    kids.push(s("line", { class: "whisker", x1: x(it.p75), y1: ym, x2: x(it.max), y2: ym }));
    kids.push(s("rect", { class: "box", x: x(it.p25), y: y + 4, width: Math.max(1, x(it.p75) - x(it.p25)), height: row - 8 },
      s("title", {}, `${it.label}: min ${num(it.min)}, p25 ${num(it.p25)}, median ${num(it.p50)}, p75 ${num(it.p75)}, max ${num(it.max)} ${unit || ""}`)));
    kids.push(s("line", { class: "median", x1: x(it.p50), y1: y + 4, x2: x(it.p50), y2: y + row - 4 }));
  });
  kids.push(s("text", { x: label, y: height - 6 }, num(lo)));
  kids.push(s("text", { x: w - 20, y: height - 6, "text-anchor": "end" }, `${num(hi)} ${unit || ""}`));
  return frame(w, height, title, ...kids);
}

/** Lines, drawn by uPlot through `warpt.lines` (lines.js, shared with the
 *  HTML report; see there for `series` and `opts`) in a figure with its
 *  title; the uPlot instance is the figure's `uplot`. */
export function lines(series, title, unit, opts = {}) {
  if (!series.some(se => se.points.length)) return h("p", { class: "muted" }, "No points yet.");
  const fig = h("figure", { class: "chart" }, title ? h("figcaption", { class: "muted" }, title) : null);
  window.warpt.lines(fig, series, { ...opts, unit });
  return fig;
}

/** A sparkline of `values` (oldest first), the last point marked; `bad`
 *  draws it in the regression colour. Its title says what it holds. */
export function spark(values, title, bad) {
  const w = 96, ht = 22, pad = 2;
  if (values.length < 2) return h("span", { class: "muted", title }, values.length ? "1 run" : "–");
  const lo = Math.min(...values), hi = Math.max(...values);
  const x = scale(0, values.length - 1, pad, w - pad);
  const y = scale(lo, hi === lo ? lo + 1 : hi, ht - pad, pad);
  const pts = values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
  const last = values.length - 1;
  return s("svg", { class: `spark${bad ? " bad" : ""}`, viewBox: `0 0 ${w} ${ht}`, width: w, height: ht, role: "img" },
    s("title", {}, title),
    s("polyline", { points: pts }),
    s("circle", { cx: x(last), cy: y(values[last]), r: 2 }));
}

/** A background colour for a score in [0, 1] (1 = best): red to green. */
export function heat(score) {
  const v = Math.max(0, Math.min(1, score));
  const hue = Math.round(120 * v);
  return `background: hsl(${hue} 60% 80%)`;
}
