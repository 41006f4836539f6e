// One instance (#/instances/<name>): its number, provider, connection and health (why, since
// when, until when), the provider events it ignored and why, pairing its number (the provider's code, reconnect, log out, a test
// message), its own settings (spam guard, downstream inbox, events webhook), its number's sending
// pace (an override of the deployment's pacing; an empty field follows the default), and the
// Chatwoot reply webhook URL to paste in the inbox.
import { api, ApiError } from "../api.js";
import {
  h,
  clear,
  field,
  uid,
  badge,
  healthBadge,
  copyField,
  showRefusal,
  clearRefusal,
  refusalSlot,
  confirmDialog,
} from "../dom.js";
import { t, tMaybe, formatDate, formatPhone } from "../i18n.js";
import { pairingPanel } from "./pairing.js";

const FRAMES = new Set(["instance.connection.changed", "number.health.changed"]);
// What is typed in the forms survives the re-reads live frames cause.
const drafts = new Map(); // instance name -> {spamguardEnabled, inboxId, eventsWebhookUrl}
const pacingDrafts = new Map(); // number id -> {messagesPerMinute: "…", burst: "…", …} as typed
// A number's pacing fields: the API's name, whether it takes a fraction, its least value, and the
// i18n key of what it means beyond its label (null: the label says it all).
const PACING_FIELDS = [
  { name: "messagesPerMinute", step: "any", min: "0", hint: "pacing.messagesPerMinuteHint" },
  { name: "burst", step: "1", min: "1", hint: null },
  { name: "newContactsFirstDay", step: "1", min: "0", hint: "pacing.newContactsFirstDayHint" },
  { name: "newContactsStep", step: "1", min: "0", hint: null },
  { name: "newContactsMax", step: "1", min: "0", hint: null },
];

/** An instance's health: its badge, since when, until when, and the list of its reasons. */
export function healthDetails(health, instanceName) {
  if (!health) return [h("span", {}, t("health.unknown"))];
  const reasons = health.reasons.map((reason) =>
    h(
      "li",
      {},
      tMaybe(`health.reason.${reason.code}`) || reason.code,
      " — ",
      t("health.since", { date: formatDate(reason.since) }),
      reason.until ? `; ${t("health.until", { date: formatDate(reason.until) })}` : "",
    ),
  );
  return [
    healthBadge(health.state),
    health.state !== "healthy" && health.since ? h("p", { class: "hint" }, t("health.since", { date: formatDate(health.since) })) : null,
    health.pausedUntil ? h("p", { class: "hint" }, t("health.pausedUntil", { date: formatDate(health.pausedUntil) })) : null,
    reasons.length ? h("ul", { "aria-label": t("health.reasons", { instance: instanceName }) }, reasons) : null,
  ];
}

/** The provider events of the instance that were not applied (the newest 20), with why: a count,
 * and the list behind a disclosure. */
function ignoredDetails(page, instanceName) {
  if (!page) return [t("ignored.unavailable")];
  if (!page.items.length) return [t("ignored.none")];
  const count = page.items.length;
  return [
    h(
      "details",
      {},
      h("summary", {}, page.cursor ? t("ignored.more", { count }) : t("ignored.count", { count })),
      h(
        "ul",
        { "aria-label": t("ignored.list", { instance: instanceName }) },
        page.items.map((event) =>
          h(
            "li",
            {},
            h("time", { datetime: event.receivedAt }, formatDate(event.receivedAt)),
            " — ",
            h("span", { class: "mono" }, event.event),
            ": ",
            tMaybe(`ignored.${event.reasonCode}`) || event.reasonCode,
            h("span", { class: "hint" }, ` (${event.reason})`),
          ),
        ),
      ),
    ),
  ];
}

/** The instance's own settings. A PUT replaces the instance, so its identity fields go back as
 * read; the token and owner tag are left out, which keeps them. */
