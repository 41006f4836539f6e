// DOM building without innerHTML: every text from the API goes in as a text node.
import { t, tMaybe } from "./i18n.js";

/** h("button", {class: "x", onclick: fn, "aria-label": "..."}, "text", child) */
export function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      element.className = value;
    } else if (name === "dataset") {
      Object.assign(element.dataset, value);
    } else if (name in PROPERTIES) {
      element[PROPERTIES[name]] = value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

// Set as properties, not attributes: their live state is what matters.
const PROPERTIES = { value: "value", checked: "checked", disabled: "disabled", selected: "selected" };

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

let nextId = 0;
/** A unique id for label/aria wiring. */
export function uid(prefix = "f") {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

/** A labelled field: <div class="field"><label for>…</label><input id>…</div>. */
export function field(labelText, control, hint) {
  const id = control.id || uid("field");
  control.id = id;
  const parts = [h("label", { for: id }, labelText), control];
  if (hint) {
    const hintId = `${id}-hint`;
    control.setAttribute("aria-describedby", hintId);
    parts.push(h("p", { class: "hint", id: hintId }, hint));
  }
  return h("div", { class: "field" }, parts);
}

/** A table with a caption, wrapped so it scrolls sideways on a narrow screen instead of the page.
 * The wrapper is a region named by the caption that takes focus, so a keyboard can scroll it. */
export function table(caption, headers, rows) {
  const captionId = uid("caption");
  return h(
    "div",
    { class: "table-wrap", role: "region", tabindex: "0", "aria-labelledby": captionId },
    h(
      "table",
      {},
      h("caption", { id: captionId }, caption),
      h("thead", {}, h("tr", {}, headers.map((header) => h("th", { scope: "col" }, header)))),
      h("tbody", {}, rows),
    ),
  );
}

/** Runs `fn` once after calls stop for `ms` (live frames can arrive in bursts). */
export function debounce(fn, ms = 250) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/** Runs `fn` at most once every `ms`, the last call of a burst included. */
export function throttle(fn, ms) {
  let last = 0;
  let timer = null;
  return (...args) => {
    const wait = last + ms - Date.now();
    clearTimeout(timer);
    timer = setTimeout(
      () => {
        last = Date.now();
        fn(...args);
      },
      Math.max(0, wait),
    );
  };
}

/** A modal confirmation (native <dialog>: focus is kept inside, Escape cancels). Resolves true/false. */
export function confirmDialog({ title, text, confirm, cancel, danger = true }) {
  return new Promise((resolve) => {
    const titleId = uid("dialog-title");
    const dialog = h("dialog", { "aria-labelledby": titleId, class: "dialog" });
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    dialog.append(
      h("h2", { id: titleId }, title),
      text ? h("p", {}, text) : null,
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", class: danger ? "danger" : "", onclick: () => done(true) }, confirm),
        h("button", { type: "button", class: "secondary", onclick: () => done(false) }, cancel),
      ),
    );
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      done(false);
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

// --- errors where the user is ------------------------------------------------------------------
// A refusal is said in the interface's language by its error code; the API's own words stay one
// click away behind "detalhes". A validation error is shown at each field it names (aria-invalid,
// the message under the field); any other refusal next to the action that failed.

/** Show `message` under `control` (aria-invalid, aria-describedby), or clear it with null. */
export function fieldError(control, message) {
  const box = control.closest(".field") || control.parentElement;
  const errorId = `${control.id || (control.id = uid("field"))}-error`;
  const old = box && box.querySelector(`#${CSS.escape(errorId)}`);
  if (old) old.remove();
  const describedBy = (control.getAttribute("aria-describedby") || "").split(" ").filter((id) => id && id !== errorId);
  if (!message) {
    control.removeAttribute("aria-invalid");
    if (describedBy.length) control.setAttribute("aria-describedby", describedBy.join(" "));
    else control.removeAttribute("aria-describedby");
    return;
  }
  control.setAttribute("aria-invalid", "true");
  control.setAttribute("aria-describedby", [...describedBy, errorId].join(" "));
  if (box) box.append(h("p", { class: "field-error", id: errorId }, message));
}

/** The interface's words for a refusal: by its error code, else by what kind of failure it was. */
export function errorText(error) {
  if (!error) return "";
  if (error.status === 0 && error.code === "network") return t("error.network");
  // A refusal at a field may have words of its own (`error.code.<code>.<field>`).
  const field = error.body && typeof error.body.field === "string" ? error.body.field : null;
  const known = error.code && ((field && tMaybe(`error.code.${error.code}.${field}`)) || tMaybe(`error.code.${error.code}`));
  if (known) return known;
  if (typeof error.status === "number" && error.status >= 500) return t("error.server");
  if (typeof error.status === "number" && error.status >= 400) return t("error.refused");
  return String(error.message || error);
}

/** What a field problem of a validation error means, in the interface's words. */
export function fieldText(problem) {
  const name = String(problem.field || "").split(".").pop();
  return (
    tMaybe(`error.field.${name}.${problem.reason}`, { limit: problem.limit }) ||
    tMaybe(`error.field.${problem.reason}`, { limit: problem.limit }) ||
    t("error.field.invalid")
  );
}

/** A refusal as a block: the interface's words, and the API's own behind a "detalhes" toggle. */
export function refusal(error, context) {
  const said = errorText(error);
  const own = error && error.message && error.code ? `${error.message} (${error.code})` : null;
  return h(
    "div",
    { class: "refusal", role: "alert" },
    h("p", {}, context ? `${context}: ${said}` : said),
    own && own !== said ? h("details", {}, h("summary", {}, t("error.details")), h("p", { class: "mono" }, own)) : null,
  );
}

/** The slot where an action's refusal is shown, right after that action. */
export function refusalSlot() {
  return h("div", { class: "refusal-slot" });
}

/**
 * Say `error` where the user is: each field of a validation error at its control in `form`
 * (found by `name`, the API's field name or its last part), the rest in `slot` next to the
 * action. Returns true when a field took it (focus then goes to the first field named, unless
 * `focus` is false: a screen saying it again as it re-renders leaves the focus where it is).
 */
export function showRefusal(error, { form = null, slot = null, context = "", fields = {}, focus = true } = {}) {
  if (slot) clear(slot);
  let first = null;
  const problems = (error && error.body && Array.isArray(error.body.fields) && error.body.fields) || [];
  const named = (field) => {
    if (!form || !field) return null;
    const wanted = [fields[field], field, field.split(".").pop()].filter(Boolean);
    for (const name of wanted) {
      const control = form.querySelector(`[name="${CSS.escape(name)}"]`);
      if (control) return control;
    }
    return null;
  };
  const unplaced = [];
  for (const problem of problems) {
    const control = named(problem.field);
    if (control) {
      fieldError(control, fieldText(problem));
      first = first || control;
    } else unplaced.push(problem);
  }
  // A refusal naming one field outside the validation errors (`field` in its body).
  if (!problems.length && error && error.body && error.body.field) {
    const control = named(error.body.field);
    if (control) {
      fieldError(control, errorText(error));
      first = control;
    }
  }
  if (first) {
    if (focus) first.focus();
    if (unplaced.length && slot) slot.append(refusal(error, context));
    return true;
  }
  if (slot) slot.append(refusal(error, context));
  return false;
}

/** Clear every field error of `form` and the refusal in `slot`. */
export function clearRefusal(form, slot) {
  if (form) for (const control of form.querySelectorAll("[aria-invalid=true]")) fieldError(control, null);
  if (slot) clear(slot);
}

/** A read-only value to paste elsewhere (a webhook URL), with a button that copies it. */
export function copyField(labelText, value, copiedText) {
  const input = h("input", { type: "text", readonly: true, value, class: "mono", spellcheck: "false" });
  const done = h("span", { class: "hint", "aria-live": "polite" });
  const button = h(
    "button",
    {
      type: "button",
      class: "secondary",
      onclick: async () => {
        input.select();
        try {
          await navigator.clipboard.writeText(value);
        } catch {
          // Without clipboard access the value stays selected for Ctrl+C.
        }
        clear(done, copiedText);
      },
    },
    t("common.copy"),
  );
  const wrapper = field(labelText, input);
  wrapper.append(h("div", { class: "actions" }, button, done));
  return wrapper;
}

/** A connection badge: "conectado" / "desconectado" (the word carries it, the colour repeats it). */
export function badge(connected) {
  return h(
    "span",
    { class: `badge ${connected ? "ok" : "off"}` },
    h("span", { class: "dot", "aria-hidden": "true" }),
    t(connected ? "state.connected" : "state.disconnected"),
  );
}

/** A health badge (healthy, warning, paused for new contacts, paused). */
export function healthBadge(state) {
  const tone = { healthy: "ok", warning: "warn", paused_for_new_contacts: "warn", paused: "off" }[state] || "off";
  return h(
    "span",
    { class: `badge ${tone}`, dataset: { health: state } },
    h("span", { class: "dot", "aria-hidden": "true" }),
    t(`health.${state}`),
  );
}
