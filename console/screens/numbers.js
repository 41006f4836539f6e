// Numbers and their instances: provider kind, priority, kind, connection state, last change, the
// instance's health (what the pool does with it: healthy, warning, paused for new contacts,
// paused; why, since when, until when), the provider events it ignored and why, for each
// instance, its own settings (spam guard,
// downstream inbox, events webhook) edited in place, and for each number its own sending pace
// (an override of the deployment's pacing; an empty field follows the default).
import { api } from "../api.js";
import { h, clear, field, table, uid } from "../dom.js";
import { t, tMaybe, formatDate, formatPhone } from "../i18n.js";

const FRAMES = new Set(["instance.connection.changed", "number.health.changed"]);
const HEALTH_CLASS = { healthy: "ok", warning: "warn", paused_for_new_contacts: "warn", paused: "off" };
// What is typed in an instance's settings survives the re-renders live frames cause.
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

export function badge(connected) {
  return h(
    "span",
    { class: `badge ${connected ? "ok" : "off"}` },
    h("span", { class: "dot", "aria-hidden": "true" }),
    t(connected ? "state.connected" : "state.disconnected"),
  );
}

function healthCell(health) {
  if (!health) return h("td", { dataset: { field: "health" } }, t("health.unknown"));
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
  return h(
    "td",
    { dataset: { field: "health", state: health.state } },
    h(
      "span",
      { class: `badge ${HEALTH_CLASS[health.state] || "off"}` },
      h("span", { class: "dot", "aria-hidden": "true" }),
      t(`health.${health.state}`),
    ),
    health.state !== "healthy" && health.since ? h("p", { class: "hint" }, t("health.since", { date: formatDate(health.since) })) : null,
    health.pausedUntil ? h("p", { class: "hint" }, t("health.pausedUntil", { date: formatDate(health.pausedUntil) })) : null,
    reasons.length ? h("ul", { "aria-label": t("health.reasons", { instance: health.instance }) }, reasons) : null,
  );
}

/** The provider events of the instance that were not applied (the newest 20), with why: a count,
 * and the list behind a disclosure. */
