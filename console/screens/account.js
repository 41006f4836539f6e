// A signed-in person's own account: two-step verification with an authenticator app, turned on
// (a new secret as a link the phone's app opens and as text to type, confirmed by the app's first
// code), replaced by another app, or turned off. From then on signing in asks for the app's code.
// Each change first asks for the person's password, and while an app is on for its current code:
// the API refuses a change on the tab's token alone, so an open tab is not the account.
import { api } from "../api.js";
import { h, clear, field, uid, copyField, showRefusal, clearRefusal, refusalSlot } from "../dom.js";
import { t } from "../i18n.js";

/** The secret in groups of four, as people copy it into an app by hand. */
function grouped(secret) {
  return secret.replace(/(.{4})/g, "$1 ").trim();
}

export function mount(main, { me, notify }) {
  const titleId = uid("two-step");
  const state = h("p", { dataset: { field: "two-step" } });
  const body = h("div", { class: "stack" });
  const section = h(
    "section",
    { class: "card stack", "aria-labelledby": titleId, "aria-busy": "true" },
    h("h2", { id: titleId }, t("account.twoStep.title")),
    h("p", {}, t("account.twoStep.intro")),
    state,
    body,
  );
  main.append(h("h1", {}, t("account.title")), h("p", {}, t("account.signedInAs", { email: me.name, tenant: me.tenant })), section);

  async function reload() {
    section.setAttribute("aria-busy", "true");
    try {
      render((await api.authenticator()).enabled);
    } catch (error) {
      clear(state);
      const slot = refusalSlot();
      clear(body, slot);
      showRefusal(error, { slot, context: t("account.twoStep.loadFailed") });
    } finally {
      section.setAttribute("aria-busy", "false");
    }
  }

  function render(enabled) {
    clear(state, h("strong", {}, t(enabled ? "account.twoStep.on" : "account.twoStep.off")));
    const actions = enabled
      ? [
          h("button", { type: "button", class: "secondary", onclick: () => prove("replace") }, t("account.twoStep.replace")),
          h("button", { type: "button", class: "danger", onclick: () => prove("turnOff") }, t("account.twoStep.turnOff")),
        ]
      : [h("button", { type: "button", onclick: () => prove("start") }, t("account.twoStep.turnOn"))];
    clear(body, h("div", { class: "actions" }, actions));
  }

  /** The person's password, and the current code of the app in use (replacing or turning it off),
   * before the change: a refusal is said at its field, and nothing changed. */
  function prove(change) {
    const withCode = change !== "start";
    const password = h("input", { type: "password", name: "password", autocomplete: "current-password", required: true });
    const code = codeInput();
    const intro = { start: "account.twoStep.proveStart", replace: "account.twoStep.proveReplace", turnOff: "account.twoStep.proveTurnOff" };
    const submitText = { start: "account.twoStep.continue", replace: "account.twoStep.continue", turnOff: "account.twoStep.turnOff" };
    const failed = { start: "account.twoStep.startFailed", replace: "account.twoStep.replaceFailed", turnOff: "account.twoStep.turnOffFailed" };
    const submit = h("button", { type: "submit", class: change === "turnOff" ? "danger" : "" }, t(submitText[change]));
    const cancel = h("button", { type: "button", class: "secondary", onclick: () => reload() }, t("common.cancel"));
    const slot = refusalSlot();
    const formTitle = uid("two-step-proof");
    const form = h(
      "form",
      { class: "stack", novalidate: true, "aria-labelledby": formTitle },
      h("h3", { id: formTitle }, t("account.twoStep.proveTitle")),
      h("p", {}, t(intro[change])),
      field(t("account.twoStep.password"), password, t("account.twoStep.passwordHint")),
      withCode ? field(t("signin.mfa.label"), code, t("signin.mfa.hint")) : null,
      h("div", { class: "actions" }, submit, cancel),
      slot,
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearRefusal(form, slot);
      const digits = code.value.replace(/\s/g, "");
      const problems = [];
      if (!password.value) problems.push({ field: "password", reason: "missing" });
      if (withCode && !/^[0-9]{6}$/.test(digits)) problems.push({ field: "code", reason: "mfa_format" });
      if (problems.length) {
        showRefusal({ code: "validation_error", body: { fields: problems } }, { form, slot });
        return;
      }
      submit.disabled = true;
      try {
        if (change === "turnOff") {
          await api.turnOffAuthenticator(password.value, digits);
          render(false);
          notify.info(t("account.twoStep.turnedOff"));
          main.querySelector("h1").focus();
        } else {
          setUp(await api.startAuthenticator(password.value, withCode ? digits : undefined));
        }
      } catch (error) {
        submit.disabled = false;
        showRefusal(error, { form, slot, context: t(failed[change]) });
      }
    });
    clear(body, form);
    password.focus();
  }

  /** The new secret, and the app's first code to confirm it. */
  function setUp(made) {
    const code = codeInput();
    const confirm = h("button", { type: "submit" }, t("account.twoStep.confirm"));
    const cancel = h("button", { type: "button", class: "secondary", onclick: () => reload() }, t("common.cancel"));
    const slot = refusalSlot();
    const formTitle = uid("two-step-code");
    const form = h(
      "form",
      { class: "stack", novalidate: true, "aria-labelledby": formTitle },
      h("h3", { id: formTitle }, t("account.twoStep.codeTitle")),
      field(t("signin.mfa.label"), code, t("signin.mfa.hint")),
      h("div", { class: "actions" }, confirm, cancel),
      slot,
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearRefusal(form, slot);
      const digits = code.value.replace(/\s/g, "");
      if (!/^[0-9]{6}$/.test(digits)) {
        showRefusal({ code: "validation_error", body: { fields: [{ field: "code", reason: "mfa_format" }] } }, { form, slot });
        return;
      }
      confirm.disabled = true;
      try {
        await api.confirmAuthenticator(digits);
        render(true);
        notify.info(t("account.twoStep.turnedOn"));
        main.querySelector("h1").focus();
      } catch (error) {
        confirm.disabled = false;
        showRefusal(error, { form, slot, context: t("account.twoStep.confirmFailed") });
      }
    });
    clear(
      body,
      h(
        "ol",
        { class: "steps" },
        h("li", {}, t("account.twoStep.step1")),
        h("li", {}, t("account.twoStep.step2"), " ", h("a", { href: made.uri }, t("account.twoStep.openApp"))),
        h("li", {}, t("account.twoStep.step3")),
      ),
      copyField(t("account.twoStep.secret"), grouped(made.secret), t("account.twoStep.copied")),
      form,
    );
    code.focus();
  }

  reload();
  return { reload };
}

/** A field for an authenticator app's six digits, as phones offer them from a message or an app. */
function codeInput() {
  return h("input", {
    type: "text",
    name: "code",
    inputmode: "numeric",
    autocomplete: "one-time-code",
    maxlength: "6",
    pattern: "[0-9]{6}",
    required: true,
    spellcheck: "false",
  });
}
