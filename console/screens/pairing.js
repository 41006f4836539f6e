// Pairing one instance's number with its provider, from the console: the code the provider draws
// (read again every few seconds, since the provider replaces it as it expires) until the phone
// scans it, then connected; reconnect and log out; a test message through this instance alone,
// sent by the send worker like any message and followed until it has left or failed.
// Used by the instance screen and by "connect a number".
import { api } from "../api.js";
import { h, clear, field, uid, badge, confirmDialog, showRefusal, clearRefusal, refusalSlot } from "../dom.js";
import { t } from "../i18n.js";
import { reasonWords, statusWords } from "../words.js";

const POLL_MS = 2000; // wuzapi's codes last 20 to 60 s, Evolution's 45 s: a few reads per code
// A test message is read back every second for a minute, until it has left or failed.
const FOLLOW_MS = 1000;
const FOLLOW_READS = 60;
const FINAL = new Set(["SENT", "DELIVERED", "READ"]);

/**
 * pairingPanel(instance, {provider, onChange}) -> {element, stop, onFrame}
 * `instance` as `GET /api/instances` lists it; `onChange(state)` when its connection changes.
 */
export function pairingPanel(instance, { provider, onChange = () => {} }) {
  const name = instance.name;
  let connection = instance.state;
  let timer = null;
  let stopped = false;
  const titleId = uid("pairing");
  const status = h("div", { class: "pairing-status", dataset: { field: "connection" } });
  const code = h("div", { class: "pairing-code", dataset: { field: "code" }, "aria-live": "polite" });
  const actions = h("div", { class: "actions" });
  const slot = refusalSlot();
  const element = h(
    "section",
    { class: "card pairing", "aria-labelledby": titleId, dataset: { instance: name } },
    h("h2", { id: titleId }, t("pairing.title", { instance: name })),
    status,
    code,
    actions,
    slot,
    testMessageForm(name),
  );

  function renderStatus() {
    clear(status, badge(connection === "CONNECTED"), " ", t(connection === "CONNECTED" ? "pairing.connected" : "pairing.notConnected"));
    const connected = connection === "CONNECTED";
    clear(
      actions,
      connected
        ? [
            button(t("pairing.reconnect", { instance: name }), t("pairing.reconnectShort"), connect, "secondary"),
            button(t("pairing.logout", { instance: name }), t("pairing.logoutShort"), logout, "danger"),
          ]
        : button(t("pairing.connect", { instance: name }), t("pairing.connectShort"), connect),
    );
  }

  function button(label, text, action, kind = "") {
    return h(
      "button",
      {
        type: "button",
        class: kind,
        "aria-label": label,
        onclick: async (event) => {
          const control = event.currentTarget;
          control.disabled = true;
          clearRefusal(null, slot);
          try {
            await action();
          } catch (error) {
            showRefusal(error, { slot, context: label });
          } finally {
            control.disabled = false;
          }
        },
      },
      text,
    );
  }

  function setConnection(state) {
    if (state === connection) return;
    connection = state;
    renderStatus();
    onChange(state);
  }

  /** What the provider says now: its code, or paired. */
  function show(answer) {
    setConnection(answer.connection);
    if (answer.state === "paired" || answer.connection === "CONNECTED") {
      stopPolling();
      clear(code, h("p", { class: "ok-text" }, t("pairing.paired", { instance: name })));
      return;
    }
    if (answer.state === "code" && answer.qrCode) {
      poll();
      // The same code read again changes nothing on the page (no flicker, nothing announced).
      const image = code.querySelector("img.qr");
      if (image && image.getAttribute("src") === answer.qrCode) return;
      if (image) {
        image.setAttribute("src", answer.qrCode);
        const counted = code.querySelector("[data-field=count]");
        if (counted) clear(counted, answer.count ? t("pairing.count", { count: answer.count }) : "");
        return;
      }
      clear(
        code,
        h("img", { src: answer.qrCode, alt: t("pairing.qrAlt", { instance: name }), class: "qr", width: "264", height: "264" }),
        h(
          "ol",
          { class: "steps" },
          h("li", {}, t("pairing.step1")),
          h("li", {}, t("pairing.step2")),
          h("li", {}, t("pairing.step3")),
        ),
        answer.pairingCode ? h("p", {}, t("pairing.pairingCode"), " ", h("strong", { class: "mono" }, answer.pairingCode)) : null,
        h("p", { class: "hint" }, t("pairing.refreshes"), " ", h("span", { dataset: { field: "count" } }, answer.count ? t("pairing.count", { count: answer.count }) : "")),
      );
      return;
    }
    if (answer.state === "starting") {
      clear(code, h("p", { class: "hint" }, t("pairing.starting")));
      poll();
      return;
    }
    stopPolling();
    clear(code, h("p", { class: "hint" }, t("pairing.notStarted")));
  }

  async function connect() {
    show(await api.connectInstance(name));
  }

  async function logout() {
    const sure = await confirmDialog({
      title: t("pairing.logoutTitle", { instance: name }),
      text: t("pairing.logoutText"),
      confirm: t("pairing.logoutShort"),
      cancel: t("common.cancel"),
    });
    if (!sure) return;
    const after = await api.logoutInstance(name);
    stopPolling();
    clear(code, h("p", { class: "hint" }, t("pairing.loggedOut")));
    setConnection(after.state);
  }

  function poll() {
    if (stopped || timer) return;
    timer = setTimeout(async () => {
      timer = null;
      if (stopped) return;
      try {
        show(await api.pairing(name));
      } catch (error) {
        stopPolling();
        showRefusal(error, { slot, context: t("pairing.readFailed", { instance: name }) });
      }
    }, POLL_MS);
  }

  function stopPolling() {
    clearTimeout(timer);
    timer = null;
  }

  renderStatus();
  if (provider && provider.kind === "meta") {
    clear(actions);
    clear(code, h("p", { class: "hint" }, t("pairing.meta")));
  } else if (connection !== "CONNECTED") {
    clear(code, h("p", { class: "hint" }, t("pairing.intro")));
  }

  return {
    element,
    setConnection,
    stop() {
      stopped = true;
      stopPolling();
    },
    /** A live frame: the instance's connection changed (its webhook arrived). */
    async onFrame(frame) {
      if (frame.type !== "instance.connection.changed") return;
      try {
        const fresh = await api.instance(name);
        setConnection(fresh.state);
        if (fresh.state === "CONNECTED") show({ state: "paired", connection: fresh.state });
      } catch {
        // The next frame or read says it again.
      }
    },
  };
}

