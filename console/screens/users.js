// Users: the tenant's people (admins and attendants) — invite with a temporary password,
// change a role, disable or enable. Errors are shown at the field (or next to the row) they concern.
import { api } from "../api.js";
import { h, clear, field, table, uid, showRefusal, clearRefusal, refusalSlot } from "../dom.js";
import { t, formatDate } from "../i18n.js";

const ROLES = ["admin", "attendant"];

export function mount(main, { notify, me }) {
  const list = h("div", { "aria-busy": "true" });
  const listSlot = refusalSlot();
  const formSlot = refusalSlot();
  const email = h("input", { type: "email", name: "email", id: uid("user"), required: true, autocomplete: "off", spellcheck: "false" });
  const role = h("select", { name: "role", id: uid("user") }, ROLES.map((name) => h("option", { value: name }, t(`users.role.${name}`))));
  role.value = "attendant";
  const password = h("input", { type: "text", name: "temporaryPassword", id: uid("user"), required: true, autocomplete: "off", spellcheck: "false" });
  const submit = h("button", { type: "submit" }, t("users.invite"));
  const form = h(
    "form",
    { class: "card", novalidate: true, "aria-labelledby": "invite-title", onsubmit: invite },
    h("h2", { id: "invite-title" }, t("users.inviteTitle")),
    field(t("users.email"), email),
    field(t("users.roleLabel"), role),
    field(t("users.temporaryPassword"), password, t("users.temporaryPasswordHint")),
    submit,
    formSlot,
  );
  main.append(h("h1", {}, t("users.title")), listSlot, list, form);

  /** A problem found before anything is sent, said at its field like the API's own. */
  function refuseAt(name, reason) {
    showRefusal({ code: "validation_error", body: { fields: [{ field: name, reason }] } }, { form, slot: formSlot });
  }

  async function invite(event) {
    event.preventDefault();
    clearRefusal(form, formSlot);
    if (!email.value.trim() || !email.checkValidity()) {
      refuseAt("email", email.value.trim() ? "email_invalid" : "missing");
      return;
    }
    if (password.value.length < 12) {
      refuseAt("temporaryPassword", "password_short");
      return;
    }
    submit.disabled = true;
    try {
      const answer = await api.inviteUser({ email: email.value.trim(), role: role.value, temporaryPassword: password.value });
      form.reset();
      role.value = "attendant";
      notify.info(t("users.invited", { email: answer.user.email }));
      await reload();
    } catch (failure) {
      // An email already in the pool is the email's problem; the pool's password policy is the
      // temporary password's.
      const field = failure.code === "already_exists" ? "email" : failure.code === "invalid_input" ? "temporaryPassword" : null;
      if (field && failure.body && !failure.body.field) failure.body = { ...failure.body, field };
      showRefusal(failure, { form, slot: formSlot, context: t("users.inviteFailed") });
    } finally {
      submit.disabled = false;
    }
  }

  function row(user) {
    const self = user.id === me.attendantId;
    const status = refusalSlot();
    const select = h(
      "select",
      { "aria-label": t("users.roleOf", { email: user.email }), disabled: self },
      ROLES.map((name) => h("option", { value: name, selected: name === user.role }, t(`users.role.${name}`))),
    );
    select.addEventListener("change", () => change(user, { role: select.value }, status));
    const toggle = h(
      "button",
      { type: "button", class: user.enabled ? "danger" : "secondary", disabled: self, onclick: () => change(user, { enabled: !user.enabled }, status) },
      t(user.enabled ? "users.disable" : "users.enable", { email: user.email }),
    );
    return h(
      "tr",
      {},
      h("th", { scope: "row" }, user.email),
      h("td", {}, select),
      h("td", {}, t(user.enabled ? "users.enabled" : "users.disabled")),
      h("td", {}, formatDate(user.createdAt)),
      h("td", {}, toggle, status),
    );
  }

  async function change(user, changes, status) {
    clearRefusal(null, status);
    try {
      const updated = await api.updateUser(user.id, changes);
      notify.info(t(changes.enabled === false ? "users.disabledDone" : "users.changed", { email: updated.email }));
      await reload();
    } catch (failure) {
      showRefusal(failure, { slot: status, context: t("users.changeFailed", { email: user.email }) });
    }
  }

  async function reload() {
    list.setAttribute("aria-busy", "true");
    clearRefusal(null, listSlot);
    try {
      const answer = await api.users();
      clear(
        list,
        answer.users.length
          ? table(
              t("users.caption"),
              [t("users.email"), t("users.roleLabel"), t("users.status"), t("users.created"), t("common.actions")],
              answer.users.map(row),
            )
          : h("p", {}, t("users.none")),
      );
    } catch (failure) {
      clear(list);
      showRefusal(failure, { slot: listSlot, context: t("users.loadFailed") });
    } finally {
      list.removeAttribute("aria-busy");
    }
  }

  reload();
  return { reload };
}
