// Charts built from data, nothing fetched: bars with 95% CI whiskers and box
// plots as SVG; lines (over time, or against throughput) with uPlot, which
// the page loads from the binary (assets/vendor, MIT licence beside it).

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

/** Lines, drawn by uPlot (vendor/uPlot.iife.min.js, loaded by the page):
 *  series = [{name, points: [{x, y, title}], marks: [{x, label}]}], `x`
 *  numbers (times in ms with opts.time, else values such as throughput).
 *  Hovering shows each series' value and its point's title (run id, CI);
 *  dragging across zooms (double-click resets); a click on a legend entry
 *  hides or shows its series. With opts.time the x axis is the run index
 *  (a history with gaps stays readable; the date shows on hover) unless
 *  opts.calendar asks for dates; opts.log gives a logarithmic y axis. The
 *  marks (change points, knees) are drawn as dashed vertical lines and
 *  listed under the chart. The uPlot instance is the figure's `uplot`. */
export function lines(series, title, unit, opts = {}) {
  const all = series.flatMap(se => se.points);
  if (!all.length) return h("p", { class: "muted" }, "No points yet.");
  const xs = [...new Set(all.map(p => p.x))].sort((a, b) => a - b);
  const index = opts.time && !opts.calendar;
  const at = new Map(xs.map((x, i) => [x, i]));
  const pos = x => index ? at.get(x) : opts.time ? x / 1000 : x;
  const ys = series.map(se => {
    const col = new Array(xs.length).fill(null);
    for (const p of se.points) col[at.get(p.x)] = p.y;
    return col;
  });
  const titles = series.map(se => {
    const col = new Array(xs.length).fill(null);
    for (const p of se.points) col[at.get(p.x)] = p.title || null;
    return col;
  });
  const date = x => new Date(x).toISOString().replace("T", " ").slice(0, 16);
  const fmtx = (u, v, si, i) => {
    if (v === null || v === undefined) return "–";
    if (opts.time) return `${index ? `#${v + 1} ` : ""}${date(xs[index ? v : at.get(v * 1000)] ?? v * 1000)}`;
    return num(v);
  };
  const marks = series.flatMap(se => (se.marks || []).map(m => ({ ...m, series: se.name })));
  const fig = h("figure", { class: "chart" }, title ? h("figcaption", { class: "muted" }, title) : null);
  const host = h("div", { class: "uplot-host" });
  fig.append(host);
  const options = {
    width: opts.width || 900,
    height: opts.height || 300,
    scales: { x: { time: Boolean(opts.time && opts.calendar) }, y: opts.log ? { distr: 3 } : {} },
    axes: [
      index ? { values: (u, vals) => vals.map(v => Number.isInteger(v) ? `#${v + 1}` : "") } : {},
      { label: unit || "", size: 70 },
    ],
    cursor: { drag: { x: true, y: false, setScale: true } },
    series: [
      { label: opts.time ? "run" : (opts.xLabel || "x"), value: fmtx },
      ...series.map((se, i) => ({
        label: se.name,
        stroke: colour(i),
        width: 2,
        spanGaps: true,
        points: { show: se.points.length <= 400, size: 5 },
        value: (u, v, si, idx) => v === null || v === undefined ? "–"
          : `${num(v)}${unit ? ` ${unit}` : ""}${idx !== null && titles[i][idx] ? ` (${titles[i][idx]})` : ""}`,
      })),
    ],
    plugins: [{
      hooks: {
        draw: u => {
          const ctx = u.ctx;
          ctx.save();
          ctx.setLineDash([4, 4]);
          ctx.strokeStyle = "#868e96";
          for (const m of marks) {
            const cx = u.valToPos(pos(m.x), "x", true);
            if (!Number.isFinite(cx)) continue;
            ctx.beginPath();
            ctx.moveTo(cx, u.bbox.top);
            ctx.lineTo(cx, u.bbox.top + u.bbox.height);
            ctx.stroke();
          }
          ctx.restore();
        },
      },
    }],
  };
  const data = [xs.map(pos), ...ys];
  fig.uplot = new uPlot(options, data, host);
  if (marks.length) {
    fig.append(h("ul", { class: "marks muted" }, marks.map(m => h("li", {}, `${m.series}, ${fmtx(null, pos(m.x))}: ${m.label}`))));
  }
  return fig;
}

/** A background colour for a score in [0, 1] (1 = best): red to green. */
export function heat(score) {
  const v = Math.max(0, Math.min(1, score));
  const hue = Math.round(120 * v);
  return `background: hsl(${hue} 60% 80%)`;
}
