// Webhook deliveries: every event posted to the tenant's webhook URLs (API keys' and instances'),
// each attempt's answer, the next try; a replay of one (after a confirmation) and of every failed
// delivery of a period. A refusal is said where it happened: a filter or a period at its field, a
// replay next to its button, a page that could not be read next to the button that asked for it.
import { api } from "../api.js";
import { h, clear, field, table, uid, confirmDialog, showRefusal, clearRefusal, refusalSlot } from "../dom.js";
import { t, formatDate } from "../i18n.js";

const STATUSES = ["retrying", "delivered", "failed", "dropped", "replaying"];
const STATUS_CLASS = { delivered: "ok", retrying: "warn", replaying: "warn", failed: "off", dropped: "off" };
const BUSY = new Set(["retrying", "replaying"]);
const PAGE = 50;
let filters = { status: "", deadOnly: false, event: "" };

function dayStart(day) {
  return new Date(`${day}T00:00:00`).toISOString();
}
function dayEnd(day) {
  return new Date(`${day}T23:59:59.999`).toISOString();
}

export function mount(main, { notify }) {
  const status = h(
    "select",
    { name: "status", disabled: filters.deadOnly },
    h("option", { value: "" }, t("deliveries.status.any")),
    STATUSES.map((value) => h("option", { value, selected: filters.status === value }, t(`deliveries.status.${value}`))),
  );
  const deadId = uid("dead");
  const deadOnly = h("input", {
    type: "checkbox",
    id: deadId,
    name: "deadOnly",
    checked: filters.deadOnly,
    onchange: () => {
      status.disabled = deadOnly.checked;
      apply();
    },
  });
  const event = h("input", { type: "text", name: "event", autocomplete: "off", placeholder: "message.failed", value: filters.event });
  const form = h(
    "form",
    { class: "card filters", "aria-label": t("deliveries.filters"), onsubmit: (e) => (e.preventDefault(), apply()) },
    h("div", { class: "filter-fields" }, [field(t("deliveries.statusFilter"), status), field(t("deliveries.event"), event)]),
    h("div", { class: "check switch" }, deadOnly, h("label", { for: deadId }, t("deliveries.deadOnly"))),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit" }, t("deliveries.apply")),
      h("button", { type: "button", class: "secondary", onclick: reset }, t("deliveries.clear")),
    ),
  );
  const slot = refusalSlot();
  form.append(slot);
  const result = h("div", { class: "results", "aria-live": "polite", "aria-busy": "true" });
  main.append(h("h1", {}, t("deliveries.title")), h("p", {}, t("deliveries.intro")), form, result, rangeForm());

  let items = [];
  let cursor = null;
  let keyNames = new Map();

  function apply() {
    filters = { status: status.value, deadOnly: deadOnly.checked, event: event.value.trim() };
    reload();
  }

  function reset() {
    filters = { status: "", deadOnly: false, event: "" };
    status.value = event.value = "";
    deadOnly.checked = false;
    status.disabled = false;
    reload();
  }

  function query(next) {
    return { status: filters.deadOnly ? "failed" : filters.status, event: filters.event, limit: PAGE, cursor: next };
  }

  async function reload() {
    result.setAttribute("aria-busy", "true");
    if (!items.length) clear(result, h("p", { class: "loading" }, t("deliveries.loading")));
    clearRefusal(form, slot);
    try {
      const [page, keys] = await Promise.all([api.deliveries(query()), api.keys().catch(() => [])]);
      keyNames = new Map(keys.map((key) => [key.id, key.name]));
      items = page.items;
      cursor = page.cursor;
      render();
    } catch (error) {
      clear(result);
      showRefusal(error, { form, slot, context: t("deliveries.listFailed"), fields: { "query.status": "status", "query.event": "event" } });
    } finally {
      result.setAttribute("aria-busy", "false");
    }
  }

  async function more(button) {
    button.disabled = true;
    try {
      const page = await api.deliveries(query(cursor));
      items = items.concat(page.items);
      cursor = page.cursor;
      render();
    } catch (error) {
      button.disabled = false;
      showRefusal(error, { slot: button.parentElement.querySelector(".refusal-slot"), context: t("deliveries.listFailed") });
    }
  }

  function render() {
    if (!items.length && !cursor) {
      clear(result, h("div", { class: "empty" }, h("p", {}, t("deliveries.empty")), h("p", { class: "hint" }, t("deliveries.emptyHint"))));
      return;
    }
    clear(
      result,
      table(
        t("deliveries.caption"),
        [
          t("deliveries.col.when"),
          t("deliveries.col.event"),
          t("deliveries.col.destination"),
          t("deliveries.col.status"),
          t("deliveries.col.attempts"),
          t("deliveries.col.last"),
          t("deliveries.col.next"),
          t("common.actions"),
        ],
        items.map(row),
      ),
      cursor
        ? h(
            "div",
            { class: "actions" },
            h("button", { type: "button", class: "secondary", onclick: (e) => more(e.currentTarget) }, t("deliveries.more")),
            refusalSlot(),
          )
        : null,
    );
  }

  function row(delivery) {
    const failed = delivery.status === "failed" || delivery.status === "dropped";
    return h(
      "tr",
      { class: failed ? "failed" : "", dataset: { id: delivery.id, status: delivery.status } },
      h("th", { scope: "row" }, h("time", { datetime: delivery.createdAt }, formatDate(delivery.createdAt)), h("p", { class: "code" }, delivery.id)),
      h("td", { class: "mono" }, delivery.event),
      h("td", {}, destination(delivery.destination)),
      h("td", {}, h("span", { class: `state state-${STATUS_CLASS[delivery.status] || "off"}` }, t(`deliveries.status.${delivery.status}`))),
      h("td", {}, String(delivery.attempts), history(delivery)),
      h("td", {}, answer(delivery.statusCode, delivery.latencyMs), errorWords(delivery.error, delivery.statusCode)),
      h("td", {}, delivery.nextRetryAt ? h("time", { datetime: delivery.nextRetryAt }, formatDate(delivery.nextRetryAt)) : t("common.none")),
      h("td", {}, replayButton(delivery), refusalSlot()),
    );
  }

  function destination(target) {
    if (target.type === "instance") return t("deliveries.destination.instance", { name: target.id });
    return t("deliveries.destination.apiKey", { name: keyNames.get(target.id) || target.id });
  }

  function history(delivery) {
    if (!delivery.history.length) return null;
    return h(
      "details",
      {},
      h("summary", { "aria-label": t("deliveries.historyLabel", { id: delivery.id }) }, t("deliveries.history")),
      h(
        "ol",
        { class: "attempts" },
        delivery.history.map((attempt) =>
          h(
            "li",
            {},
            h("time", { datetime: attempt.at }, formatDate(attempt.at)),
            " — ",
            answer(attempt.statusCode, attempt.latencyMs),
            " — ",
            t(`deliveries.status.${attempt.outcome}`),
            attempt.error ? ` (${attempt.error})` : "",
          ),
        ),
      ),
    );
  }

  function replayButton(delivery) {
    const busy = BUSY.has(delivery.status);
    return h(
      "button",
      {
        type: "button",
        class: "secondary",
        disabled: busy,
        title: busy ? t("deliveries.replayBusy") : undefined,
        "aria-label": t("deliveries.replayLabel", { id: delivery.id }),
        onclick: (e) => replay(delivery, e.currentTarget),
      },
      t("deliveries.replay"),
    );
  }

  async function replay(delivery, button) {
    const confirmed = await confirmDialog({
      title: t("deliveries.replayConfirmTitle", { id: delivery.id }),
      text: t("deliveries.replayConfirmText", { event: delivery.event }),
      confirm: t("deliveries.replay"),
      cancel: t("common.cancel"),
      danger: false,
    });
    if (!confirmed) return;
    const rowSlot = button.parentElement.querySelector(".refusal-slot");
    clearRefusal(null, rowSlot);
    button.disabled = true;
    try {
      await api.replayDelivery(delivery.id);
      notify.info(t("deliveries.replayed", { id: delivery.id }));
      await reload();
    } catch (error) {
      button.disabled = false;
      showRefusal(error, { slot: rowSlot, context: t("deliveries.replayFailed", { id: delivery.id }) });
      button.focus();
    }
  }

  function rangeForm() {
    const since = h("input", { type: "date", name: "since" });
    const until = h("input", { type: "date", name: "until" });
    const submit = h("button", { type: "submit" }, t("deliveries.rangeSubmit"));
    const titleId = uid("range");
    const rangeSlot = refusalSlot();
    let form = null;
    async function send(e) {
      e.preventDefault();
      clearRefusal(form, rangeSlot);
      const missing = [since, until].filter((input) => !input.value).map((input) => ({ field: input.name, reason: "missing" }));
      if (missing.length) {
        showRefusal({ code: "validation_error", body: { fields: missing } }, { form, slot: rangeSlot });
        return;
      }
      const confirmed = await confirmDialog({
        title: t("deliveries.rangeConfirmTitle"),
        text: t("deliveries.rangeConfirmText"),
        confirm: t("deliveries.rangeSubmit"),
        cancel: t("common.cancel"),
        danger: false,
      });
      if (!confirmed) return;
      submit.disabled = true;
      try {
        let replayed = 0;
        let answer = await api.replayFailedDeliveries(dayStart(since.value), dayEnd(until.value));
        replayed += answer.replayed.length;
        // Each call replays at most 100: go on until the period is done.
        while (answer.cursor) {
          answer = await api.replayFailedDeliveries(dayStart(since.value), dayEnd(until.value), answer.cursor);
          replayed += answer.replayed.length;
        }
        notify.info(t("deliveries.rangeDone", { count: replayed }));
        await reload();
      } catch (error) {
        showRefusal(error, { form, slot: rangeSlot, context: t("deliveries.rangeFailed") });
      } finally {
        submit.disabled = false;
      }
    }
    form = h(
      "form",
      { class: "card inline", "aria-labelledby": titleId, novalidate: true, onsubmit: send },
      h("h2", { id: titleId }, t("deliveries.rangeTitle")),
      field(t("deliveries.rangeSince"), since),
      field(t("deliveries.rangeUntil"), until),
      submit,
      rangeSlot,
    );
    return form;
  }

  reload();
  return { reload };
}

/** An attempt's error, unless its status code says it all already ("answered 503"). */
function errorWords(error, statusCode) {
  if (!error || error === `answered ${statusCode}`) return null;
  return h("p", { class: "hint" }, error);
}

function answer(statusCode, latencyMs) {
  const ms = latencyMs ?? 0;
  return statusCode === null || statusCode === undefined ? t("deliveries.noAnswer", { ms }) : t("deliveries.answer", { status: statusCode, ms });
}
