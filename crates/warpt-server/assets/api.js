// The API client: JSON in and out, errors as exceptions carrying the
// server's message and the field at fault.

export class ApiError extends Error {
  constructor(status, message, field) {
    super(message);
    this.status = status;
    this.field = field;
  }
}

const TOKEN = "warpt-token";

/** The bearer token the user gave this tab (sessionStorage only). */
export function token() {
  return sessionStorage.getItem(TOKEN) || "";
}

export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN, t.trim());
  else sessionStorage.removeItem(TOKEN);
}

/** GET (or `opts.method`) `/api/v1/<path>`; resolves to the parsed JSON. */
export async function api(path, opts = {}) {
  const headers = { Accept: "application/json" };
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  // Sent on reads too when the tab has one: a server started with
  // --token-for-reads answers nothing without it.
  if (opts.auth || token()) headers.Authorization = `Bearer ${token()}`;
  const res = await fetch(`/api/v1/${path}`, {
    method: opts.method || (opts.body !== undefined ? "POST" : "GET"),
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { error: text }; }
  if (!res.ok) throw new ApiError(res.status, (data && data.error) || res.statusText, data && data.field);
  return data;
}

/** A query string from an object, leaving out empty values. */
export function qs(o) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== null && v !== "") p.set(k, v);
  const t = p.toString();
  return t ? `?${t}` : "";
}

/** The route's parameters (`#/view?k=v`). */
export function hashParams() {
  const q = location.hash.split("?")[1] || "";
  return Object.fromEntries(new URLSearchParams(q));
}

/** Sets the route's parameters without reloading the view. */
export function setHashParams(view, o) {
  history.replaceState(null, "", `#/${view}${qs(o)}`);
}
