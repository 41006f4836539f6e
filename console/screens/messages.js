// Messages: the tenant's message log, both directions, newest first (filters, a failures-only
// toggle, the text's start, the key's name, the number, the status and the reason in words, a link
// to each message's trace and to the customer's conversation), a page at a time; and one message
// looked up by id: status, source number, instance, attempts, the failure in the provider's own
// words, its media, and the trace of how its number was chosen, as a timeline. A refusal is said
// where it happened: a filter the API refused at its field, a page that could not be read next
// to the button that asked for it.
import { api } from "../api.js";
import { h, clear, field, table, uid, showRefusal, clearRefusal, refusalSlot } from "../dom.js";
import { t, tMaybe, lang, formatDate, formatPhone } from "../i18n.js";
import {
  statusWords,
  reasonWords,
  outcomeWords,
  providerCodeWords,
  contentWords,
  humanSize,
} from "../words.js";

const PHONE_FIELDS = new Set(["number", "resolvedNumber", "affinityNumber"]);
const STATUSES = [
  "QUEUED",
  "SENDING",
  "WAITING",
  "SENT",
  "DELIVERED",
  "READ",
  "FAILED",
  "RECEIVED",
  "FORWARDED",
  "NO_DOWNSTREAM",
  "IGNORED",
];
const PAGE = 50;
// The API's query parameters and the filter fields that set them.
const FILTER_FIELDS = {
  "query.to": "contact",
  "query.from": "contact",
  "query.number": "number",
  "query.since": "since",
  "query.until": "until",
  "query.status": "status",
  "query.direction": "direction",
};
// The list's filters survive going to a message and back.
let filters = { direction: "", status: "", failuresOnly: false, contact: "", number: "", since: "", until: "" };

export function mount(main, context) {
  const messageId = context.params[0];
  return messageId ? mountMessage(main, context, messageId) : mountList(main, context);
}

