// The token field shared by the views that change things (SQL, Live).

import { h, field } from "../dom.js";
import { token, setToken } from "../api.js";

/** An input bound to the tab's stored token. */
export function tokenField() {
  const input = h("input", { type: "password", name: "token", value: token(), size: 28, autocomplete: "off",
    placeholder: "from the token file", onchange: ev => setToken(ev.target.value) });
  return field("token", input);
}