function settingsForm(instance, { notify, reload }) {
  const draft = drafts.get(instance.name) || {
    spamguardEnabled: Boolean(instance.spamguardEnabled),
    inboxId: instance.inboxId == null ? "" : String(instance.inboxId),
    eventsWebhookUrl: instance.eventsWebhookUrl || "",
  };
  const remember = () =>
    drafts.set(instance.name, { spamguardEnabled: spamguard.checked, inboxId: inbox.value, eventsWebhookUrl: webhook.value });
  const spamguardId = uid("spamguard");
  const spamguard = h("input", { type: "checkbox", id: spamguardId, name: "spamguardEnabled", checked: draft.spamguardEnabled, onchange: remember });
  const inbox = h("input", { type: "number", name: "inboxId", min: "1", step: "1", inputmode: "numeric", value: draft.inboxId, oninput: remember });
  const webhook = h("input", { type: "url", name: "eventsWebhookUrl", value: draft.eventsWebhookUrl, placeholder: "https://", oninput: remember });
  const save = h("button", { type: "submit" }, t("instanceConfig.save", { instance: instance.name }));
  const slot = refusalSlot();
  const titleId = uid("instance-config");
  const form = h(
    "form",
    { class: "card stack instance-config", "aria-labelledby": titleId, novalidate: true, dataset: { instance: instance.name } },
    h("h2", { id: titleId }, t("instanceConfig.title", { instance: instance.name })),
    h("div", { class: "check" }, spamguard, h("label", { for: spamguardId }, t("instanceConfig.spamguard"))),
    field(t("instanceConfig.inbox"), inbox, t("instanceConfig.inboxHint")),
    field(t("instanceConfig.webhook"), webhook, t("instanceConfig.webhookHint")),
    h("div", { class: "actions" }, save),
    slot,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearRefusal(form, slot);
    save.disabled = true;
    const inboxText = inbox.value.trim();
    const body = {
      providerId: instance.providerId,
      providerInstanceId: instance.providerInstanceId,
      numberId: instance.numberId,
      priority: instance.priority,
      kind: instance.kind,
      spamguardEnabled: spamguard.checked,
      inboxId: inboxText ? Number(inboxText) : null,
      eventsWebhookUrl: webhook.value.trim() || null,
    };
    try {
      await api.putInstance(instance.name, body);
      drafts.delete(instance.name);
      notify.info(t("instanceConfig.saved", { instance: instance.name }));
      await reload();
    } catch (error) {
      showRefusal(error, { form, slot, context: t("instanceConfig.saveFailed", { instance: instance.name }) });
    } finally {
      save.disabled = false;
    }
  });
  return form;
}

/** The number's own pacing. Sent as a whole: a field left empty follows the deployment's default
 * (shown as the field's placeholder and in its hint), and all empty clears the override. The form
 * leaves range checks to the API, whose refusal is shown at the field it names. */
function pacingForm(number, { notify, reload }) {
  const own = number.pacing || {};
  const defaults = number.pacingDefaults || {};
  const draft =
    pacingDrafts.get(number.id) || Object.fromEntries(PACING_FIELDS.map(({ name }) => [name, own[name] == null ? "" : String(own[name])]));
  const inputs = new Map();
  const remember = () => pacingDrafts.set(number.id, Object.fromEntries([...inputs].map(([name, input]) => [name, input.value])));
  const phone = formatPhone(number.number);
  const fields = PACING_FIELDS.map(({ name, step, min, hint }) => {
    const fallback = defaults[name] == null ? "" : String(defaults[name]);
    const input = h("input", {
      type: "number",
      name,
      min,
      step,
      inputmode: step === "1" ? "numeric" : "decimal",
      value: draft[name],
      placeholder: fallback,
      oninput: remember,
    });
    inputs.set(name, input);
    // A rate of 0 is pacing off: say so, rather than a bare 0 that reads like "send nothing".
    const shown = name === "messagesPerMinute" && fallback === "0" ? t("pacing.offValue") : fallback || t("common.none");
    const explained = [hint ? t(hint) : null, t("pacing.defaultHint", { value: shown })];
    return field(t(`pacing.${name}`), input, explained.filter(Boolean).join(" "));
  });
  const save = h("button", { type: "submit" }, t("pacing.save", { number: phone }));
  const reset = h(
    "button",
    { type: "button", class: "secondary", onclick: () => send(null, t("pacing.cleared", { number: phone })) },
    t("pacing.clear", { number: phone }),
  );
  const slot = refusalSlot();
  const titleId = uid("pacing");
  const form = h(
    "form",
    { class: "card stack pacing-config", "aria-labelledby": titleId, novalidate: true, dataset: { number: number.id } },
    h("h2", { id: titleId }, t("pacing.title", { number: phone })),
    h("p", { class: "hint" }, t("pacing.intro")),
    h("div", { class: "pacing-fields" }, fields),
    h("div", { class: "actions" }, save, reset),
    slot,
  );

  async function send(pacing, done) {
    clearRefusal(form, slot);
    save.disabled = reset.disabled = true;
    try {
      await api.updateNumber(number.id, { pacing });
      pacingDrafts.delete(number.id);
      notify.info(done);
      await reload();
    } catch (error) {
      showRefusal(error, { form, slot, context: t("pacing.saveFailed", { number: phone }) });
    } finally {
      save.disabled = reset.disabled = false;
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const pacing = {};
    for (const [name, input] of inputs) {
      const text = input.value.trim();
      if (text !== "") pacing[name] = Number(text);
    }
    send(Object.keys(pacing).length ? pacing : null, t("pacing.saved", { number: phone }));
  });
  return form;
}

