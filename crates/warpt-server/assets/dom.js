// Building the page without ever parsing data as HTML: every string from
// the API becomes a text node or an attribute value, so a benchmark name,
// a tag or an SQL result holding `<script>` shows as text.

const SVG = "http://www.w3.org/2000/svg";

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    // Through the CSSOM: the page's CSP refuses style attributes.
    else if (k === "style") el.style.cssText = String(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** An HTML element: h("td", {class: "num"}, "1.5"). */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** An SVG element. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG, tag), attrs, children);
}

/** Replaces the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  return build(el, {}, children);
}

/** A number for people (lines.js's, so charts and tables agree). */
export function num(v) {
  return window.warpt.num(v);
}

/** A timestamp shortened to minutes, in UTC. */
export function when(t) {
  return t ? String(t).replace("T", " ").slice(0, 16) : "–";
}

/** `k=v,...` of a tag map. A swept parameter whose name a metric tag
 *  also has (`param.threads=1` beside cpu_flops's `threads=all`) is one
 *  label: `threads=all (swept: 1)`. */
export function tags(t) {
  const m = t || {};
  return Object.entries(m)
    .filter(([k]) => !(k.startsWith("param.") && k.slice(6) in m))
    .map(([k, v]) => (`param.${k}` in m ? `${k}=${v} (swept: ${m[`param.${k}`]})` : `${k}=${v}`))
    .join(",");
}

/** A tag label as the API writes it (`k=v,k=v`) shown as `tags` shows a map. */
export function tagLabel(label) {
  if (!label) return "";
  return tags(Object.fromEntries(String(label).split(",").map(p => {
    const i = p.indexOf("=");
    return i < 0 ? [p, ""] : [p.slice(0, i), p.slice(i + 1)];
  })));
}

/** A table from column headers and rows of cells (strings, nodes or {v, cls}). */
export function table(headers, rows, attrs) {
  return h("table", attrs,
    h("thead", {}, h("tr", {}, headers.map(c => typeof c === "object" && !(c instanceof Node)
      ? h("th", { class: c.cls }, c.v) : h("th", {}, c)))),
    h("tbody", {}, rows.map(r => h("tr", {}, r.map(c =>
      c !== null && typeof c === "object" && !(c instanceof Node) ? h("td", { class: c.cls, title: c.title }, c.v) : h("td", {}, c))))));
}

/** A labelled form field. */
export function field(label, input) {
  return h("label", {}, label, input);
}
