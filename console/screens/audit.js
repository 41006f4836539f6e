// The audit log: who changed what, when (newest first), with what each change altered.
import { api } from "../api.js";
import { h, clear, table, showRefusal, refusalSlot } from "../dom.js";
import { t, tMaybe, formatDate } from "../i18n.js";

const HIDDEN_FIELDS = new Set(["tenant", "createdAt", "created_at"]);

export function mount(main) {
  const result = h("div", { "aria-busy": "true" });
  main.append(h("h1", {}, t("audit.title")), h("p", {}, t("audit.intro")), result);

  async function reload() {
    result.setAttribute("aria-busy", "true");
    try {
      const [entries, keys] = await Promise.all([api.audit(100), api.keys()]);
      const keyNames = new Map(keys.map((key) => [key.id, key.name]));
      if (!entries.length) {
        clear(result, h("p", {}, t("audit.empty")));
        return;
      }
      clear(
        result,
        table(
          t("audit.caption"),
          [t("audit.when"), t("audit.who"), t("audit.action"), t("audit.target"), t("audit.changes")],
          entries.map((entry) =>
            h(
              "tr",
              {},
              h("td", {}, h("time", { datetime: entry.at }, formatDate(entry.at))),
              h("td", {}, who(entry, keyNames)),
              h("td", {}, tMaybe(`action.${entry.action}`) || entry.action, h("span", { class: "code" }, ` ${entry.action}`)),
              h("td", { class: "mono" }, entry.target),
              h("td", {}, changes(entry.before, entry.after)),
            ),
          ),
        ),
      );
    } catch (error) {
      const slot = refusalSlot();
      clear(result, slot);
      showRefusal(error, { slot, context: t("audit.loadFailed") });
    } finally {
      result.setAttribute("aria-busy", "false");
    }
  }

  /** A person by their email; a key by its name (or as revoked); else the system itself. */
  function who(entry, names) {
    if (entry.actorUser) return t("audit.person", { email: entry.actor || entry.actorUser });
    const keyId = entry.actorKeyId;
    if (!keyId) return t("audit.system");
    const name = names.get(keyId);
    return name ? `${name} (${keyId})` : t("audit.revokedKey", { id: keyId });
  }

  function changes(before, after) {
    const fields = new Set([...Object.keys(before || {}), ...Object.keys(after || {})]);
    const items = [];
    for (const name of fields) {
      if (HIDDEN_FIELDS.has(name)) continue;
      const old = before ? before[name] : undefined;
      const now = after ? after[name] : undefined;
      if (JSON.stringify(old) === JSON.stringify(now)) continue;
      items.push(h("li", {}, h("span", { class: "code" }, name), ": ", value(old), " → ", value(now)));
    }
    return items.length ? h("ul", { class: "changes" }, items) : t("common.none");
  }

  function value(v) {
    if (v === undefined || v === null) return "—";
    return typeof v === "object" ? JSON.stringify(v) : String(v);
  }

  reload();
  return { reload, onFrame: (frame) => frame.type === "pool.changed" };
}
