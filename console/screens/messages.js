// A message looked up by id: status, source number, instance, attempts, failure reason, and the
// trace of how its number was chosen, as a timeline.
import { api } from "../api.js";
import { h, clear, field } from "../dom.js";
import { t, tMaybe, formatDate, formatPhone } from "../i18n.js";

const PHONE_FIELDS = new Set(["number", "resolvedNumber", "affinityNumber"]);

export function mount(main, { params, notify, navigate }) {
  const messageId = params[0];
  const input = h("input", { type: "search", name: "messageId", required: true, maxlength: "64", autocomplete: "off", spellcheck: "false", value: messageId || "" });
  const form = h(
    "form",
    {
      class: "card inline",
      role: "search",
      onsubmit: (event) => {
        event.preventDefault();
        const id = input.value.trim();
        if (id) navigate(`#/messages/${encodeURIComponent(id)}`);
      },
    },
    field(t("messages.idLabel"), input),
    h("button", { type: "submit" }, t("messages.lookUp")),
  );
  const result = h("div", { "aria-live": "polite" });
  main.append(h("h1", {}, t("messages.title")), form, result);

  async function reload() {
    if (!messageId) return;
    result.setAttribute("aria-busy", "true");
    try {
      const message = await api.message(messageId);
      // The contact's window is context: a lookup that fails leaves the message shown without it.
      render(message, await api.contactWindow(message.to).catch(() => null));
    } catch (error) {
      clear(result);
      notify.error(error, t("messages.loadFailed", { id: messageId }));
    } finally {
      result.setAttribute("aria-busy", "false");
    }
  }

  function render(message, windows) {
    const rows = [
      ["messages.status", h("span", { class: `status-${message.status.toLowerCase()}` }, tMaybe(`status.${message.status}`) || message.status)],
      ["messages.to", formatPhone(message.to)],
      ["messages.sourceNumber", message.sourceNumber ? formatPhone(message.sourceNumber) : t("common.none")],
      ["messages.instance", message.instance || t("common.none")],
      ["messages.attempts", String(message.attempts)],
      ["messages.failureReason", message.failureReason ? reason(message.failureReason) : t("common.none")],
      ["messages.lastError", message.lastError || t("common.none")],
      ["messages.validFor", t("messages.seconds", { seconds: message.validFor })],
      ["messages.expiresAt", formatDate(message.expiresAt)],
      ["messages.nextCheckAt", formatDate(message.nextCheckAt)],
      ["messages.createdAt", formatDate(message.createdAt)],
      ["messages.sentAt", formatDate(message.sentAt)],
      ["messages.deliveredAt", formatDate(message.deliveredAt)],
      ["messages.readAt", formatDate(message.readAt)],
    ];
    clear(
      result,
      h(
        "section",
        { class: "card", "aria-labelledby": "message-title" },
        h("h2", { id: "message-title" }, t("messages.detailTitle", { id: message.id })),
        h("dl", { class: "pairs" }, rows.map(([label, value]) => [h("dt", {}, t(label)), h("dd", {}, value)])),
      ),
      windowSection(windows),
      h(
        "section",
        { class: "card", "aria-labelledby": "trace-title" },
        h("h2", { id: "trace-title" }, t("messages.trace")),
        message.trace.length
          ? h("ol", { class: "timeline" }, message.trace.map(traceItem))
          : h("p", {}, t("messages.noTrace")),
      ),
    );
  }

  // The customer-service window of each Cloud API number with this message's recipient.
  function windowSection(windows) {
    const cloud = windows ? windows.numbers.filter((item) => item.serviceWindow) : [];
    if (!cloud.length) return null;
    return h(
      "section",
      { class: "card", "aria-labelledby": "window-title" },
      h("h2", { id: "window-title" }, t("messages.window")),
      h("p", { class: "hint" }, t("messages.windowHint")),
      h(
        "ul",
        { "aria-label": t("messages.window") },
        cloud.map((item) =>
          h(
            "li",
            { dataset: { window: item.open ? "open" : "closed" } },
            h("span", { class: `badge ${item.open ? "ok" : "off"}` }, h("span", { class: "dot", "aria-hidden": "true" }), t(item.open ? "messages.windowOpen" : "messages.windowClosed")),
            " ",
            formatPhone(item.number),
            " — ",
            item.open
              ? t("messages.windowUntil", { date: formatDate(item.windowOpenUntil) })
              : item.lastHeardAt
                ? t("messages.windowLastHeard", { date: formatDate(item.lastHeardAt) })
                : t("messages.windowNeverWrote"),
          ),
        ),
      ),
    );
  }

  function reason(code) {
    const words = tMaybe(`reason.${code}`);
    return words ? `${words} (${code})` : code;
  }

  function traceItem(entry) {
    const title = tMaybe(`stage.${entry.stage}`) || entry.stage;
    const data = Object.entries(entry.data || {});
    return h(
      "li",
      {},
      h("time", { datetime: entry.at }, formatDate(entry.at)),
      h("p", { class: "stage" }, title, title !== entry.stage ? h("span", { class: "code" }, ` ${entry.stage}`) : null),
      data.length
        ? h(
            "dl",
            { class: "pairs small" },
            data.map(([name, value]) => [h("dt", {}, tMaybe(`field.${name}`) || name), h("dd", {}, show(name, value))]),
          )
        : null,
    );
  }

  function show(name, value) {
    if (value === null || value === undefined) return t("common.none");
    if (name === "reason" && typeof value === "string") return reason(value);
    if (PHONE_FIELDS.has(name) && typeof value === "string") return formatPhone(value);
    if (typeof value === "object") return JSON.stringify(value);
    return String(value);
  }

  reload();
  return {
    reload,
    onFrame: (frame) => frame.type === "message.status.changed" && (frame.detail || {}).messageId === messageId,
  };
}
