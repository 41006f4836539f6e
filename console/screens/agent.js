// An agent key's landing: the administration screens need an admin key.
import { h } from "../dom.js";
import { t } from "../i18n.js";

export function mount(main, { me }) {
  main.append(
    h("h1", {}, t("agent.title")),
    h("p", {}, t("agent.signedIn", { name: me.name, tenant: me.tenant })),
    h("p", {}, t("agent.noAdmin")),
  );
  return {};
}