/** A text through this instance alone, queued and sent like any message: followed until it is
 * SENT or FAILED, with a link to how it left (its trace). */
function testMessageForm(name) {
  const to = h("input", { type: "tel", name: "to", inputmode: "tel", autocomplete: "tel", required: true });
  const text = h("input", { type: "text", name: "text", value: t("pairing.testDefault"), required: true });
  const submit = h("button", { type: "submit" }, t("pairing.testSend"));
  const result = h("div", { "aria-live": "polite", dataset: { field: "test-result" } });
  const slot = refusalSlot();
  const titleId = uid("test");
  let following = null; // the timer of the message being followed
  const form = h(
    "form",
    { class: "stack", "aria-labelledby": titleId, novalidate: true, dataset: { instance: name } },
    h("h3", { id: titleId }, t("pairing.testTitle", { instance: name })),
    field(t("pairing.testTo"), to, t("pairing.testToHint")),
    field(t("pairing.testText"), text),
    h("div", { class: "actions" }, submit),
    slot,
    result,
  );

  function say(message) {
    const trace = h("a", { href: `#/messages/${encodeURIComponent(message.id)}` }, t("pairing.testTrace"));
    let words;
    if (message.status === "FAILED") words = t("pairing.testFailedAs", { reason: reasonWords(message.failureReason) });
    else if (FINAL.has(message.status)) words = t("pairing.testSent", { status: message.status });
    else words = t("pairing.testQueued", { status: statusWords(message.status) });
    clear(result, h("p", { dataset: { status: message.status } }, words, " ", trace));
  }

  /** Reads the message again every second until it is final (a paced one may wait longer:
   * after a minute its trace says the rest). */
  function follow(message, reads = 0) {
    say(message);
    if (FINAL.has(message.status) || message.status === "FAILED" || reads >= FOLLOW_READS) return;
    following = setTimeout(async () => {
      if (!form.isConnected) return;
      try {
        follow(await api.message(message.id), reads + 1);
      } catch (error) {
        showRefusal(error, { slot, context: t("pairing.testReadFailed") });
      }
    }, FOLLOW_MS);
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearRefusal(form, slot);
    clearTimeout(following);
    clear(result);
    submit.disabled = true;
    try {
      const queued = await api.testMessage(name, to.value.replace(/[^\d+]/g, ""), text.value.trim());
      follow({ id: queued.id, status: queued.status });
    } catch (error) {
      showRefusal(error, { form, slot, context: t("pairing.testFailed") });
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}
