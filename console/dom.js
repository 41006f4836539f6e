// DOM building without innerHTML: every text from the API goes in as a text node.

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