function ignoredCell(page, instance) {
  if (!page) return h("td", { dataset: { field: "ignored" } }, t("ignored.unavailable"));
  if (!page.items.length) return h("td", { dataset: { field: "ignored", count: "0" } }, t("ignored.none"));
  const count = page.items.length;
  return h(
    "td",
    { dataset: { field: "ignored", count: String(count) } },
    h(
      "details",
      {},
      h("summary", {}, page.cursor ? t("ignored.more", { count }) : t("ignored.count", { count })),
      h(
        "ul",
        { "aria-label": t("ignored.list", { instance }) },
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
  );
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
    drafts.set(instance.name, {
      spamguardEnabled: spamguard.checked,
      inboxId: inbox.value,
      eventsWebhookUrl: webhook.value,
    });
  const spamguardId = uid("spamguard");
  const spamguard = h("input", { type: "checkbox", id: spamguardId, checked: draft.spamguardEnabled, onchange: remember });
  const inbox = h("input", { type: "number", min: "1", step: "1", inputmode: "numeric", value: draft.inboxId, oninput: remember });
  const webhook = h("input", { type: "url", value: draft.eventsWebhookUrl, placeholder: "https://", oninput: remember });
  const save = h("button", { type: "submit" }, t("instanceConfig.save", { instance: instance.name }));
  const titleId = uid("instance-config");

  async function submit(event) {
    event.preventDefault();
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
      notify.error(error, t("instanceConfig.saveFailed", { instance: instance.name }));
    } finally {
      save.disabled = false;
    }
  }

  return h(
    "form",
    { class: "stack instance-config", "aria-labelledby": titleId, onsubmit: submit, dataset: { instance: instance.name } },
    h("h3", { id: titleId }, t("instanceConfig.title", { instance: instance.name })),
    h("div", { class: "check" }, spamguard, h("label", { for: spamguardId }, t("instanceConfig.spamguard"))),
    field(t("instanceConfig.inbox"), inbox, t("instanceConfig.inboxHint")),
    field(t("instanceConfig.webhook"), webhook, t("instanceConfig.webhookHint")),
    h("div", { class: "actions" }, save),
  );
}

/** The number's own pacing. Sent as a whole: a field left empty follows the deployment's default
 * (shown as the field's placeholder and in its hint), and all empty clears the override. The form
 * does not block out-of-range values itself: the API's refusal is shown in its words. */
function pacingForm(number, { notify, reload }) {
  const own = number.pacing || {};
  const defaults = number.pacingDefaults || {};
  const draft =
    pacingDrafts.get(number.id) ||
    Object.fromEntries(PACING_FIELDS.map(({ name }) => [name, own[name] == null ? "" : String(own[name])]));
  const inputs = new Map();
  const remember = () =>
    pacingDrafts.set(number.id, Object.fromEntries([...inputs].map(([name, input]) => [name, input.value])));
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
  const titleId = uid("pacing");

  async function send(pacing, done) {
    save.disabled = reset.disabled = true;
    try {
      await api.updateNumber(number.id, { pacing });
      pacingDrafts.delete(number.id);
      notify.info(done);
      await reload();
    } catch (error) {
      notify.error(error, t("pacing.saveFailed", { number: phone }));
    } finally {
      save.disabled = reset.disabled = false;
    }
  }

  function submit(event) {
    event.preventDefault();
    const pacing = {};
    for (const [name, input] of inputs) {
      const text = input.value.trim();
      if (text !== "") pacing[name] = Number(text);
    }
    send(Object.keys(pacing).length ? pacing : null, t("pacing.saved", { number: phone }));
  }

  return h(
    "form",
    {
      class: "stack pacing-config",
      "aria-labelledby": titleId,
      onsubmit: submit,
      novalidate: true,
      dataset: { number: number.id },
    },
    h("h3", { id: titleId }, t("pacing.title", { number: phone })),
    h("p", { class: "hint" }, t("pacing.intro")),
    h("div", { class: "pacing-fields" }, fields),
    h("div", { class: "actions" }, save, reset),
  );
}

/** Which form a control belongs to, to find it again after a re-render. */
function formKey(form) {
  if (!form) return null;
  if (form.dataset.instance) return `instance:${form.dataset.instance}`;
  if (form.dataset.number) return `number:${form.dataset.number}`;
  return null;
}

export function mount(main, { notify }) {
  const body = h("div", { class: "stack", "aria-busy": "true" });
  main.append(h("h1", {}, t("numbers.title")), h("p", {}, t("numbers.intro")), body);

  async function reload() {
    body.setAttribute("aria-busy", "true");
    try {
      const [numbers, instances, providers] = await Promise.all([api.numbers(), api.instances(), api.providers()]);
      // One instance's health failing to load must not hide the others (nor the numbers).
      const healths = await Promise.all(instances.map((instance) => api.health(instance.name).catch(() => null)));
      const healthOf = new Map(instances.map((instance, index) => [instance.name, healths[index]]));
      const ignored = await Promise.all(instances.map((instance) => api.ignoredEvents(instance.name).catch(() => null)));
      const ignoredOf = new Map(instances.map((instance, index) => [instance.name, ignored[index]]));
      const kindOf = new Map(providers.map((provider) => [provider.id, provider.kind]));
      if (!numbers.length) {
        clear(body, h("p", {}, t("numbers.empty")));
        return;
      }
      // Keep focus where it was across a live re-render (the settings of the instance being edited).
      const focused = document.activeElement && body.contains(document.activeElement) ? document.activeElement : null;
      const focusedForm = focused ? formKey(focused.form) : null;
      const focusedIndex = focused && focused.form ? Array.from(focused.form.elements).indexOf(focused) : -1;
      clear(
        body,
        numbers.map((number) => {
          const own = instances
            .filter((instance) => instance.numberId === number.id)
            .sort((a, b) => a.priority - b.priority || a.name.localeCompare(b.name));
          const title = `${formatPhone(number.number)} (${number.displayName})`;
          return h(
            "section",
            { class: "card", "aria-label": title },
            h("h2", {}, title, " ", badge(number.connected)),
            own.length
              ? [
                  table(
                    t("numbers.instancesOf", { number: formatPhone(number.number) }),
                    [
                      t("numbers.col.instance"),
                      t("numbers.col.provider"),
                      t("numbers.col.priority"),
                      t("numbers.col.kind"),
                      t("numbers.col.state"),
                      t("numbers.col.health"),
                      t("numbers.col.changed"),
                      t("numbers.col.ignored"),
                    ],
                    own.map((instance) =>
                      h(
                        "tr",
                        { dataset: { instance: instance.name } },
                        h("th", { scope: "row" }, instance.name),
                        h("td", {}, kindOf.get(instance.providerId) || instance.providerId),
                        h("td", {}, String(instance.priority)),
                        h("td", {}, t(`kind.${instance.kind}`)),
                        h("td", {}, badge(instance.state === "CONNECTED")),
                        healthCell(healthOf.get(instance.name)),
                        h("td", {}, formatDate(instance.stateChangedAt)),
                        ignoredCell(ignoredOf.get(instance.name), instance.name),
                      ),
                    ),
                  ),
                  own.map((instance) => settingsForm(instance, { notify, reload })),
                ]
              : h("p", {}, t("numbers.noInstances")),
            pacingForm(number, { notify, reload }),
          );
        }),
      );
      if (focusedForm) {
        const form = Array.from(body.querySelectorAll("form")).find((each) => formKey(each) === focusedForm);
        if (form && form.elements[focusedIndex]) form.elements[focusedIndex].focus();
      }
    } catch (error) {
      notify.error(error, t("numbers.loadFailed"));
    } finally {
      body.setAttribute("aria-busy", "false");
    }
  }

  reload();
  return {
    reload,
    onFrame: (frame) => FRAMES.has(frame.type),
  };
}
