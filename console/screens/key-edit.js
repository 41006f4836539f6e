// One API key's edit screen: name, environment, default number, webhook URL, and its number pool
// ("Balanceamento de envios"): the selection mode, the ordered pool (drag and drop, or the keyboard:
// Alt+ArrowUp / Alt+ArrowDown on a row, or the move buttons), adding numbers that can send, removing.
// Whenever the API refuses a change the pool is re-read from the API: the screen never keeps a
// state the API did not accept. A refusal is said next to what was done: at the details' fields,
// under the pool's switch and list, in the picker of numbers to add.
import { api } from "../api.js";
import { h, clear, field, uid, debounce, badge, showRefusal, clearRefusal, refusalSlot } from "../dom.js";
import { t, formatPhone } from "../i18n.js";

export const MAX_POOL_SIZE = 10;

export function mount(main, { params, notify }) {
  const keyId = params[0];
  let key = null;
  let numbers = [];
  let canSend = new Set(); // ids of the numbers that can send messages now
  let pool = [];
  let busy = false;
  // Bumped when a change of this screen starts and when it ends: a read of the pool begun before
  // (a live update's refresh) may answer after the change's own answer, and would put the older
  // order back on screen.
  let generation = 0;
  let dirty = false; // the details form has edits not yet saved

  const heading = h("h1", {}, t("keyEdit.loading"));
  const back = h("p", {}, h("a", { href: "#/keys" }, t("keyEdit.back")));
  const loadSlot = refusalSlot(); // what could not be read, under the heading
  const detailsSlot = refusalSlot();
  const poolSlot = refusalSlot(); // the pool's switch, order and removals
  const pickerSlot = refusalSlot();

  // --- details --------------------------------------------------------------------------------
  const name = h("input", { type: "text", name: "name", required: true, maxlength: "120", autocomplete: "off" });
  // Read-only: an API key's environment is fixed when it is created.
  const environment = h("p", { class: "value" });
  const defaultNumber = h("select", { name: "defaultNumber" });
  const webhook = h("input", { type: "url", name: "webhookUrl", inputmode: "url", autocomplete: "off" });
  const atLeastOnce = h("input", { type: "checkbox", name: "atLeastOnce", id: uid("alo"), "aria-describedby": "edit-key-alo-hint" });
  const save = h("button", { type: "submit" }, t("keyEdit.save"));
  const details = h(
    "form",
    { class: "card", "aria-labelledby": "details-title", onsubmit: saveDetails, oninput: () => (dirty = true), onchange: () => (dirty = true) },
    h("h2", { id: "details-title" }, t("keyEdit.details")),
    field(t("keys.name"), name),
    h("div", { class: "field" }, h("span", { class: "label" }, t("keys.environment")), environment),
    field(t("keys.defaultNumber"), defaultNumber, t("keyEdit.defaultNumberHint")),
    field(t("keys.webhookUrl"), webhook, t("keys.webhookHint")),
    h("div", { class: "check" }, atLeastOnce, h("label", { for: atLeastOnce.id }, t("keys.atLeastOnce"))),
    h("p", { class: "hint", id: "edit-key-alo-hint" }, t("keys.atLeastOnceHint")),
    save,
    detailsSlot,
  );

  // --- pool -----------------------------------------------------------------------------------
  const toggle = h("input", { type: "checkbox", role: "switch", id: uid("pool-mode"), onchange: changeMode });
  const poolTitleId = uid("pool-title");
  const list = h("ol", { class: "pool", "aria-labelledby": poolTitleId });
  const emptyNote = h("p", { class: "empty", hidden: true }, t("pool.empty"));
  const count = h("p", { class: "hint" });
  const limit = h("p", { class: "limit", hidden: true }, t("pool.full", { max: MAX_POOL_SIZE }));
  const addButton = h(
    "button",
    { type: "button", class: "secondary", "aria-expanded": "false", onclick: () => openPicker(addButton.getAttribute("aria-expanded") !== "true") },
    t("pool.add"),
  );
  const pickerId = uid("picker");
  addButton.setAttribute("aria-controls", pickerId);
  const choices = h("div", { class: "choices" });
  const picker = h(
    "form",
    { id: pickerId, class: "picker", hidden: true, onsubmit: addSelected },
    h("fieldset", {}, h("legend", {}, t("pool.available")), choices),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit" }, t("pool.addSelected")),
      h("button", { type: "button", class: "secondary", onclick: () => openPicker(false, true) }, t("common.cancel")),
    ),
    pickerSlot,
  );
  const poolSection = h(
    "section",
    { class: "card", "aria-labelledby": "pool-box-title" },
    h("h2", { id: "pool-box-title" }, t("pool.title")),
    h("div", { class: "check switch" }, toggle, h("label", { for: toggle.id }, t("pool.toggle"))),
    poolSlot,
    h("h3", { id: poolTitleId }, t("pool.numbers")),
    list,
    emptyNote,
    h("p", { id: "pool-keyboard-hint", class: "hint" }, t("pool.keyboardHint")),
    count,
    limit,
    addButton,
    picker,
    h("p", { class: "info" }, h("span", { "aria-hidden": "true" }, "ℹ️ "), t("pool.explain")),
  );

  main.append(back, heading, loadSlot, details, poolSection);

  // --- reads ----------------------------------------------------------------------------------

  async function loadKey() {
    key = await api.key(keyId);
    clear(heading, t("keyEdit.title", { name: key.name }));
    document.title = `${t("keyEdit.title", { name: key.name })} · switchboard`;
    toggle.checked = key.numberSelectionMode === "pool";
    if (!dirty) {
      name.value = key.name;
      clear(environment, t(`env.${key.environment}`));
      webhook.value = key.webhookUrl || "";
      atLeastOnce.checked = Boolean(key.atLeastOnce);
      fillDefaultNumber();
    }
  }

  function fillDefaultNumber() {
    const chosen = dirty ? defaultNumber.value : key ? key.defaultNumber || "" : "";
    const options = [h("option", { value: "" }, t("keys.noDefaultNumber"))];
    for (const number of numbers) {
      options.push(h("option", { value: number.number }, `${formatPhone(number.number)} (${number.displayName})`));
    }
    // A default number that is not (or no longer) one of the tenant's numbers stays selectable.
    if (chosen && !numbers.some((number) => number.number === chosen)) {
      options.push(h("option", { value: chosen }, formatPhone(chosen)));
    }
    clear(defaultNumber, options);
    defaultNumber.value = chosen;
  }

  async function loadPool() {
    const started = generation;
    const [entries, loadedNumbers, instances] = await Promise.all([api.pool(keyId), api.numbers(), api.instances()]);
    if (started !== generation) return;
    numbers = loadedNumbers;
    // The pool's own rule for "can send": a Meta Cloud number, or a connected instance of kind
    // `messages`. A number whose only connected instance is of kind `calls` is connected but
    // cannot send, so it is not offered (once in the pool it would show as disconnected).
    const sending = instances.filter((instance) => instance.kind === "messages" && instance.state === "CONNECTED");
    canSend = new Set([
      ...numbers.filter((number) => number.metaPhoneId).map((number) => number.id),
      ...sending.map((instance) => instance.numberId),
    ]);
    pool = entries.sort((a, b) => a.priority - b.priority);
    renderPool();
    if (!dirty) fillDefaultNumber();
  }

  async function reload() {
    clearRefusal(null, loadSlot);
    try {
      await Promise.all([loadKey(), loadPool()]);
    } catch (error) {
      if (error.status === 404) {
        clear(heading, t("keyEdit.notFound"));
        details.hidden = true;
        poolSection.hidden = true;
      }
      showRefusal(error, { slot: loadSlot, context: t("keyEdit.loadFailed") });
    }
  }

  /** A new change of the pool: what was said of the last one goes. */
  function clearPoolRefusals() {
    clearRefusal(null, poolSlot);
    clearRefusal(null, pickerSlot);
  }

  /** After a refusal: show what the API holds now, then say why in `slot` (next to the action). */
  async function refused(error, context, slot = poolSlot) {
    try {
      await Promise.all([loadKey(), loadPool()]);
    } catch (reloadError) {
      if (!(error.status >= 400)) error = reloadError;
    }
    showRefusal(error, { slot, context });
  }

  // --- pool rendering ---------------------------------------------------------------------------

  function label(entry) {
    return `${formatPhone(entry.whatsappNumber.number)} (${entry.whatsappNumber.displayName})`;
  }

  // "Subir"/"Descer" of one row: the keyboard and screen reader alternative to dragging it.
  function moveButton(text, index, step, atEnd) {
    const action = step < 0 ? "up" : "down";
    const [named, short, arrow] =
      step < 0 ? ["pool.moveUpNamed", "pool.moveUp", "↑ "] : ["pool.moveDownNamed", "pool.moveDown", "↓ "];
    return h(
      "button",
      {
        type: "button",
        class: "icon secondary",
        "data-action": action,
        "aria-label": t(named, { number: text }),
        disabled: atEnd || busy,
        onclick: () => move(index, step, action),
      },
      h("span", { "aria-hidden": "true" }, arrow),
      t(short),
    );
  }

  function renderPool() {
    // A re-render (a live update, a reload) must not take the keyboard user's place away.
    const active = document.activeElement;
    const activeRow = active && list.contains(active) ? active.closest("li") : null;
    const focused = activeRow ? { numberId: activeRow.dataset.numberId, action: active.dataset.action } : null;
    clear(
      list,
      pool.map((entry, index) => {
        const text = label(entry);
        const up = moveButton(text, index, -1, index === 0);
        const down = moveButton(text, index, 1, index === pool.length - 1);
        const remove = h(
          "button",
          {
            type: "button",
            class: "danger",
            "data-action": "remove",
            "aria-label": t("pool.removeNamed", { number: text }),
            disabled: busy,
            onclick: () => removeEntry(entry),
          },
          t("pool.remove"),
        );
        const row = h(
          "li",
          {
            class: "pool-row",
            tabindex: "0",
            draggable: "true",
            "aria-describedby": "pool-keyboard-hint",
            dataset: { numberId: entry.whatsappNumberId },
            onkeydown: (event) => {
              if (event.target !== row || !event.altKey) return;
              if (event.key === "ArrowUp") {
                event.preventDefault();
                move(index, -1);
              } else if (event.key === "ArrowDown") {
                event.preventDefault();
                move(index, 1);
              }
            },
            ondragstart: (event) => {
              event.dataTransfer.setData("text/plain", entry.whatsappNumberId);
              event.dataTransfer.effectAllowed = "move";
              row.classList.add("dragging");
            },
            ondragend: () => row.classList.remove("dragging"),
            ondragover: (event) => {
              event.preventDefault();
              event.dataTransfer.dropEffect = "move";
              row.classList.add("drop-target");
            },
            ondragleave: () => row.classList.remove("drop-target"),
            ondrop: (event) => {
              event.preventDefault();
              row.classList.remove("drop-target");
              const from = pool.findIndex((item) => item.whatsappNumberId === event.dataTransfer.getData("text/plain"));
              if (from >= 0 && from !== index) move(from, index - from);
            },
          },
          h("span", { class: "handle", "aria-hidden": "true" }, "☰"),
          h("span", { class: "position" }, `${index + 1}.`),
          h("span", { class: "number" }, text),
          badge(entry.connected),
          h("span", { class: "row-actions" }, up, down, remove),
        );
        return row;
      }),
    );
    list.hidden = !pool.length;
    emptyNote.hidden = pool.length > 0;
    clear(count, t("pool.count", { count: pool.length, max: MAX_POOL_SIZE }));
    const full = pool.length >= MAX_POOL_SIZE;
    limit.hidden = !full;
    addButton.disabled = full || busy;
    if (full) openPicker(false);
    else if (!picker.hidden) renderChoices();
    if (focused) focusRow(focused.numberId, focused.action);
  }

  function available() {
    const inPool = new Set(pool.map((entry) => entry.whatsappNumberId));
    return numbers.filter((number) => canSend.has(number.id) && !inPool.has(number.id));
  }

  function renderChoices() {
    const checked = new Set([...choices.querySelectorAll("input:checked")].map((box) => box.value));
    const options = available();
    if (!options.length) {
      clear(choices, h("p", {}, t("pool.noneAvailable")));
      return;
    }
    clear(
      choices,
      options.map((number) => {
        const id = uid("choice");
        return h(
          "div",
          { class: "check" },
          h("input", { type: "checkbox", id, name: "numbers", value: number.id, checked: checked.has(number.id) }),
          h("label", { for: id }, `${formatPhone(number.number)} (${number.displayName})`),
        );
      }),
    );
  }

  function openPicker(open, returnFocus = false) {
    picker.hidden = !open;
    addButton.setAttribute("aria-expanded", String(open));
    if (open) {
      renderChoices();
      const first = choices.querySelector("input");
      if (first) first.focus();
    } else if (returnFocus) {
      addButton.focus();
    }
  }

  function setBusy(value) {
    busy = value;
    generation += 1;
    toggle.disabled = value;
    for (const button of poolSection.querySelectorAll("button")) {
      if (value) button.disabled = true;
    }
    if (!value) {
      for (const button of picker.querySelectorAll("button")) button.disabled = false;
      renderPool();
    }
  }

  // --- pool changes -----------------------------------------------------------------------------

  async function changeMode() {
    const mode = toggle.checked ? "pool" : "default";
    clearPoolRefusals();
    setBusy(true);
    let failure = null;
    try {
      key = await api.setSelectionMode(keyId, mode);
    } catch (error) {
      failure = error;
    }
    if (failure) await refused(failure, t("pool.modeFailed"));
    setBusy(false);
    toggle.focus();
    if (!failure) notify.info(t(mode === "pool" ? "pool.modeOn" : "pool.modeOff"));
  }

  async function move(index, delta, button) {
    const target = index + delta;
    if (busy || target < 0 || target >= pool.length) return;
    const order = pool.map((entry) => entry.whatsappNumberId);
    const [moved] = order.splice(index, 1);
    order.splice(target, 0, moved);
    const movedLabel = label(pool[index]);
    clearPoolRefusals();
    setBusy(true);
    let failure = null;
    try {
      pool = (await api.reorderPool(keyId, order)).sort((a, b) => a.priority - b.priority);
    } catch (error) {
      failure = error;
    }
    if (failure) await refused(failure, t("pool.reorderFailed"));
    setBusy(false);
    focusRow(moved, button);
    if (!failure) notify.info(t("pool.moved", { number: movedLabel, position: target + 1 }));
  }

  function focusRow(numberId, button) {
    const row = [...list.children].find((item) => item.dataset.numberId === numberId);
    if (!row) return;
    const control = button ? row.querySelector(`button[data-action="${button}"]`) : null;
    (control && !control.disabled ? control : row).focus();
  }

  async function removeEntry(entry) {
    const text = label(entry);
    const index = pool.indexOf(entry);
    clearPoolRefusals();
    setBusy(true);
    let failure = null;
    try {
      await api.removeFromPool(keyId, entry.whatsappNumberId);
    } catch (error) {
      failure = error;
    }
    try {
      await loadPool();
    } catch (error) {
      failure = failure || error;
    }
    setBusy(false);
    if (failure) showRefusal(failure, { slot: poolSlot, context: t("pool.removeFailed", { number: text }) });
    else notify.info(t("pool.removed", { number: text }));
    const next = list.children[Math.min(index, list.children.length - 1)];
    if (next && next.tabIndex >= 0) next.focus();
    else addButton.focus();
  }

  async function addSelected(event) {
    event.preventDefault();
    clearPoolRefusals();
    const chosen = [...choices.querySelectorAll("input:checked")].map((box) => box.value);
    const room = MAX_POOL_SIZE - pool.length;
    const problem = !chosen.length ? t("pool.chooseOne") : chosen.length > room ? t("pool.tooMany", { room, max: MAX_POOL_SIZE }) : null;
    if (problem) {
      showRefusal({ message: problem }, { slot: pickerSlot });
      return;
    }
    setBusy(true);
    let added = 0;
    let failure = null;
    try {
      for (const numberId of chosen) {
        await api.addToPool(keyId, numberId);
        added += 1;
      }
      openPicker(false);
    } catch (error) {
      failure = error;
    }
    try {
      await loadPool();
    } catch (error) {
      failure = failure || error;
    }
    setBusy(false);
    if (failure) showRefusal(failure, { slot: picker.hidden ? poolSlot : pickerSlot, context: t("pool.addFailed") });
    else notify.info(t("pool.added", { count: added }));
    if (picker.hidden) addButton.disabled ? list.focus() : addButton.focus();
  }

  // --- details changes --------------------------------------------------------------------------

  async function saveDetails(event) {
    event.preventDefault();
    const changes = {};
    const newName = name.value.trim();
    if (newName !== key.name) changes.name = newName;
    const newDefault = defaultNumber.value || null;
    if (newDefault !== (key.defaultNumber || null)) changes.defaultNumber = newDefault;
    const newWebhook = webhook.value.trim() || null;
    if (newWebhook !== (key.webhookUrl || null)) changes.webhookUrl = newWebhook;
    if (atLeastOnce.checked !== Boolean(key.atLeastOnce)) changes.atLeastOnce = atLeastOnce.checked;
    clearRefusal(details, detailsSlot);
    if (!Object.keys(changes).length) {
      notify.info(t("keyEdit.nothingChanged"));
      return;
    }
    save.disabled = true;
    try {
      key = await api.updateKey(keyId, changes);
      dirty = false;
      notify.info(t("keyEdit.saved", { name: key.name }));
      await loadKey();
    } catch (error) {
      showRefusal(error, { form: details, slot: detailsSlot, context: t("keyEdit.saveFailed") });
    } finally {
      save.disabled = false;
    }
  }

  const refreshQuietly = debounce(refreshNow, 150);

  reload();
  return {
    reload: () => {
      if (!busy) reload();
    },
    onFrame: (frame) => {
      if (busy) return false;
      const detail = frame.detail || {};
      if (frame.type === "pool.changed" && detail.keyId === keyId) {
        refreshQuietly();
      } else if (frame.type === "instance.connection.changed") {
        refreshQuietly();
      }
      return false;
    },
  };

  // Not a full reload: the details form keeps what the user is typing.
  async function refreshNow() {
    try {
      await Promise.all([loadKey(), loadPool()]);
      clearRefusal(null, loadSlot);
    } catch (error) {
      showRefusal(error, { slot: loadSlot, context: t("keyEdit.loadFailed") });
    }
  }
}