/** The search box for one message id, on the list and on a message. */
function lookUp(navigate, value) {
  const input = h("input", {
    type: "search",
    name: "messageId",
    required: true,
    maxlength: "64",
    autocomplete: "off",
    spellcheck: "false",
    value: value || "",
  });
  return h(
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
}

// --- the list -----------------------------------------------------------------------------------

/** Start and end of a local day as ISO instants, for `since`/`until`. */
function dayStart(day) {
  return day ? new Date(`${day}T00:00:00`).toISOString() : "";
}
function dayEnd(day) {
  return day ? new Date(`${day}T23:59:59.999`).toISOString() : "";
}

function query(current, cursor) {
  const digits = current.contact.replace(/[^0-9]/g, "");
  return {
    direction: current.direction,
    status: current.failuresOnly ? "FAILED" : current.status,
    to: digits && current.direction !== "in" ? `+${digits}` : "",
    from: digits && current.direction !== "out" ? `+${digits}` : "",
    number: current.number.trim(),
    since: dayStart(current.since),
    until: dayEnd(current.until),
    limit: PAGE,
    cursor,
  };
}

function mountList(main, { navigate }) {
  const direction = h(
    "select",
    { name: "direction" },
    ["", "out", "in"].map((value) =>
      h("option", { value, selected: filters.direction === value }, t(`messages.direction.${value || "any"}`)),
    ),
  );
  const status = h(
    "select",
    { name: "status", disabled: filters.failuresOnly },
    h("option", { value: "" }, t("messages.status.any")),
    STATUSES.map((value) => h("option", { value, selected: filters.status === value }, statusWords(value))),
  );
  const failuresId = uid("failures");
  const failuresOnly = h("input", {
    type: "checkbox",
    id: failuresId,
    name: "failuresOnly",
    checked: filters.failuresOnly,
    onchange: () => {
      status.disabled = failuresOnly.checked;
      apply();
    },
  });
  const contact = h("input", { type: "tel", name: "contact", inputmode: "tel", autocomplete: "off", value: filters.contact });
  const number = h("input", { type: "text", name: "number", autocomplete: "off", value: filters.number });
  const since = h("input", { type: "date", name: "since", value: filters.since });
  const until = h("input", { type: "date", name: "until", value: filters.until });
  const form = h(
    "form",
    { class: "card filters", "aria-label": t("messages.filters"), onsubmit: (event) => (event.preventDefault(), apply()) },
    h("div", { class: "filter-fields" }, [
      field(t("messages.direction"), direction),
      field(t("messages.statusFilter"), status),
      field(t("messages.contact"), contact, t("messages.contactHint")),
      field(t("messages.number"), number),
      field(t("messages.since"), since),
      field(t("messages.until"), until),
    ]),
    h("div", { class: "check switch" }, failuresOnly, h("label", { for: failuresId }, t("messages.failuresOnly"))),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit" }, t("messages.apply")),
      h("button", { type: "button", class: "secondary", onclick: reset }, t("messages.clear")),
    ),
  );
  const slot = refusalSlot();
  form.append(slot);
  const result = h("div", { class: "results", "aria-live": "polite", "aria-busy": "true" });
  main.append(h("h1", {}, t("messages.title")), h("p", {}, t("messages.intro")), lookUp(navigate), form, result);

  let items = [];
  let cursor = null;
  let pages = 0; // live updates re-read the first page only while no other page was loaded
  let reading = 0; // the latest read: an older one answering late is not shown over it
  let keyNames = new Map(); // an API key's id, or a person's `user:<id>`, -> its name
  let numberOf = new Map(); // number id -> digits: an incoming row names its number by id

  function read() {
    filters = {
      direction: direction.value,
      status: status.value,
      failuresOnly: failuresOnly.checked,
      contact: contact.value,
      number: number.value,
      since: since.value,
      until: until.value,
    };
  }

  function apply() {
    read();
    reload();
  }

  function reset() {
    filters = { direction: "", status: "", failuresOnly: false, contact: "", number: "", since: "", until: "" };
    direction.value = status.value = contact.value = number.value = since.value = until.value = "";
    failuresOnly.checked = false;
    status.disabled = false;
    reload();
  }

  async function reload() {
    result.setAttribute("aria-busy", "true");
    clear(result, h("p", { class: "loading" }, t("messages.loading")));
    clearRefusal(form, slot);
    const read = ++reading;
    try {
      const [page, keys, numbers, people] = await Promise.all([
        api.messages(query(filters)),
        api.keys().catch(() => []),
        api.numbers().catch(() => []),
        api.users().catch(() => ({ users: [] })),
      ]);
      keyNames = new Map([
        ...keys.map((key) => [key.id, key.name]),
        // A person's messages (an instance's test message) are theirs, not a key's.
        ...people.users.map((user) => [`user:${user.id}`, t("messages.person", { name: user.email })]),
      ]);
      if (read !== reading) return;
      numberOf = new Map(numbers.map((each) => [each.id, each.number]));
      items = page.items;
      cursor = page.cursor;
      pages = 1;
      render();
    } catch (error) {
      if (read !== reading) return;
      clear(result);
      showRefusal(error, { form, slot, context: t("messages.listFailed"), fields: FILTER_FIELDS });
    } finally {
      result.setAttribute("aria-busy", "false");
    }
  }

  async function more(button) {
    button.disabled = true;
    result.setAttribute("aria-busy", "true");
    try {
      const page = await api.messages(query(filters, cursor));
      items = items.concat(page.items);
      cursor = page.cursor;
      pages += 1;
      render();
    } catch (error) {
      button.disabled = false;
      showRefusal(error, { slot: button.parentElement.querySelector(".refusal-slot"), context: t("messages.listFailed") });
    } finally {
      result.setAttribute("aria-busy", "false");
    }
  }

  function render() {
    if (!items.length && !cursor) {
      clear(result, h("div", { class: "empty" }, h("p", {}, t("messages.empty")), h("p", { class: "hint" }, t("messages.emptyHint"))));
      return;
    }
    const loadMore = cursor ? h("button", { type: "button", class: "secondary", onclick: (event) => more(event.currentTarget) }, t("messages.more")) : null;
    const moreSlot = loadMore ? refusalSlot() : null;
    clear(
      result,
      table(
        t("messages.caption"),
        [
          t("messages.col.when"),
          t("messages.col.direction"),
          t("messages.col.contact"),
          t("messages.col.number"),
          t("messages.col.key"),
          t("messages.col.content"),
          t("messages.col.status"),
          t("messages.col.reason"),
          t("messages.col.links"),
        ],
        items.map(row),
      ),
      loadMore ? h("div", { class: "actions" }, loadMore, moreSlot) : null,
    );
  }

  function row(item) {
    const failed = item.status === "FAILED";
    const contactText = formatPhone(item.contact);
    return h(
      "tr",
      { class: failed ? "failed" : "", dataset: { id: item.id, status: item.status, direction: item.direction } },
      h("th", { scope: "row" }, h("time", { datetime: item.createdAt }, formatDate(item.createdAt))),
      h("td", {}, t(`messages.${item.direction}`)),
      h(
        "td",
        {},
        h(
          "a",
          { href: `#/contacts/${encodeURIComponent(item.contact)}`, "aria-label": t("messages.conversationLink", { contact: contactText }) },
          contactText,
        ),
      ),
      h("td", {}, numberCell(item)),
      h("td", {}, keyName(item.apiKeyId)),
      h("td", { class: "preview" }, content(item)),
      h("td", {}, h("span", { class: `state state-${item.status.toLowerCase()}` }, statusWords(item.status))),
      h("td", {}, why(item)),
      h(
        "td",
        {},
        item.direction === "out"
          ? h("a", { href: `#/messages/${encodeURIComponent(item.id)}`, "aria-label": t("messages.traceLinkLabel", { id: item.id }) }, t("messages.traceLink"))
          : null,
      ),
    );
  }

  function numberCell(item) {
    const digits = item.number || numberOf.get(item.numberId);
    return digits ? formatPhone(digits) : item.numberId || t("common.none");
  }

  function keyName(keyId) {
    if (!keyId) return t("messages.noKey");
    if (keyNames.has(keyId)) return keyNames.get(keyId);
    return keyId.startsWith("user:") ? t("messages.aPerson") : t("messages.unknownKey", { id: keyId });
  }

  reload();
  return {
    reload,
    onFrame: (frame) => frame.type === "message.status.changed" && pages <= 1,
  };
}

