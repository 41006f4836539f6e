// API keys: list, create (the key itself shown once, with a copy button), revoke with confirmation.
import { api } from "../api.js";
import { h, clear, field, table, confirmDialog, uid } from "../dom.js";
import { t, formatDate, formatPhone } from "../i18n.js";

const SCOPES = ["admin", "agent", "send"];

export function mount(main, { notify, me }) {
  const list = h("div", { "aria-busy": "true" });
  const created = h("div");
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
      {},
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
  );

  main.append(h("h1", {}, t("keys.title")), created, list, form);

  function fillNumbers() {
    clear(
      defaultNumber,
      h("option", { value: "" }, t("keys.noDefaultNumber")),
      numbers.map((number) => h("option", { value: number.number }, `${formatPhone(number.number)} (${number.displayName})`)),
    );
  }

  async function create(event) {
    event.preventDefault();
    const scopes = scopeBoxes.filter((box) => box.checked).map((box) => box.value);
    if (!scopes.length) {
      notify.error(t("keys.scopeRequired"));
      scopeBoxes[0].focus();
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
      notify.error(error, t("keys.createFailed"));
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
    // The row and its button are gone: keep the keyboard user at the top of the screen.
    main.querySelector("h1").focus();
    if (failure) notify.error(failure, t("keys.revokeFailed", { name: key.name }));
    else notify.info(t("keys.revoked", { name: key.name }));
  }

  async function reload() {
    list.setAttribute("aria-busy", "true");
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
              ),
            ),
          ),
        ),
      );
    } catch (error) {
      notify.error(error, t("keys.loadFailed"));
    } finally {
      list.setAttribute("aria-busy", "false");
    }
  }

  reload();
  return { reload, onFrame: (frame) => frame.type === "pool.changed" || frame.type === "instance.connection.changed" };
}
