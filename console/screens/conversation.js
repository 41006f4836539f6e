// One customer's whole conversation across the pool: every message both ways, through any of the
// tenant's numbers, oldest first, a page at a time (the next page holds the newer ones).
import { api } from "../api.js";
import { h, clear, showRefusal, refusalSlot } from "../dom.js";
import { t, formatDate, formatPhone } from "../i18n.js";
import { statusWords, reasonWords, outcomeWords, providerCodeWords, contentWords } from "../words.js";

export function mount(main, { params }) {
  const contact = params[0] || "";
  const shown = formatPhone(contact);
  const result = h("div", { class: "results", "aria-live": "polite", "aria-busy": "true" });
  main.append(
    h("h1", {}, t("conversation.title", { contact: shown })),
    h("p", {}, t("conversation.intro")),
    h("p", {}, h("a", { href: "#/messages" }, t("messages.back"))),
    result,
  );

  let items = [];
  let cursor = null;

  async function reload() {
    result.setAttribute("aria-busy", "true");
    if (!items.length) clear(result, h("p", { class: "loading" }, t("conversation.loading")));
    try {
      const page = await api.conversation(contact);
      items = page.items;
      cursor = page.cursor;
      render();
    } catch (error) {
      const slot = refusalSlot();
      clear(result, slot);
      showRefusal(error, { slot, context: t("conversation.loadFailed", { contact: shown }) });
    } finally {
      result.setAttribute("aria-busy", "false");
    }
  }

  async function more(button) {
    button.disabled = true;
    result.setAttribute("aria-busy", "true");
    try {
      const page = await api.conversation(contact, cursor);
      items = items.concat(page.items);
      cursor = page.cursor;
      render();
    } catch (error) {
      button.disabled = false;
      showRefusal(error, { slot: button.parentElement.querySelector(".refusal-slot"), context: t("conversation.loadFailed", { contact: shown }) });
    } finally {
      result.setAttribute("aria-busy", "false");
    }
  }

  function render() {
    if (!items.length) {
      clear(
        result,
        h("div", { class: "empty" }, h("p", {}, t("conversation.empty")), h("p", { class: "hint" }, t("conversation.emptyHint"))),
      );
      return;
    }
    clear(
      result,
      h("ol", { class: "conversation", "aria-label": t("conversation.list", { contact: shown }) }, items.map(bubble)),
      cursor
        ? h(
            "div",
            { class: "actions" },
            h("button", { type: "button", class: "secondary", onclick: (event) => more(event.currentTarget) }, t("conversation.more")),
            refusalSlot(),
          )
        : null,
    );
  }

  reload();
  return {
    reload,
    onFrame: (frame) => frame.type === "message.status.changed" && !cursor,
  };
}

function bubble(item) {
  const outgoing = item.direction === "out";
  const failed = item.status === "FAILED";
  const who = outgoing
    ? item.number
      ? t("conversation.us", { number: formatPhone(item.number) })
      : t("conversation.usUnknown")
    : t("conversation.customer");
  const text = item.text || item.preview;
  const reason = outgoing ? (item.failureReason ? reasonWords(item.failureReason) : null) : outcomeWords(item.outcome);
  return h(
    "li",
    { class: `bubble ${outgoing ? "out" : "in"}${failed ? " failed" : ""}`, dataset: { id: item.id, status: item.status } },
    h("p", { class: "who" }, who, " · ", h("time", { datetime: item.createdAt }, formatDate(item.createdAt))),
    item.type !== "text" ? h("p", { class: "kind" }, `[${contentWords(item.type)}]`) : null,
    text ? h("p", { class: "text" }, text) : null,
    h(
      "p",
      { class: "meta" },
      h("span", { class: `state state-${item.status.toLowerCase()}` }, statusWords(item.status)),
      reason ? ` — ${reason}` : "",
      providerCodeWords(item.providerCode) ? ` — ${providerCodeWords(item.providerCode)}` : "",
      outgoing ? [" · ", h("a", { href: `#/messages/${encodeURIComponent(item.id)}`, "aria-label": t("messages.traceLinkLabel", { id: item.id }) }, t("messages.traceLink"))] : null,
    ),
  );
}
