// Connecting a number from the console (#/numbers/connect), in the order the system needs them:
// the provider server (its kind, base URL and write-only secrets; then the webhook URL to paste on
// its side), the number, the instance (the session on that server that holds the number), then
// pairing it with the provider's code, a test message, and the Chatwoot mapping with the reply
// webhook URL to paste in the inbox. Every secret is write-only: typed here, never shown again.
import { api } from "../api.js";
import { h, clear, field, uid, copyField, showRefusal, clearRefusal, refusalSlot } from "../dom.js";
import { t, formatPhone } from "../i18n.js";
import { pairingPanel } from "./pairing.js";
import { replyWebhook } from "./instance.js";

const KINDS = ["wuzapi", "evolution", "meta"];
const NEW = "";

function input(attrs) {
  return h("input", { spellcheck: "false", autocomplete: "off", ...attrs });
}

function section(title, ...children) {
  const titleId = uid("step");
  return h("section", { class: "card stack", "aria-labelledby": titleId }, h("h2", { id: titleId }, title), ...children);
}

export function mount(main, { me, notify }) {
  const state = { provider: null, number: null, instance: null };
  let panel = null;
  const providerStep = h("div", { class: "stack" });
  const numberStep = h("div", { class: "stack" });
  const instanceStep = h("div", { class: "stack" });
  const pairingStep = h("div", { class: "stack" });
  const loadSlot = refusalSlot();
  main.append(
    h("p", {}, h("a", { href: "#/numbers" }, t("instance.back"))),
    h("h1", {}, t("connect.title")),
    h("p", {}, t("connect.intro")),
    loadSlot,
    section(t("connect.provider.title"), providerStep),
    section(t("connect.number.title"), numberStep),
    section(t("connect.instance.title"), instanceStep),
    pairingStep,
  );

  // --- 1. the provider server ------------------------------------------------------------------

  function webhookOf(provider) {
    return copyField(t("connect.provider.webhookUrl"), provider.webhookUrl || `${location.origin}${provider.webhookPath}`, t("common.copied"));
  }

  function renderProvider(providers) {
    const choice = h(
      "select",
      { name: "providerId" },
      h("option", { value: NEW }, t("connect.provider.new")),
      providers.map((provider) => h("option", { value: provider.id, selected: state.provider && state.provider.id === provider.id }, `${provider.name} (${provider.kind})`)),
    );
    const kind = h("select", { name: "kind" }, KINDS.map((value) => h("option", { value }, t(`connect.kind.${value}`))));
    const name = input({ type: "text", name: "name" });
    const baseUrl = input({ type: "url", name: "baseUrl", placeholder: "https://", required: true });
    const secret = input({ type: "password", name: "webhookSecret", required: true, autocomplete: "new-password" });
    const adminToken = input({ type: "password", name: "adminToken", autocomplete: "new-password" });
    const verifyToken = input({ type: "password", name: "verifyToken", autocomplete: "new-password" });
    const verifyField = field(t("connect.provider.verifyToken"), verifyToken, t("connect.provider.verifyTokenHint"));
    const secretHint = h("p", { class: "hint", id: uid("secret-hint") });
    const submit = h("button", { type: "submit" }, t("connect.provider.save"));
    const slot = refusalSlot();
    const created = h("div", { class: "stack" });
    const newFields = h(
      "div",
      { class: "stack" },
      field(t("connect.provider.kind"), kind),
      field(t("connect.provider.name"), name, t("connect.provider.nameHint")),
      field(t("connect.provider.baseUrl"), baseUrl, t("connect.provider.baseUrlHint")),
      field(t("connect.provider.secret"), secret),
      secretHint,
      field(t("connect.provider.adminToken"), adminToken, t("connect.provider.adminTokenHint")),
      verifyField,
      h("div", { class: "actions" }, submit),
    );
    const form = h("form", { novalidate: true, class: "stack", "aria-label": t("connect.provider.title") }, field(t("connect.provider.choose"), choice), newFields, slot, created);
    secret.setAttribute("aria-describedby", secretHint.id);

    const sync = () => {
      newFields.hidden = choice.value !== NEW;
      verifyField.hidden = kind.value !== "meta";
      clear(secretHint, t(`connect.provider.secretHint.${kind.value}`));
      const chosen = providers.find((provider) => provider.id === choice.value);
      if (chosen) {
        state.provider = chosen;
        clear(created, webhookOf(chosen));
        renderNumber();
      } else clear(created);
    };
    choice.addEventListener("change", sync);
    kind.addEventListener("change", sync);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearRefusal(form, slot);
      submit.disabled = true;
      const body = { kind: kind.value, baseUrl: baseUrl.value.trim(), webhookSecret: secret.value };
      if (name.value.trim()) body.name = name.value.trim();
      if (adminToken.value) body.adminToken = adminToken.value;
      if (kind.value === "meta" && verifyToken.value) body.verifyToken = verifyToken.value;
      try {
        const provider = await api.createProvider(body);
        secret.value = adminToken.value = verifyToken.value = "";
        state.provider = provider;
        notify.info(t("connect.provider.saved", { name: provider.name }));
        renderProvider(await api.providers());
      } catch (error) {
        showRefusal(error, { form, slot, context: t("connect.provider.failed") });
      } finally {
        submit.disabled = false;
      }
    });
    clear(providerStep, form);
    sync();
  }

  // --- 2. the number ---------------------------------------------------------------------------

  async function renderNumber() {
    if (!state.provider) {
      clear(numberStep, h("p", { class: "hint" }, t("connect.number.waiting")));
      return;
    }
    const numbers = await api.numbers();
    const choice = h(
      "select",
      { name: "numberId" },
      h("option", { value: NEW }, t("connect.number.new")),
      numbers.map((number) => h("option", { value: number.id, selected: state.number && state.number.id === number.id }, `${formatPhone(number.number)} (${number.displayName})`)),
    );
    const digits = input({ type: "tel", name: "number", inputmode: "tel", required: true });
    const displayName = input({ type: "text", name: "displayName", required: true });
    const metaPhoneId = input({ type: "text", name: "metaPhoneId", inputmode: "numeric" });
    const metaField = field(t("connect.number.metaPhoneId"), metaPhoneId, t("connect.number.metaPhoneIdHint"));
    metaField.hidden = state.provider.kind !== "meta";
    const submit = h("button", { type: "submit" }, t("connect.number.save"));
    const slot = refusalSlot();
    const newFields = h(
      "div",
      { class: "stack" },
      field(t("connect.number.digits"), digits, t("connect.number.digitsHint")),
      field(t("connect.number.displayName"), displayName),
      metaField,
      h("div", { class: "actions" }, submit),
    );
    const form = h("form", { novalidate: true, class: "stack", "aria-label": t("connect.number.title") }, field(t("connect.number.choose"), choice), newFields, slot);
    const sync = () => {
      newFields.hidden = choice.value !== NEW;
      const chosen = numbers.find((number) => number.id === choice.value);
      if (chosen) {
        state.number = chosen;
        renderInstance();
      }
    };
    choice.addEventListener("change", sync);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearRefusal(form, slot);
      submit.disabled = true;
      const body = { number: digits.value.replace(/[^\d+]/g, ""), displayName: displayName.value.trim() };
      if (metaPhoneId.value.trim()) body.metaPhoneId = metaPhoneId.value.trim();
      try {
        state.number = await api.createNumber(body);
        notify.info(t("connect.number.saved", { number: formatPhone(state.number.number) }));
        await renderNumber();
        renderInstance();
      } catch (error) {
        showRefusal(error, { form, slot, context: t("connect.number.failed") });
      } finally {
        submit.disabled = false;
      }
    });
    clear(numberStep, form);
    sync();
  }

  // --- 3. the instance ---------------------------------------------------------------------------

  function renderInstance() {
    if (!state.provider || !state.number) {
      clear(instanceStep, h("p", { class: "hint" }, t("connect.instance.waiting")));
      return;
    }
    const name = input({ type: "text", name: "name", required: true, pattern: "[A-Za-z0-9][A-Za-z0-9_.-]*" });
    const session = input({ type: "text", name: "providerInstanceId", required: true });
    const token = input({ type: "password", name: "token", required: true, autocomplete: "new-password" });
    const kind = h("select", { name: "kind" }, ["messages", "calls"].map((value) => h("option", { value }, t(`kind.${value}`))));
    const submit = h("button", { type: "submit" }, t("connect.instance.save"));
    const slot = refusalSlot();
    const form = h(
      "form",
      { novalidate: true, class: "stack", "aria-label": t("connect.instance.title") },
      h("p", {}, t("connect.instance.for", { number: formatPhone(state.number.number), provider: state.provider.name })),
      field(t("connect.instance.name"), name, t("connect.instance.nameHint")),
      field(t("connect.instance.session"), session, t(`connect.instance.sessionHint.${state.provider.kind}`)),
      field(t("connect.instance.token"), token, t(`connect.instance.tokenHint.${state.provider.kind}`)),
      field(t("connect.instance.kind"), kind),
      h("div", { class: "actions" }, submit),
      slot,
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearRefusal(form, slot);
      const chosen = name.value.trim();
      if (!chosen) {
        showRefusal({ code: "validation_error", body: { fields: [{ field: "name", reason: "missing" }] } }, { form, slot });
        return;
      }
      submit.disabled = true;
      try {
        state.instance = await api.putInstance(chosen, {
          providerId: state.provider.id,
          providerInstanceId: session.value.trim(),
          numberId: state.number.id,
          token: token.value,
          kind: kind.value,
        });
        token.value = "";
        notify.info(t("connect.instance.saved", { instance: chosen }));
        renderPairing();
      } catch (error) {
        // The path's name is the form's `name` field.
        showRefusal(error, { form, slot, context: t("connect.instance.failed"), fields: { "path.name": "name" } });
      } finally {
        submit.disabled = false;
      }
    });
    clear(instanceStep, form);
  }

  // --- 4. pairing, a test message, Chatwoot -------------------------------------------------------

  function renderPairing() {
    if (panel) panel.stop();
    const instance = state.instance;
    panel = pairingPanel(instance, { provider: state.provider, onChange: () => {} });
    clear(
      pairingStep,
      panel.element,
      h("p", {}, h("a", { href: `#/instances/${encodeURIComponent(instance.name)}` }, t("connect.open", { instance: instance.name }))),
      downstreamForm(),
      replyWebhook(instance.name),
    );
    panel.element.querySelector("h2").focus?.();
  }

  /** The tenant's Chatwoot (its downstream): base URL, account, inbox and a write-only token. */
  function downstreamForm() {
    const tag = me.tenant;
    const baseUrl = input({ type: "url", name: "downstreamBaseUrl", placeholder: "https://", required: true });
    const account = input({ type: "number", name: "downstreamAccountId", min: "1", step: "1", required: true });
    const inbox = input({ type: "number", name: "downstreamInboxId", min: "1", step: "1", required: true });
    const token = input({ type: "password", name: "downstreamApiToken", autocomplete: "new-password" });
    const tokenHint = h("p", { class: "hint", id: uid("token-hint") }, t("chatwoot.tokenHint"));
    token.setAttribute("aria-describedby", tokenHint.id);
    const submit = h("button", { type: "submit" }, t("chatwoot.save"));
    const slot = refusalSlot();
    const titleId = uid("chatwoot");
    const form = h(
      "form",
      { class: "card stack", novalidate: true, "aria-labelledby": titleId },
      h("h2", { id: titleId }, t("chatwoot.title")),
      h("p", {}, t("chatwoot.intro")),
      field(t("chatwoot.baseUrl"), baseUrl),
      field(t("chatwoot.account"), account),
      field(t("chatwoot.inbox"), inbox),
      field(t("chatwoot.token"), token),
      tokenHint,
      h("div", { class: "actions" }, submit),
      slot,
    );
    api
      .tenant(tag)
      .then((tenant) => {
        const current = tenant.downstream;
        if (!current) return;
        baseUrl.value = current.downstreamBaseUrl;
        account.value = String(current.downstreamAccountId);
        inbox.value = String(current.downstreamInboxId);
        clear(tokenHint, t("chatwoot.tokenSet", { hint: current.downstreamApiTokenHint }));
      })
      .catch(() => {});
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearRefusal(form, slot);
      submit.disabled = true;
      const body = {
        downstreamBaseUrl: baseUrl.value.trim(),
        downstreamAccountId: Number(account.value),
        downstreamInboxId: Number(inbox.value),
      };
      if (token.value) body.downstreamApiToken = token.value;
      try {
        const saved = await api.putDownstream(tag, body);
        token.value = "";
        clear(tokenHint, t("chatwoot.tokenSet", { hint: saved.downstream.downstreamApiTokenHint }));
        notify.info(t("chatwoot.saved"));
      } catch (error) {
        showRefusal(error, { form, slot, context: t("chatwoot.failed") });
      } finally {
        submit.disabled = false;
      }
    });
    return form;
  }

  async function start() {
    try {
      renderProvider(await api.providers());
      await renderNumber();
      renderInstance();
    } catch (error) {
      showRefusal(error, { slot: loadSlot, context: t("connect.loadFailed") });
    }
  }

  start();
  return {
    leave: () => panel && panel.stop(),
    onFrame: (frame) => {
      if (panel) panel.onFrame(frame);
      return false; // the steps keep what was typed: nothing here is re-read as a whole
    },
  };
}
