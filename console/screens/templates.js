// A Cloud API number's message templates, as its WhatsApp Business Account lists them at Meta:
// name, language, category, status, and what a send fills in. Read from switchboard's cache of a
// few minutes; "Read again from Meta" asks for them now.
import { api } from "../api.js";
import { h, clear, table, showRefusal, clearRefusal, refusalSlot } from "../dom.js";
import { t, tMaybe, formatDate, formatPhone } from "../i18n.js";

const STATUS_CLASS = { APPROVED: "ok", PENDING: "warn", PAUSED: "warn", REJECTED: "off", DISABLED: "off" };

export function mount(main, { params }) {
  const numberId = params[0];
  const heading = h("h1", {}, t("templates.title"));
  const intro = h("p", {}, t("templates.intro"));
  const refresh = h("button", { type: "button", onclick: () => reload(true) }, t("templates.refresh"));
  const result = h("div", { "aria-live": "polite", "aria-busy": "true" });
  const slot = refusalSlot(); // a listing that could not be read, next to the button that reads it again
  main.append(heading, intro, h("p", {}, h("a", { href: "#/numbers" }, t("templates.back")), " ", refresh), slot, result);

  async function reload(fromMeta = false) {
    result.setAttribute("aria-busy", "true");
    refresh.disabled = true;
    try {
      const [listing, numbers] = await Promise.all([api.templates(numberId, fromMeta), api.numbers()]);
      const number = numbers.find((each) => each.id === numberId);
      if (number) heading.textContent = t("templates.titleOf", { number: formatPhone(number.number) });
      render(listing);
      clearRefusal(null, slot);
    } catch (error) {
      clear(result);
      showRefusal(error, { slot, context: t("templates.loadFailed") });
    } finally {
      refresh.disabled = false;
      result.setAttribute("aria-busy", "false");
    }
  }

  function render(listing) {
    const read = t(listing.fromCache ? "templates.fromCache" : "templates.fromMeta", {
      date: formatDate(listing.fetchedAt),
      waba: listing.wabaId,
    });
    if (!listing.templates.length) {
      clear(result, h("p", {}, read), h("p", {}, t("templates.empty")));
      return;
    }
    clear(
      result,
      h("p", { class: "hint" }, read),
      table(
        t("templates.caption", { waba: listing.wabaId }),
        [t("templates.name"), t("templates.language"), t("templates.category"), t("templates.status"), t("templates.takes")],
        listing.templates.map((template) =>
          h(
            "tr",
            { dataset: { template: `${template.name}:${template.language}` } },
            h("th", { scope: "row", class: "mono" }, template.name),
            h("td", {}, template.language),
            h("td", {}, tMaybe(`templates.category.${template.category}`) || template.category || t("common.none")),
            h(
              "td",
              { dataset: { field: "status" } },
              h(
                "span",
                { class: `badge ${STATUS_CLASS[template.status] || "off"}` },
                h("span", { class: "dot", "aria-hidden": "true" }),
                tMaybe(`templates.status.${template.status}`) || template.status,
              ),
            ),
            h("td", {}, takes(template.takes)),
          ),
        ),
      ),
    );
  }

  function takes(summary) {
    const parts = [];
    if (summary.header && summary.header.format === "TEXT" && summary.header.parameters.length) {
      parts.push(t("templates.headerText", { count: summary.header.parameters.length }));
    } else if (summary.header && summary.header.format !== "TEXT") {
      parts.push(t("templates.headerFile", { format: tMaybe(`templates.header.${summary.header.format}`) || summary.header.format }));
    }
    if (summary.body.length) parts.push(t("templates.bodyTakes", { count: summary.body.length }));
    for (const button of summary.buttons) {
      if (!button.parameter) continue;
      const key = button.type === "QUICK_REPLY" ? "templates.buttonOptional" : "templates.buttonTakes";
      parts.push(t(key, { index: button.index, type: button.type, parameter: button.parameter }));
    }
    if (!parts.length) return t("templates.nothing");
    return h("ul", { class: "changes" }, parts.map((part) => h("li", {}, part)));
  }

  reload();
  return { reload: () => reload(false), onFrame: () => false };
}
