// Sign-in: a person with their email and password (an invited person sets their own password
// first), or, for the platform operator and apps' keys, an API key (admin or agent scope).
import { h, field, uid, fieldError, errorText, showRefusal, refusalSlot } from "../dom.js";
import { t } from "../i18n.js";

/** The interface's words for an API refusal, by its code; the API's own text as a fallback. */
export function refusalText(error) {
  return errorText(error);
}

export { fieldError };

function input(attrs) {
  return h("input", { id: uid("signin"), required: true, spellcheck: "false", ...attrs });
}

export function mount(main, { onSubmit, onPerson, error, notify }) {
  const email = input({ type: "email", name: "email", autocomplete: "username" });
  const password = input({ type: "password", name: "password", autocomplete: "current-password" });
  const personButton = h("button", { type: "submit" }, t("signin.person.submit"));
  const personForm = h(
    "form",
    { class: "card narrow", novalidate: true, "aria-labelledby": "signin-person" },
    h("h2", { id: "signin-person" }, t("signin.person.title")),
    field(t("signin.person.email"), email),
    field(t("signin.person.password"), password),
    personButton,
  );
  personForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    fieldError(email, null);
    fieldError(password, null);
    notify.clear();
    if (!email.value.trim() || !email.checkValidity()) {
      fieldError(email, t(email.value.trim() ? "signin.person.emailInvalid" : "signin.person.emailEmpty"));
      email.focus();
      return;
    }
    if (!password.value) {
      fieldError(password, t("signin.person.passwordEmpty"));
      password.focus();
      return;
    }
    personButton.disabled = true;
    try {
      const answer = await onPerson.signIn(email.value.trim(), password.value);
      if (answer && answer.challenge === "new_password_required") {
        newPassword(main, { email: email.value.trim(), session: answer.session, onPerson, notify });
        return;
      }
      if (answer && answer.challenge === "software_token_mfa") {
        mfaCode(main, { email: email.value.trim(), session: answer.session, onPerson, notify });
        return;
      }
      password.value = "";
    } catch (failure) {
      personButton.disabled = false;
      const target = failure.code === "validation_error" ? email : password;
      fieldError(target, refusalText(failure));
      target.focus();
    }
  });

  const key = h("input", {
    id: uid("signin"),
    type: "password",
    name: "apiKey",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
  });
  const button = h("button", { type: "submit" }, t("signin.submit"));
  const keyForm = h(
    "form",
    {
      class: "card narrow",
      "aria-labelledby": "signin-key",
      onsubmit: async (event) => {
        event.preventDefault();
        const value = key.value.trim();
        fieldError(key, null);
        notify.clear();
        if (!value) {
          fieldError(key, t("signin.empty"));
          key.focus();
          return;
        }
        button.disabled = true;
        try {
          await onSubmit(value);
          key.value = "";
        } catch (failure) {
          fieldError(key, failure.message);
          button.disabled = false;
          key.focus();
        }
      },
    },
    h("h2", { id: "signin-key" }, t("signin.key.title")),
    h("p", {}, t("signin.intro")),
    field(t("signin.keyLabel"), key, t("signin.keyHint")),
    button,
  );
  main.append(h("h1", {}, t("signin.title")), personForm, keyForm);
  if (error) notify.error(error);
  return {};
}

/** The invited person's first sign-in: their own password, twice, replacing the temporary one. */
function newPassword(main, { email, session, onPerson, notify }) {
  const first = input({ type: "password", name: "newPassword", autocomplete: "new-password" });
  const second = input({ type: "password", name: "confirmPassword", autocomplete: "new-password" });
  const button = h("button", { type: "submit" }, t("signin.newPassword.submit"));
  const slot = refusalSlot();
  const form = h(
    "form",
    { class: "card narrow", novalidate: true },
    field(t("signin.newPassword.label"), first, t("signin.newPassword.hint")),
    field(t("signin.newPassword.confirm"), second),
    button,
    slot,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    fieldError(first, null);
    fieldError(second, null);
    notify.clear();
    slot.replaceChildren();
    if (first.value.length < 12) {
      fieldError(first, t("signin.newPassword.short"));
      first.focus();
      return;
    }
    if (first.value !== second.value) {
      fieldError(second, t("signin.newPassword.mismatch"));
      second.focus();
      return;
    }
    button.disabled = true;
    try {
      const answer = await onPerson.setNewPassword(email, session, first.value);
      if (answer && answer.challenge === "software_token_mfa") mfaCode(main, { email, session: answer.session, onPerson, notify });
    } catch (failure) {
      button.disabled = false;
      if (failure.code === "sign_in_refused") {
        // The challenge's session ended: nothing the password field can fix.
        showRefusal(failure, { slot });
        return;
      }
      fieldError(first, refusalText(failure));
      first.focus();
    }
  });
  main.replaceChildren(h("h1", {}, t("signin.newPassword.title")), h("p", {}, t("signin.newPassword.intro", { email })), form);
  const heading = main.querySelector("h1");
  heading.setAttribute("tabindex", "-1");
  heading.focus();
}

/** A person who turned on an authenticator app: the six digits it shows now. */
function mfaCode(main, { email, session, onPerson, notify }) {
  const code = input({ type: "text", name: "code", inputmode: "numeric", autocomplete: "one-time-code", maxlength: "6", pattern: "[0-9]{6}" });
  const button = h("button", { type: "submit" }, t("signin.mfa.submit"));
  const slot = refusalSlot();
  const form = h("form", { class: "card narrow", novalidate: true }, field(t("signin.mfa.label"), code, t("signin.mfa.hint")), button, slot);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    fieldError(code, null);
    notify.clear();
    slot.replaceChildren();
    const digits = code.value.replace(/\s/g, "");
    if (!/^[0-9]{6}$/.test(digits)) {
      fieldError(code, t("signin.mfa.format"));
      code.focus();
      return;
    }
    button.disabled = true;
    try {
      await onPerson.answerMfa(email, session, digits);
    } catch (failure) {
      button.disabled = false;
      if (failure.code === "sign_in_refused") {
        showRefusal(failure, { slot, context: t("signin.mfa.again") });
        return;
      }
      fieldError(code, refusalText(failure));
      code.focus();
    }
  });
  main.replaceChildren(h("h1", {}, t("signin.mfa.title")), h("p", {}, t("signin.mfa.intro", { email })), form);
  const heading = main.querySelector("h1");
  heading.setAttribute("tabindex", "-1");
  heading.focus();
}