function content(item) {
  if (item.type === "text") return item.preview || t("common.none");
  const kind = `[${contentWords(item.type)}]`;
  return item.preview ? `${kind} ${item.preview}` : kind;
}

/** Why a row is where it is: the failure reason, the provider's code and words, an incoming outcome. */
function why(item) {
  const parts = [];
  if (item.direction === "in") {
    const outcome = outcomeWords(item.outcome);
    if (outcome) parts.push(h("p", {}, outcome));
  } else if (item.failureReason) {
    parts.push(h("p", {}, reasonWords(item.failureReason)));
  }
  const code = providerCodeWords(item.providerCode);
  if (code) parts.push(h("p", { class: "provider-code" }, code));
  if (item.providerMessage) parts.push(h("p", { class: "hint" }, item.providerMessage));
  return parts.length ? parts : t("common.none");
}

// --- one message --------------------------------------------------------------------------------

function mountMessage(main, { params, navigate }, messageId) {
  const result = h("div", { "aria-live": "polite" });
  const search = lookUp(navigate, params[0]);
  // A message that cannot be read is said under the search for it.
  const slot = refusalSlot();
  search.append(slot);
  main.append(h("h1", {}, t("messages.title")), h("p", {}, h("a", { href: "#/messages" }, t("messages.back"))), search, result);

  async function reload() {
    result.setAttribute("aria-busy", "true");
    try {
      const message = await api.message(messageId);
      // The contact's window is context: a lookup that fails leaves the message shown without it.
      render(message, await api.contactWindow(message.to).catch(() => null));
      clearRefusal(null, slot);
    } catch (error) {
      clear(result);
      showRefusal(error, { slot, context: t("messages.loadFailed", { id: messageId }) });
    } finally {
      result.setAttribute("aria-busy", "false");
    }
  }

  function render(message, windows) {
    const failed = message.status === "FAILED";
    const rows = [
      ["messages.status", h("span", { class: `state state-${message.status.toLowerCase()}` }, statusWords(message.status))],
      ["messages.to", h("a", { href: `#/contacts/${encodeURIComponent(message.to)}` }, formatPhone(message.to))],
      ["messages.sourceNumber", message.sourceNumber ? formatPhone(message.sourceNumber) : t("common.none")],
      // The message keeps its own type; this says its fallback template left in its place.
      ["messages.sentAs", message.sentAs ? t("messages.sentAsTemplate", message.sentAs) : t("messages.sentAsItself")],
      ["messages.instance", message.instance || t("common.none")],
      ...(message.pinnedInstance ? [["messages.pinnedInstance", message.pinnedInstance]] : []),
      ["messages.attempts", String(message.attempts)],
      ["messages.failureReason", message.failureReason ? reasonWords(message.failureReason) : t("common.none")],
      ["messages.providerCode", providerCodeWords(message.providerCode) || t("common.none")],
      ["messages.providerMessage", message.providerMessage || t("common.none")],
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
        { class: `card${failed ? " failed" : ""}`, "aria-labelledby": "message-title" },
        h("h2", { id: "message-title" }, t("messages.detailTitle", { id: message.id })),
        h("dl", { class: "pairs" }, rows.map(([label, value]) => [h("dt", {}, t(label)), h("dd", {}, value)])),
      ),
      message.media ? mediaSection(message.media) : null,
      windowSection(windows),
      h(
        "section",
        { class: "card", "aria-labelledby": "trace-title" },
        h("h2", { id: "trace-title" }, t("messages.trace")),
        message.trace.length ? h("ol", { class: "timeline" }, message.trace.map(traceItem)) : h("p", {}, t("messages.noTrace")),
      ),
    );
  }

  reload();
  return {
    reload,
    onFrame: (frame) => frame.type === "message.status.changed" && (frame.detail || {}).messageId === messageId,
  };
}

