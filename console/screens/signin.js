// Sign-in with an API key (admin or agent scope).
import { h, field } from "../dom.js";
import { t } from "../i18n.js";

export function mount(main, { onSubmit, error, notify }) {
  const input = h("input", {
    type: "password",
    name: "apiKey",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
  });
  const button = h("button", { type: "submit" }, t("signin.submit"));
  const form = h(
    "form",
    {
      class: "card narrow",
      onsubmit: async (event) => {
        event.preventDefault();
        const key = input.value.trim();
        if (!key) {
          notify.error(t("signin.empty"));
          input.focus();
          return;
        }
        button.disabled = true;
        notify.clear();
        try {
          await onSubmit(key);
          input.value = "";
        } catch (failure) {
          notify.error(failure.message);
          button.disabled = false;
          input.focus();
        }
      },
    },
    field(t("signin.keyLabel"), input, t("signin.keyHint")),
    button,
  );
  main.append(h("h1", {}, t("signin.title")), h("p", {}, t("signin.intro")), form);
  if (error) notify.error(error);
  return {};
}
