// API keys: list, create (the key itself shown once, with a copy button), revoke with confirmation.
// A refusal is said where it happened: at the fields of the new key's form, next to a row's
// revoke button, or where the list would be.
import { api } from "../api.js";
import { h, clear, field, table, confirmDialog, uid, showRefusal, clearRefusal, refusalSlot } from "../dom.js";
import { t, formatDate, formatPhone } from "../i18n.js";

const SCOPES = ["admin", "agent", "send"];

export function mount(main, { notify, me }) {
  const list = h("div", { "aria-busy": "true" });
  const listSlot = refusalSlot();
  const created = h("div");
  const formSlot = refusalSlot();
  const rowSlots = new Map(); // key id -> the refusal slot of its row
  let numbers = [];

  const name = h("input", { type: "text", name: "name", required: true, maxlength: "120", autocomplete: "off" });
  const environment = h(
    "select",
    { name: "environment" },
    h("option", { value: "LIVE" }, t("env.LIVE")),
    h("option", { value: "TEST" }, t("env.TEST")),
  );
  const scopeBoxes = SCOPES.map((scope) => h("input", { type: "checkbox", name: "scopes", value: scope, checked: scope === "send" }));
  const attendant = h("input", { type: "text", name: "attendantId", maxlength: "120", autocomplete: "off" });
  const defaultNumber = h("select", { name: "defaultNumber" });
  const webhook = h("input", { type: "url", name: "webhookUrl", inputmode: "url", autocomplete: "off" });
  const atLeastOnce = h("input", { type: "checkbox", name: "atLeastOnce", id: uid("alo"), "aria-describedby": "new-key-alo-hint" });
  const submit = h("button", { type: "submit" }, t("keys.create"));

  const form = h(
    "form",
    { class: "card", "aria-labelledby": "new-key-title", onsubmit: create },
    h("h2", { id: "new-key-title" }, t("keys.newTitle")),
    field(t("keys.name"), name),
    field(t("keys.environment"), environment),
    h(
      "fieldset",
      { class: "field" },
      h("legend", {}, t("keys.scopes")),
      SCOPES.map((scope, index) => {
        const id = uid("scope");
        scopeBoxes[index].id = id;
        return h("div", { class: "check" }, scopeBoxes[index], h("label", { for: id }, t(`scope.${scope}`)));
      }),
    ),
    field(t("keys.attendant"), attendant, t("keys.attendantHint")),
    field(t("keys.defaultNumber"), defaultNumber),
    field(t("keys.webhookUrl"), webhook, t("keys.webhookHint")),
    h("div", { class: "check" }, atLeastOnce, h("label", { for: atLeastOnce.id }, t("keys.atLeastOnce"))),
    h("p", { class: "hint", id: "new-key-alo-hint" }, t("keys.atLeastOnceHint")),
    submit,
    formSlot,
  );

  main.append(h("h1", {}, t("keys.title")), created, listSlot, list, form);

  function fillNumbers() {
    clear(
      defaultNumber,
      h("option", { value: "" }, t("keys.noDefaultNumber")),
      numbers.map((number) => h("option", { value: number.number }, `${formatPhone(number.number)} (${number.displayName})`)),
    );
  }

  async function create(event) {
    event.preventDefault();
    clearRefusal(form, formSlot);
    const scopes = scopeBoxes.filter((box) => box.checked).map((box) => box.value);
    if (!scopes.length) {
      showRefusal({ code: "validation_error", body: { fields: [{ field: "scopes", reason: "scope_required" }] } }, { form, slot: formSlot });
      return;
    }
    const body = { name: name.value.trim(), environment: environment.value, scopes };
    if (attendant.value.trim()) body.attendantId = attendant.value.trim();
    if (defaultNumber.value) body.defaultNumber = defaultNumber.value;
    if (webhook.value.trim()) body.webhookUrl = webhook.value.trim();
    if (atLeastOnce.checked) body.atLeastOnce = true;
    submit.disabled = true;
    try {
      const key = await api.createKey(body);
      form.reset();
      showCreated(key);
      notify.info(t("keys.created", { name: key.name }));
      await reload();
    } catch (error) {
      showRefusal(error, { form, slot: formSlot, context: t("keys.createFailed") });
    } finally {
      submit.disabled = false;
    }
  }

  function showCreated(key) {
    const value = h("input", { type: "text", readonly: true, value: key.key, class: "mono", spellcheck: "false" });
    const copy = h(
      "button",
      {
        type: "button",
        onclick: async () => {
          try {
            await navigator.clipboard.writeText(key.key);
          } catch {
            // Without the async clipboard (e.g. plain http), fall back to selecting it for Ctrl+C.
            value.select();
            document.execCommand("copy");
          }
          notify.info(t("keys.copied"));
        },
      },
      t("keys.copy"),
    );
    const dismiss = h(
      "button",
      {
        type: "button",
        class: "secondary",
        onclick: () => {
          clear(created);
          name.focus();
        },
      },
      t("keys.dismissCreated"),
    );
    clear(
      created,
      h(
        "section",
        { class: "card highlight", "aria-labelledby": "created-title" },
        h("h2", { id: "created-title" }, t("keys.createdTitle", { name: key.name })),
        h("p", {}, t("keys.shownOnce")),
        field(t("keys.plaintext"), value),
        h("div", { class: "actions" }, copy, dismiss),
      ),
    );
    copy.focus();
  }

  async function revoke(key) {
    const yes = await confirmDialog({
      title: t("keys.revokeTitle", { name: key.name }),
      text: t("keys.revokeText"),
      confirm: t("keys.revokeConfirm"),
      cancel: t("common.cancel"),
    });
    if (!yes) return;
    let failure = null;
    try {
      await api.revokeKey(key.id);
    } catch (error) {
      failure = error;
    }
    await reload();
    if (!failure) {
      // The row and its button are gone: keep the keyboard user at the top of the screen.
      main.querySelector("h1").focus();
      notify.info(t("keys.revoked", { name: key.name }));
      return;
    }
    // Said next to the key's revoke button, read again (or where the list is, if it is gone).
    const slot = rowSlots.get(key.id) || listSlot;
    showRefusal(failure, { slot, context: t("keys.revokeFailed", { name: key.name }) });
    const button = slot.closest("td") && slot.closest("td").querySelector("button.danger");
    if (button) button.focus();
  }

  async function reload() {
    list.setAttribute("aria-busy", "true");
    clearRefusal(null, listSlot);
    rowSlots.clear();
    try {
      const [keys, loadedNumbers] = await Promise.all([api.keys(), api.numbers()]);
      const firstLoad = !numbers.length;
      numbers = loadedNumbers;
      if (firstLoad || defaultNumber.options.length !== numbers.length + 1) fillNumbers();
      keys.sort((a, b) => a.name.localeCompare(b.name));
      clear(
        list,
        table(
          t("keys.listCaption"),
          [t("keys.name"), t("keys.prefix"), t("keys.environment"), t("keys.scopes"), t("keys.mode"), t("keys.createdAt"), t("common.actions")],
          keys.map((key) =>
            h(
              "tr",
              {},
              h("th", { scope: "row" }, key.name, key.id === me.keyId ? h("span", { class: "tag" }, t("keys.thisKey")) : null),
              h("td", { class: "mono" }, `${key.prefix}…`),
              h("td", {}, t(`env.${key.environment}`)),
              h("td", {}, key.scopes.map((scope) => t(`scope.${scope}`)).join(", ")),
              h("td", {}, t(`mode.${key.numberSelectionMode}`)),
              h("td", {}, formatDate(key.createdAt)),
              h(
                "td",
                { class: "row-actions" },
                h("a", { href: `#/keys/${encodeURIComponent(key.id)}`, "aria-label": t("keys.editNamed", { name: key.name }) }, t("keys.edit")),
                h(
                  "button",
                  { type: "button", class: "danger", "aria-label": t("keys.revokeNamed", { name: key.name }), onclick: () => revoke(key) },
                  t("keys.revoke"),
                ),
                rowSlot(key.id),
              ),
            ),
          ),
        ),
      );
    } catch (error) {
      showRefusal(error, { slot: listSlot, context: t("keys.loadFailed") });
    } finally {
      list.setAttribute("aria-busy", "false");
    }
  }

  function rowSlot(keyId) {
    const slot = refusalSlot();
    rowSlots.set(keyId, slot);
    return slot;
  }

  reload();
  return { reload, onFrame: (frame) => frame.type === "pool.changed" || frame.type === "instance.connection.changed" };
}