/** A media message's file: its type, caption, name, format and size, and a thumbnail of an image
 * (its `previewUrl` is a short-lived link to the file itself). */
// The customer-service window of each Cloud API number with the message's recipient.
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
          h(
            "span",
            { class: `badge ${item.open ? "ok" : "off"}` },
            h("span", { class: "dot", "aria-hidden": "true" }),
            t(item.open ? "messages.windowOpen" : "messages.windowClosed"),
          ),
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

function mediaSection(media) {
  const name = media.fileName || contentWords(media.type);
  const rows = [
    ["messages.mediaType", contentWords(media.type)],
    ["messages.mediaCaption", media.caption || t("common.none")],
    ["messages.mediaFileName", media.fileName || t("common.none")],
    ["messages.mediaMimeType", media.mimeType || t("common.none")],
    ["messages.mediaSize", humanSize(media.size, lang())],
  ];
  return h(
    "section",
    { class: "card", "aria-labelledby": "media-title" },
    h("h2", { id: "media-title" }, t("messages.media")),
    h("dl", { class: "pairs" }, rows.map(([label, value]) => [h("dt", {}, t(label)), h("dd", {}, value)])),
    media.previewUrl
      ? h("img", { class: "media-preview", src: media.previewUrl, alt: t("messages.mediaPreview", { name }), loading: "lazy" })
      : null,
  );
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
  if (name === "reason" && typeof value === "string") return reasonWords(value);
  if (name === "after" && typeof value === "string") return tMaybe(`stage.${value}`) || value;
  if (name === "providerCode" && (typeof value === "string" || typeof value === "number")) return providerCodeWords(value);
  if (PHONE_FIELDS.has(name) && typeof value === "string") return formatPhone(value);
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}
