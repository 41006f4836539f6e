// Numbers and their instances: provider kind, priority, kind, connection state, last change, the
// instance's health (what the pool does with it: healthy, warning, paused for new contacts,
// paused; why, since when, until when) and, for each instance, its own settings (spam guard,
// downstream inbox, events webhook) edited in place.
import { api } from "../api.js";
import { h, clear, field, table, uid } from "../dom.js";
import { t, tMaybe, formatDate, formatPhone } from "../i18n.js";

const FRAMES = new Set(["instance.connection.changed", "number.health.changed"]);
const HEALTH_CLASS = { healthy: "ok", warning: "warn", paused_for_new_contacts: "warn", paused: "off" };
// What is typed in an instance's settings survives the re-renders live frames cause.
const drafts = new Map(); // instance name -> {spamguardEnabled, inboxId, eventsWebhookUrl}

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
      const kindOf = new Map(providers.map((provider) => [provider.id, provider.kind]));
      if (!numbers.length) {
        clear(body, h("p", {}, t("numbers.empty")));
        return;
      }
      // Keep focus where it was across a live re-render (the settings of the instance being edited).
      const focused = document.activeElement && body.contains(document.activeElement) ? document.activeElement : null;
      const focusedForm = focused && focused.form ? focused.form.dataset.instance : null;
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
                      ),
                    ),
                  ),
                  own.map((instance) => settingsForm(instance, { notify, reload })),
                ]
              : h("p", {}, t("numbers.noInstances")),
          );
        }),
      );
      if (focusedForm) {
        const form = Array.from(body.querySelectorAll("form")).find((each) => each.dataset.instance === focusedForm);
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