/** The Chatwoot reply webhook of this instance: generated here (a new one ends the previous). */
export function replyWebhook(name) {
  const holder = h("div", {});
  const slot = refusalSlot();
  const titleId = uid("reply");
  const generate = h(
    "button",
    {
      type: "button",
      class: "secondary",
      onclick: async () => {
        clearRefusal(null, slot);
        const sure =
          !holder.childElementCount ||
          (await confirmDialog({
            title: t("reply.againTitle", { instance: name }),
            text: t("reply.againText"),
            confirm: t("reply.againConfirm"),
            cancel: t("common.cancel"),
          }));
        if (!sure) return;
        try {
          const created = await api.replyWebhook(name);
          clear(holder, copyField(t("reply.url"), created.webhookUrl, t("common.copied")), h("p", { class: "hint" }, t("reply.once")));
        } catch (error) {
          showRefusal(error, { slot, context: t("reply.failed") });
        }
      },
    },
    t("reply.generate", { instance: name }),
  );
  return h(
    "section",
    { class: "card stack", "aria-labelledby": titleId },
    h("h2", { id: titleId }, t("reply.title")),
    h("p", {}, t("reply.intro")),
    h("div", { class: "actions" }, generate),
    slot,
    holder,
  );
}

export function mount(main, { params, notify }) {
  const name = params[0];
  const body = h("div", { class: "stack", "aria-busy": "true" });
  const loadSlot = refusalSlot();
  main.append(
    h("p", {}, h("a", { href: "#/numbers" }, t("instance.back"))),
    h("h1", {}, t("instance.title", { instance: name })),
    loadSlot,
    body,
  );
  let panel = null;

  async function reload() {
    body.setAttribute("aria-busy", "true");
    try {
      const [instance, numbers, providers] = await Promise.all([api.instance(name), api.numbers(), api.providers()]);
      const [health, ignored] = await Promise.all([
        api.health(name).catch(() => null),
        api.ignoredEvents(name).catch(() => null),
      ]);
      const number = numbers.find((each) => each.id === instance.numberId);
      const provider = providers.find((each) => each.id === instance.providerId);
      // Focus stays where it was across a live re-read (a field being edited, found by its name).
      const focused = document.activeElement && body.contains(document.activeElement) ? document.activeElement : null;
      const focusedName = focused && focused.name && !panel?.element.contains(focused) ? focused.name : null;
      // The pairing panel lives as long as the screen: a re-read keeps the code it shows.
      if (!panel) panel = pairingPanel(instance, { provider, onChange: () => reload() });
      else panel.setConnection(instance.state);
      const fact = (label, key, ...value) => h("div", {}, h("dt", {}, label), h("dd", { dataset: { field: key } }, ...value));
      const ignoredField = ignored ? { field: "ignored", count: String(ignored.items.length) } : { field: "ignored" };
      clear(
        body,
        h(
          "dl",
          { class: "facts" },
          fact(t("instance.number"), "number", number ? `${formatPhone(number.number)} (${number.displayName})` : instance.numberId),
          fact(t("instance.provider"), "provider", provider ? `${provider.name} · ${provider.kind}` : instance.providerId),
          fact(t("numbers.col.kind"), "kind", t(`kind.${instance.kind}`)),
          fact(t("numbers.col.state"), "state", badge(instance.state === "CONNECTED"), " ", h("span", { class: "hint" }, formatDate(instance.stateChangedAt))),
          fact(t("numbers.col.health"), "health", ...healthDetails(health, instance.name)),
          h(
            "div",
            {},
            h("dt", {}, t("numbers.col.ignored")),
            h("dd", { dataset: ignoredField }, ...ignoredDetails(ignored, instance.name)),
          ),
        ),
        panel.element,
        settingsForm(instance, { notify, reload }),
        number ? pacingForm(number, { notify, reload }) : null,
        replyWebhook(instance.name),
      );
      if (focusedName) {
        const again = body.querySelector(`[name="${CSS.escape(focusedName)}"]`);
        if (again) again.focus();
      }
      clear(loadSlot);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) clear(body, h("p", {}, t("instance.notFound", { instance: name })));
      else showRefusal(error, { slot: loadSlot, context: t("instance.loadFailed", { instance: name }) });
    } finally {
      body.setAttribute("aria-busy", "false");
    }
  }

  reload();
  return {
    reload,
    leave: () => panel && panel.stop(),
    onFrame: (frame) => {
      if (panel) panel.onFrame(frame);
      return FRAMES.has(frame.type) && (!frame.detail || !frame.detail.instance || frame.detail.instance === name);
    },
  };
}
