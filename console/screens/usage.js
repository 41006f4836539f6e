// Messages in and out per owner tag and month, and per instance; the incoming ones by type.
import { api } from "../api.js";
import { h, clear, field, table, throttle, showRefusal, clearRefusal, refusalSlot } from "../dom.js";
import { t } from "../i18n.js";
import { contentWords } from "../words.js";

/** The types that came, most first: [[type, count], ...]. */
function byType(counts) {
  return Object.entries(counts || {}).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

/** An instance's incoming messages by type in one line: "texto 12 · imagem 3". */
function typesInLine(counts) {
  const types = byType(counts);
  return types.length ? types.map(([type, count]) => `${contentWords(type)} ${count}`).join(" · ") : t("common.none");
}

function thisMonth() {
  return new Date().toISOString().slice(0, 7);
}

export function mount(main) {
  const month = h("input", { type: "month", name: "month", required: true, value: thisMonth() });
  const result = h("div", {});
  const slot = refusalSlot(); // a refused month at its field, anything else after the button
  const form = h(
    "form",
    {
      class: "card inline",
      onsubmit: (event) => {
        event.preventDefault();
        reload();
      },
    },
    field(t("usage.month"), month, t("usage.monthHint")),
    h("button", { type: "submit" }, t("usage.show")),
  );
  form.append(slot);
  main.append(h("h1", {}, t("usage.title")), form, result);

  async function reload() {
    const value = month.value || thisMonth();
    result.setAttribute("aria-busy", "true");
    clearRefusal(form, slot);
    try {
      const summaries = await api.usage(value);
      if (!summaries.length) {
        clear(result, h("p", {}, t("usage.empty", { month: value })));
        return;
      }
      clear(
        result,
        summaries.map((summary) =>
          h(
            "section",
            { class: "card" },
            h("h2", {}, t("usage.ownerTitle", { owner: summary.ownerTag || t("usage.noOwner"), month: summary.month })),
            h(
              "dl",
              { class: "pairs" },
              h("dt", {}, t("usage.in")),
              h("dd", {}, String(summary.messagesIn)),
              h("dt", {}, t("usage.out")),
              h("dd", {}, String(summary.messagesOut)),
            ),
            byType(summary.messagesInByType).length
              ? table(
                  t("usage.byType", { month: summary.month }),
                  [t("usage.type"), t("usage.in")],
                  byType(summary.messagesInByType).map(([type, count]) =>
                    h("tr", { "data-type": type }, h("th", { scope: "row" }, contentWords(type)), h("td", {}, String(count))),
                  ),
                )
              : null,
            summary.instances.length
              ? table(
                  t("usage.byInstance", { month: summary.month }),
                  [t("usage.instance"), t("usage.in"), t("usage.out"), t("usage.inByType")],
                  summary.instances.map((instance) =>
                    h(
                      "tr",
                      {},
                      h("th", { scope: "row" }, instance.instance),
                      h("td", {}, String(instance.messagesIn)),
                      h("td", {}, String(instance.messagesOut)),
                      h("td", {}, typesInLine(instance.messagesInByType)),
                    ),
                  ),
                )
              : null,
          ),
        ),
      );
    } catch (error) {
      clear(result);
      showRefusal(error, { form, slot, context: t("usage.loadFailed") });
    } finally {
      result.setAttribute("aria-busy", "false");
    }
  }

  // Every message sent changes the counts: under a steady flow, re-read at most every 5 s.
  const reloadSoon = throttle(reload, 5000);
  reload();
  return {
    reload,
    onFrame: (frame) => {
      if (frame.type === "message.status.changed") reloadSoon();
      return false;
    },
  };
}
