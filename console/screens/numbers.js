// Numbers and their instances: provider kind, priority, kind, connection state, last change.
import { api } from "../api.js";
import { h, clear, table } from "../dom.js";
import { t, formatDate, formatPhone } from "../i18n.js";

export function badge(connected) {
  return h(
    "span",
    { class: `badge ${connected ? "ok" : "off"}` },
    h("span", { class: "dot", "aria-hidden": "true" }),
    t(connected ? "state.connected" : "state.disconnected"),
  );
}

export function mount(main, { notify }) {
  const body = h("div", { class: "stack", "aria-busy": "true" });
  main.append(h("h1", {}, t("numbers.title")), h("p", {}, t("numbers.intro")), body);

  async function reload() {
    body.setAttribute("aria-busy", "true");
    try {
      const [numbers, instances, providers] = await Promise.all([api.numbers(), api.instances(), api.providers()]);
      const kindOf = new Map(providers.map((provider) => [provider.id, provider.kind]));
      if (!numbers.length) {
        clear(body, h("p", {}, t("numbers.empty")));
        return;
      }
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
              ? table(
                  t("numbers.instancesOf", { number: formatPhone(number.number) }),
                  [
                    t("numbers.col.instance"),
                    t("numbers.col.provider"),
                    t("numbers.col.priority"),
                    t("numbers.col.kind"),
                    t("numbers.col.state"),
                    t("numbers.col.changed"),
                  ],
                  own.map((instance) =>
                    h(
                      "tr",
                      {},
                      h("th", { scope: "row" }, instance.name),
                      h("td", {}, kindOf.get(instance.providerId) || instance.providerId),
                      h("td", {}, String(instance.priority)),
                      h("td", {}, t(`kind.${instance.kind}`)),
                      h("td", {}, badge(instance.state === "CONNECTED")),
                      h("td", {}, formatDate(instance.stateChangedAt)),
                    ),
                  ),
                )
              : h("p", {}, t("numbers.noInstances")),
          );
        }),
      );
    } catch (error) {
      notify.error(error, t("numbers.loadFailed"));
    } finally {
      body.setAttribute("aria-busy", "false");
    }
  }

  reload();
  return {
    reload,
    onFrame: (frame) => frame.type === "instance.connection.changed",
  };
}
