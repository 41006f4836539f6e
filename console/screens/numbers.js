// The tenant's numbers at a glance: one row per number (its name, its instances with their
// connection and health, in how many API keys' pools it is, messages it sent today), searchable
// and filtered by connection and health. An instance's settings, its number's pace and its
// pairing are on its own screen (#/instances/<name>); connecting a new number on #/numbers/connect.
import { api } from "../api.js";
import { h, clear, field, table, badge, healthBadge, showRefusal, clearRefusal, refusalSlot } from "../dom.js";
import { t, formatPhone } from "../i18n.js";
import { healthDetails } from "./instance.js";

const FRAMES = new Set(["instance.connection.changed", "number.health.changed", "pool.changed"]);
const HEALTH_ORDER = ["healthy", "warning", "paused_for_new_contacts", "paused"];
// The filters survive the re-reads live frames cause and a language switch.
const filters = { text: "", connection: "all", health: "all" };


/** The worst health of a number's instances (a number is as healthy as its sickest instance). */
function worst(healths) {
  const known = healths.filter(Boolean).map((health) => health.state);
  if (!known.length) return null;
  return known.reduce((a, b) => (HEALTH_ORDER.indexOf(b) > HEALTH_ORDER.indexOf(a) ? b : a));
}

function today() {
  return new Date().toISOString().slice(0, 10); // UTC, as the usage counts days
}

export function mount(main) {
  const body = h("div", { class: "stack", "aria-busy": "true" });
  const slot = refusalSlot(); // what could not be read, where the table is
  const count = h("p", { role: "status", class: "hint", dataset: { field: "count" } });
  const search = h("input", { type: "search", name: "search", value: filters.text, autocomplete: "off", spellcheck: "false" });
  const connection = h(
    "select",
    { name: "connection" },
    ["all", "connected", "disconnected"].map((value) => h("option", { value, selected: filters.connection === value }, t(`numbers.filter.connection.${value}`))),
  );
  const healthFilter = h(
    "select",
    { name: "health" },
    ["all", ...HEALTH_ORDER].map((value) => h("option", { value, selected: filters.health === value }, value === "all" ? t("numbers.filter.health.all") : t(`health.${value}`))),
  );
  const filterForm = h(
    "form",
    { class: "filters", role: "search", "aria-label": t("numbers.filter.label"), onsubmit: (event) => event.preventDefault() },
    field(t("numbers.filter.search"), search),
    field(t("numbers.filter.connection"), connection),
    field(t("numbers.filter.health"), healthFilter),
  );
  main.append(
    h("h1", {}, t("numbers.title")),
    h("p", {}, t("numbers.intro")),
    h("p", {}, h("a", { href: "#/numbers/connect", class: "button" }, t("numbers.connect"))),
    filterForm,
    count,
    slot,
    body,
  );

  let rows = []; // {number, instances, healths, connected, health, pools, today, text}

  function render() {
    const text = filters.text.trim().toLowerCase();
    const digits = text.replace(/\D/g, "");
    const shown = rows.filter(
      (row) =>
        (!text || row.text.includes(text) || (digits && row.number.number.includes(digits))) &&
        (filters.connection === "all" || (filters.connection === "connected") === row.connected) &&
        (filters.health === "all" || row.health === filters.health),
    );
    clear(count, t("numbers.count", { shown: shown.length, total: rows.length }));
    if (!rows.length) {
      clear(body, h("p", {}, t("numbers.empty")), h("p", {}, h("a", { href: "#/numbers/connect" }, t("numbers.connectFirst"))));
      return;
    }
    clear(
      body,
      table(
        t("numbers.caption"),
        [
          t("numbers.col.number"),
          t("numbers.col.name"),
          t("numbers.col.instances"),
          t("numbers.col.state"),
          t("numbers.col.health"),
          t("numbers.col.pools"),
          t("numbers.col.today"),
        ],
        shown.map((row) =>
          h(
            "tr",
            { dataset: { number: row.number.id } },
            h("th", { scope: "row", class: "phone" }, formatPhone(row.number.number)),
            h(
              "td",
              {},
              row.number.displayName,
              row.number.wabaId
                ? [" ", h("a", { href: `#/numbers/${encodeURIComponent(row.number.id)}/templates` }, t("numbers.templates"))]
                : null,
            ),
            h(
              "td",
              {},
              row.instances.length
                ? h(
                    "ul",
                    { class: "plain", "aria-label": t("numbers.instancesOf", { number: formatPhone(row.number.number) }) },
                    row.instances.map((instance, index) =>
                      h(
                        "li",
                        { dataset: { instance: instance.name } },
                        h("a", { href: `#/instances/${encodeURIComponent(instance.name)}` }, instance.name),
                        " ",
                        badge(instance.state === "CONNECTED"),
                        " ",
                        h("span", { class: "hint" }, t(`kind.${instance.kind}`)),
                        h("div", { class: "instance-health", dataset: { field: "health" } }, healthDetails(row.healths[index], instance.name)),
                      ),
                    ),
                  )
                : h("span", { class: "hint" }, t("numbers.noInstances")),
            ),
            h("td", { dataset: { field: "connection" } }, badge(row.connected)),
            h("td", { dataset: { field: "health" } }, row.health ? healthBadge(row.health) : t("common.none")),
            h("td", { dataset: { field: "pools" } }, String(row.pools)),
            h("td", { dataset: { field: "today" } }, String(row.today)),
          ),
        ),
      ),
    );
  }

  for (const [control, key] of [
    [search, "text"],
    [connection, "connection"],
    [healthFilter, "health"],
  ]) {
    control.addEventListener(control === search ? "input" : "change", () => {
      filters[key] = control.value;
      render();
    });
  }

  async function reload() {
    body.setAttribute("aria-busy", "true");
    try {
      const month = today().slice(0, 7);
      const [numbers, instances, keys, usage] = await Promise.all([
        api.numbers(),
        api.instances(),
        api.keys(),
        api.usage(month).catch(() => []),
      ]);
      // One instance's health (or one key's pool) failing to load hides nothing else.
      const healths = new Map(
        await Promise.all(instances.map(async (instance) => [instance.name, await api.health(instance.name).catch(() => null)])),
      );
      const pools = await Promise.all(
        keys.filter((key) => key.numberSelectionMode === "pool").map((key) => api.pool(key.id).catch(() => [])),
      );
      const sentToday = new Map();
      for (const tag of usage) {
        for (const used of tag.instances) {
          const day = (used.days || []).find((each) => each.day === today());
          if (day) sentToday.set(used.instance, (sentToday.get(used.instance) || 0) + day.messagesOut);
        }
      }
      rows = numbers.map((number) => {
        const own = instances
          .filter((instance) => instance.numberId === number.id)
          .sort((a, b) => a.priority - b.priority || a.name.localeCompare(b.name));
        const ownHealths = own.map((instance) => healths.get(instance.name));
        return {
          number,
          instances: own,
          healths: ownHealths,
          connected: number.connected,
          health: worst(ownHealths),
          pools: pools.filter((pool) => pool.some((entry) => entry.whatsappNumberId === number.id)).length,
          today: own.reduce((sum, instance) => sum + (sentToday.get(instance.name) || 0), 0),
          text: `${number.displayName} ${own.map((instance) => instance.name).join(" ")}`.toLowerCase(),
        };
      });
      render();
      clearRefusal(null, slot);
    } catch (error) {
      showRefusal(error, { slot, context: t("numbers.loadFailed") });
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

