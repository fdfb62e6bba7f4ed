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

/** `k=v,...` of a tag map. */
export function tags(t) {
  return Object.entries(t || {}).map(([k, v]) => `${k}=${v}`).join(",");
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
