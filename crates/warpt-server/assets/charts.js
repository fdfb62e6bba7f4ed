// Charts as SVG built from data (no library, nothing fetched): bars with
// 95% CI whiskers, box plots, lines over time with change points marked.

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
    kids.push(s("text", { x: label - 6, y: y + 14, "text-anchor": "end" }, it.label));
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
    kids.push(s("text", { x: label - 6, y: ym + 4, "text-anchor": "end" }, it.label));
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

/** Lines: series = [{name, points: [{x, y, title}], marks: [{x, label}]}];
 *  `x` numbers (times in ms or indices). */
export function lines(series, title, unit, opts = {}) {
  const w = 900, hgt = 300, l = 70, r = 20, t = 10, b = 40;
  const pts = series.flatMap(se => se.points);
  if (!pts.length) return h("p", { class: "muted" }, "No points yet.");
  const xs = pts.map(p => p.x), ys = pts.map(p => p.y);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  const pad = (y1 - y0) * 0.08 || Math.abs(y1) * 0.05 || 1;
  y0 -= pad; y1 += pad;
  const x = scale(x0, x1 === x0 ? x0 + 1 : x1, l, w - r), y = scale(y0, y1, hgt - b, t);
  const fmtx = opts.time ? v => new Date(v).toISOString().slice(0, 10) : num;
  const kids = [
    s("line", { class: "axis", x1: l, y1: hgt - b, x2: w - r, y2: hgt - b }),
    s("line", { class: "axis", x1: l, y1: t, x2: l, y2: hgt - b }),
    s("text", { x: l - 6, y: t + 10, "text-anchor": "end" }, num(y1)),
    s("text", { x: l - 6, y: hgt - b, "text-anchor": "end" }, num(y0)),
    s("text", { x: l, y: hgt - b + 16 }, fmtx(x0)),
    s("text", { x: w - r, y: hgt - b + 16, "text-anchor": "end" }, fmtx(x1)),
    s("text", { x: 4, y: t + 24, class: "muted" }, unit || ""),
  ];
  series.forEach((se, i) => {
    const c = colour(i);
    const d = se.points.map((p, j) => `${j ? "L" : "M"}${x(p.x).toFixed(1)},${y(p.y).toFixed(1)}`).join("");
    kids.push(s("path", { class: "line", d, stroke: c }));
    if (se.points.length <= 400) {
      for (const p of se.points) kids.push(s("circle", { cx: x(p.x), cy: y(p.y), r: 2.5, fill: c }, s("title", {}, p.title || `${num(p.y)}`)));
    }
    for (const m of se.marks || []) {
      kids.push(s("line", { class: "step", x1: x(m.x), y1: t, x2: x(m.x), y2: hgt - b }, s("title", {}, m.label)));
      kids.push(s("text", { x: x(m.x) + 3, y: t + 12 + 12 * i, fill: c }, m.label));
    }
  });
  const legend = h("div", { class: "muted" }, series.map((se, i) =>
    h("span", { style: `color:${colour(i)};margin-right:1rem` }, "● ", se.name)));
  const fig = frame(w, hgt, title, ...kids);
  fig.append(legend);
  return fig;
}

/** A background colour for a score in [0, 1] (1 = best): red to green. */
export function heat(score) {
  const v = Math.max(0, Math.min(1, score));
  const hue = Math.round(120 * v);
  return `background: hsl(${hue} 60% 80%)`;
}
