// Line charts on uPlot (vendor/uPlot.iife.min.js, loaded before this file),
// shared by the dashboard and the self-contained HTML report: hovering
// shows each series' value and its point's title (run id, CI); dragging
// across zooms (double-click resets); a click on a legend entry hides or
// shows its series; marks (change points, knees) are dashed vertical
// lines listed under the chart; a checkbox switches the y axis to log.
// A classic script (the report has no module loader): it defines
// `window.warpt.lines` and `window.warpt.num`. Text from data goes in as
// text, never as HTML.
(function () {
  "use strict";
  const PALETTE = ["#2f6fde", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#1098ad", "#5c940d", "#e67700"];

  /** A number for people: 4 significant digits, no exponent for common sizes. */
  function num(v) {
    if (v === null || v === undefined || Number.isNaN(v)) return "–";
    if (typeof v !== "number") return String(v);
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e9 || a < 1e-3)) return v.toExponential(3);
    return Number(v.toPrecision(4)).toLocaleString("en-US", { maximumFractionDigits: 6 });
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  /** Draws `series` = [{name, points: [{x, y, title}], marks: [{x, label}]}]
   *  into the figure `fig` (after its caption) and returns the uPlot
   *  instance, also kept as `fig.uplot`. `x` are numbers: times in ms with
   *  opts.time (the x axis is then the run index, the date on hover,
   *  unless opts.calendar asks for dates), else values such as throughput.
   *  opts: unit, xLabel, xLog (x axis logarithmic), log (y axis
   *  logarithmic), logToggle (a checkbox for it), marks (the chart's own,
   *  [{x, label}], not a series'), width, height. */
  function lines(fig, series, opts) {
    opts = opts || {};
    const all = series.flatMap(se => se.points);
    const xs = [...new Set(all.map(p => p.x))].sort((a, b) => a - b);
    const index = opts.time && !opts.calendar;
    const at = new Map(xs.map((x, i) => [x, i]));
    const pos = x => index ? at.get(x) : opts.time ? x / 1000 : x;
    const column = f => series.map(se => {
      const col = new Array(xs.length).fill(null);
      for (const p of se.points) col[at.get(p.x)] = f(p);
      return col;
    });
    const ys = column(p => p.y), titles = column(p => p.title || null);
    const unit = opts.unit || "";
    const date = x => new Date(x).toISOString().replace("T", " ").slice(0, 16);
    const fmtx = (u, v) => {
      if (v === null || v === undefined) return "–";
      if (opts.time) return `${index ? `#${v + 1} ` : ""}${date(xs[index ? v : at.get(v * 1000)] ?? v * 1000)}`;
      return num(v);
    };
    const marks = [...series.flatMap(se => (se.marks || []).map(m => ({ ...m, series: se.name }))),
      ...(opts.marks || [])];
    const host = el("div", "uplot-host");
    fig.append(host);
    const options = log => ({
      width: opts.width || 900,
      height: opts.height || 300,
      scales: { x: { time: Boolean(opts.time && opts.calendar), distr: opts.xLog ? 3 : 1 }, y: log ? { distr: 3 } : {} },
      axes: [
        index ? { values: (u, vals) => vals.map(v => Number.isInteger(v) ? `#${v + 1}` : "") } : {},
        { label: unit, size: 70 },
      ],
      cursor: { drag: { x: true, y: false, setScale: true } },
      series: [
        { label: opts.time ? "run" : (opts.xLabel || "x"), value: fmtx },
        ...series.map((se, i) => ({
          label: se.name,
          stroke: PALETTE[i % PALETTE.length],
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
    });
    const data = [xs.map(pos), ...ys];
    // A log axis needs every value > 0.
    const positive = ys.every(col => col.every(v => v === null || v > 0));
    fig.uplot = new uPlot(options(Boolean(opts.log) && positive), data, host);
    if (opts.logToggle && positive) {
      const box = el("input");
      box.type = "checkbox";
      box.checked = Boolean(opts.log);
      box.addEventListener("change", () => {
        fig.uplot.destroy();
        fig.uplot = new uPlot(options(box.checked), data, host);
      });
      const label = el("label", "log-toggle muted");
      label.append(box, " log y axis");
      fig.append(label);
    }
    if (marks.length) {
      const ul = el("ul", "marks muted");
      for (const m of marks) ul.append(el("li", null, `${m.series ? `${m.series}, ` : ""}${fmtx(null, pos(m.x))}: ${m.label}`));
      fig.append(ul);
    }
    return fig.uplot;
  }

  window.warpt = Object.assign(window.warpt || {}, { lines, num });
})();
