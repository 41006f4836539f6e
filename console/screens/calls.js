// The attendants' calls panel: per calls connection, the configured limit (version, source), live
// calls with who calls whom and their owner, pending dials, free slots and any excess after a
// reduction; dialing, answering (the call claimed and its audio attached in one click),
// transferring, hanging up, stopping the camera; the limit for admins; and the media of a call the
// signed-in attendant owns, bound to that call only. An incoming call nobody answered rings: a
// tone, and a browser notification once the attendant allowed them.
//
// The API is the state: live frames and reconnects only make the panel read it again. Opening the
// panel (and reconnecting live updates) asks the backend to reconcile with the provider; its 429
// inside the 10 s window means the data is already that fresh, so it is not reported.
import { api, ApiError } from "../api.js";
import { h, clear, field, table, badge, showRefusal, clearRefusal, refusalSlot } from "../dom.js";
import { t, formatDate, formatPhone } from "../i18n.js";

const MEDIA_KEY = "switchboard.media"; // calls this tab had media attached to: reattached after a reload
const REATTACH_WINDOW_MS = 25_000; // the backend keeps a dropped media session this long
const LIVE_STATES = new Set(["ringing", "connecting", "active"]);
const FRAMES = new Set([
  "connection.calls.config.changed",
  "call.state.changed",
  "line.occupancy.changed",
  "instance.connection.changed",
]);

// Module state outlives one mount (a language switch re-mounts the screen): the dial intentions
// (their Idempotency-Keys) and the media attachments.
const intents = new Map(); // instance -> {key, to, video}
// What is typed in the panel's fields survives the re-renders live frames cause.
const drafts = new Map(); // field key -> value
const dialing = new Set(); // instances with a dial in flight: its button stays off across re-renders
const media = new Map(); // "instance/callId" -> MediaAttachment
const NOTIFY_ASKED_KEY = "switchboard.callNotifications"; // asked once per browser, whatever the answer
const notified = new Set(); // "instance/callId" of incoming calls already announced
// A refusal is said next to the action that failed (a field of its form, or after its button)
// and kept there across the panel's re-reads, which live frames make often, until that action
// is tried again: action key ("dial/<line>", "call/<line>/<call id>", ...) -> {error, context}.
const said = new Map();

/** The ring: a soft two-tone beep every 2 s while an incoming call waits for someone. Web Audio
 * needs no file (the page's CSP loads none) and starts once the page had a click. */
const ring = {
  context: null,
  timer: null,
  start() {
    document.body.dataset.ring = "on";
    if (this.timer) return;
    const beep = () => {
      try {
        this.context = this.context || new AudioContext();
        const now = this.context.currentTime;
        for (const [offset, pitch] of [
          [0, 880],
          [0.25, 660],
        ]) {
          const tone = this.context.createOscillator();
          const gain = this.context.createGain();
          tone.frequency.value = pitch;
          gain.gain.setValueAtTime(0.08, now + offset);
          gain.gain.exponentialRampToValueAtTime(0.0001, now + offset + 0.2);
          tone.connect(gain).connect(this.context.destination);
          tone.start(now + offset);
          tone.stop(now + offset + 0.2);
        }
      } catch {
        // No audio output: the visible ring and the notification remain.
      }
    };
    beep();
    this.timer = setInterval(beep, 2000);
  },
  stop() {
    document.body.dataset.ring = "off";
    clearInterval(this.timer);
    this.timer = null;
  },
};

function phone(digits) {
  return digits ? formatPhone(digits) : t("calls.unknownNumber");
}

/** The other party of a call: who calls us, or whom we call. */
function otherParty(call) {
  return call.direction === "incoming" ? call.from : call.to;
}

function remembered() {
  try {
    return JSON.parse(sessionStorage.getItem(MEDIA_KEY) || "{}");
  } catch {
    return {};
  }
}

function remember(id, received) {
  const all = remembered();
  if (received === null) delete all[id];
  else all[id] = { received };
  sessionStorage.setItem(MEDIA_KEY, JSON.stringify(all));
}

/** One call's media: its own socket and its own MediaStream, never shared with another call. */
class MediaAttachment {
  constructor(instance, call, { onChange, onError }) {
    this.instance = instance;
    this.callId = call.callId;
    this.video = call.video;
    this.id = `${instance}/${call.callId}`;
    this.received = (remembered()[this.id] || {}).received || 0;
    this.state = "attaching"; // attaching | attached | reattaching | ended | failed
    this.resumed = false;
    this.onChange = onChange;
    this.onError = onError;
    this.socket = null;
    this.stream = null;
    this.recorder = null;
    this.droppedAt = null;
    this.stopped = false;
  }

  async start() {
    try {
      const attachment = await api.attachMedia(this.instance, this.callId);
      if (this.stopped) return;
      this.resumed = attachment.resumed;
      await this.bindDevices();
      this.open(attachment.mediaUrl);
    } catch (error) {
      this.fail(error);
    }
  }

  async bindDevices() {
    if (this.stream || !navigator.mediaDevices) return;
    this.stream = await navigator.mediaDevices.getUserMedia({ audio: true, video: Boolean(this.video) });
  }

  open(url) {
    const socket = new WebSocket(url);
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    socket.addEventListener("open", () => {
      this.state = "attached";
      this.droppedAt = null;
      remember(this.id, this.received);
      this.startSending();
      this.onChange();
    });
    socket.addEventListener("message", (event) => {
      // The provider tags each echoed frame with its call: only this call's frames count here.
      const prefix = `${this.callId}:`;
      const tagged =
        typeof event.data === "string"
          ? event.data.startsWith(prefix)
          : new TextDecoder().decode(new Uint8Array(event.data).slice(0, prefix.length)) === prefix;
      if (!tagged) return;
      this.received += 1;
      remember(this.id, this.received);
      this.onChange();
    });
    socket.addEventListener("close", (event) => {
      if (this.socket !== socket) return;
      this.stopSending();
      if (this.stopped) return;
      if (event.code === 4001) {
        this.end(); // the call ended at the provider
        return;
      }
      this.reattach();
    });
  }

  startSending() {
    if (!this.stream) return;
    const send = (data) => this.socket && this.socket.readyState === WebSocket.OPEN && this.socket.send(data);
    if (typeof MediaRecorder === "function") {
      try {
        this.recorder = new MediaRecorder(this.stream);
        this.recorder.addEventListener("dataavailable", (event) => {
          if (event.data && event.data.size) event.data.arrayBuffer().then(send);
        });
        this.recorder.start(250);
        return;
      } catch {
        this.recorder = null;
      }
    }
    // Without a recorder, a heartbeat per track still carries the call's media over its own socket.
    this.heartbeat = setInterval(() => {
      for (const track of this.stream.getTracks()) send(`${track.kind}:${track.label}`);
    }, 250);
  }

  stopSending() {
    if (this.recorder && this.recorder.state !== "inactive") this.recorder.stop();
    this.recorder = null;
    clearInterval(this.heartbeat);
  }

  /** A socket drop is not the end of the call: attach again (the backend resumes) within 25 s. */
  reattach() {
    if (this.droppedAt === null) this.droppedAt = Date.now();
    this.state = "reattaching";
    this.onChange();
    const elapsed = Date.now() - this.droppedAt;
    if (elapsed > REATTACH_WINDOW_MS) {
      this.fail(new Error(t("media.reattachExpired")));
      return;
    }
    setTimeout(() => !this.stopped && this.start(), Math.min(1000, 200 + elapsed / 10));
  }

  fail(error) {
    if (this.droppedAt !== null && error instanceof ApiError && error.status === 0) {
      this.reattach(); // the network is down: keep trying inside the window
      return;
    }
    this.state = "failed";
    this.release();
    this.onError(error);
    this.onChange();
  }

  end() {
    this.state = "ended";
    this.release();
    this.onChange();
  }

  release() {
    this.stopped = true;
    this.stopSending();
    if (this.socket && this.socket.readyState <= WebSocket.OPEN) this.socket.close(1000);
    this.socket = null;
    if (this.stream) for (const track of this.stream.getTracks()) track.stop();
    this.stream = null;
    media.delete(this.id);
    remember(this.id, null);
  }
}

/** A field whose typed value (or checked state) is kept across re-renders under `key`. */
function drafted(key, attrs, initial) {
  const checkbox = attrs.type === "checkbox";
  const kept = drafts.has(key) ? drafts.get(key) : initial;
  const input = h("input", { ...attrs, dataset: { key }, [checkbox ? "checked" : "value"]: kept });
  input.addEventListener(checkbox ? "change" : "input", () => drafts.set(key, checkbox ? input.checked : input.value));
  return input;
}

function forget(...keys) {
  for (const key of keys) drafts.delete(key);
}

function occupantLabel(occupant) {
  const what = occupant.callId || t("calls.reservation");
  const parts = [
    phone(otherParty(occupant)),
    what,
    t(`calls.direction.${occupant.direction}`),
    t(`calls.state.${occupant.state}`),
    occupant.video ? t("calls.video") : t("calls.voice"),
  ];
  parts.push(occupant.owner ? t("calls.ownedBy", { owner: occupant.owner }) : t("calls.noOwner"));
  return parts.join(" · ");
}

export function mount(main, { me, notify }) {
  const isAdmin = me.scopes.includes("admin");
  const myself = me.attendantId || me.keyId;
  // A person is named by their email rather than their id; others by their attendant id.
  const ownerName = (owner) => (owner === myself && String(me.keyId).startsWith("user:") ? me.name : owner);

  const body = h("div", { class: "stack", "aria-busy": "true" });
  const loadSlot = refusalSlot(); // what could not be read, above the lines
  const busy = new Map(); // instance -> the last line_busy refusal, shown until the next dial
  const ringing = h("div", { class: "ringing", dataset: { field: "ringing" } });
  const person = String(me.keyId).startsWith("user:");
  // Element.append writes a null as the text "null": only the parts this attendant has go in.
  const intro = isAdmin ? null : h("p", {}, t(person ? "calls.personIntro" : "calls.agentIntro", { name: me.name }));
  main.append(
    ...[h("h1", {}, t("calls.title")), h("p", { class: "note" }, t("calls.honest")), intro, notificationsOffer(), ringing, loadSlot, body].filter(Boolean),
  );

  /** The slot where `key`'s refusal is said, showing the one kept for it (its form's fields too). */
  function slotFor(key) {
    const slot = refusalSlot();
    slot.dataset.refusal = key;
    const kept = said.get(key);
    // Once the slot is in its form (the form is built around its children).
    if (kept) queueMicrotask(() => showRefusal(kept.error, { form: slot.closest("form"), slot, context: kept.context, focus: false }));
    return slot;
  }

  function slotsOf(key) {
    return main.querySelectorAll(`[data-refusal="${CSS.escape(key)}"]`);
  }

  /** `key`'s action was refused: say it at its slots and keep it for the next renders. */
  function sayAt(key, error, context) {
    said.set(key, { error, context });
    slotsOf(key).forEach((slot, index) => showRefusal(error, { form: slot.closest("form"), slot, context, focus: index === 0 }));
  }

  /** `key`'s action is tried again: what was said of it goes. */
  function unsay(key) {
    said.delete(key);
    for (const slot of slotsOf(key)) clearRefusal(slot.closest("form"), slot);
  }

  /** Ask once whether this browser may show a notification when a call rings. */
  function notificationsOffer() {
    if (typeof Notification !== "function" || Notification.permission !== "default" || localStorage.getItem(NOTIFY_ASKED_KEY)) {
      return null;
    }
    const offer = h(
      "div",
      { class: "notice" },
      h("p", {}, t("calls.notifyOffer")),
      h(
        "button",
        {
          type: "button",
          class: "secondary",
          onclick: async () => {
            localStorage.setItem(NOTIFY_ASKED_KEY, "asked");
            try {
              await Notification.requestPermission();
            } finally {
              offer.remove();
            }
          },
        },
        t("calls.notifyAllow"),
      ),
    );
    return offer;
  }

  /** Incoming calls nobody took: a tone while they wait, one notification each, and a box with
   * the caller's number and its "Atender" at the top of the panel. */
  function announce(views) {
    const waiting = [];
    for (const view of views) {
      for (const call of view.calls) {
        if (call.direction === "incoming" && !call.owner && LIVE_STATES.has(call.state)) waiting.push({ instance: view.instance, call });
      }
    }
    if (!waiting.length) {
      ring.stop();
      clear(ringing);
      return;
    }
    ring.start();
    for (const { instance, call } of waiting) {
      const id = `${instance}/${call.callId}`;
      if (notified.has(id)) continue;
      notified.add(id);
      if (typeof Notification === "function" && Notification.permission === "granted") {
        try {
          new Notification(t("calls.ringTitle"), { body: t("calls.ringBody", { number: phone(call.from), line: instance }), tag: id });
        } catch {
          // A browser without page notifications: the panel still rings.
        }
      }
    }
    clear(
      ringing,
      h(
        "div",
        { class: "notice ring", role: "alert" },
        waiting.map(({ instance, call }) =>
          h(
            "p",
            { dataset: { call: call.callId } },
            h("strong", {}, t("calls.ringing", { number: phone(call.from) })),
            " ",
            t("calls.ringingOn", { line: instance }),
            " ",
            answerButton(instance, call),
            slotFor(`answer/${instance}/${call.callId}`),
          ),
        ),
      ),
    );
  }

  /** "Atender": the call becomes this attendant's and its audio is attached, in one click. */
  function answerButton(instance, call) {
    return h(
      "button",
      {
        type: "button",
        "aria-label": t("calls.answer", { call: phone(call.from) }),
        onclick: async (event) => {
          const button = event.currentTarget;
          const key = `answer/${instance}/${call.callId}`;
          button.disabled = true;
          unsay(key);
          try {
            await api.claimCall(instance, call.callId);
            notify.info(t("calls.answered", { call: phone(call.from) }));
            startMedia(instance, { ...call, owner: myself });
            reload();
          } catch (error) {
            sayAt(key, error, t("calls.answer", { call: phone(call.from) }));
            button.disabled = false;
          }
        },
      },
      t("calls.answerShort"),
    );
  }

  async function reconcileAll(connections) {
    await Promise.all(
      connections.map((connection) => {
        const key = `reconcile/${connection.name}`;
        said.delete(key);
        return api.reconcile(connection.name).catch((error) => {
          // 429: reconciled by someone within the last 10 s; the data is that fresh.
          if (!(error instanceof ApiError) || (error.status !== 429 && error.status !== 409)) {
            said.set(key, { error, context: t("calls.reconcileFailed", { name: connection.name }) });
          }
        });
      }),
    );
  }

  let connections = [];
  async function reload({ reconcile = false } = {}) {
    body.setAttribute("aria-busy", "true");
    try {
      connections = await api.connections();
      if (reconcile) await reconcileAll(connections);
      const views = await Promise.all(connections.map((connection) => api.calls(connection.name)));
      if (!connections.length) {
        clear(body, h("p", {}, t("calls.empty")));
        return;
      }
      const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : null;
      clear(
        body,
        connections.map((connection, index) => renderConnection(connection, views[index])),
      );
      if (focused) {
        const again = body.querySelector(`[data-key="${CSS.escape(focused)}"]`);
        if (again) again.focus();
      }
      resumeMedia(views);
      announce(views);
      clearRefusal(null, loadSlot);
    } catch (error) {
      showRefusal(error, { slot: loadSlot, context: t("calls.loadFailed") });
    } finally {
      body.setAttribute("aria-busy", "false");
    }
  }

  /** After a reload of the tab: attach again to the calls this tab had media for, if still mine. */
  function resumeMedia(views) {
    const wanted = remembered();
    const mine = new Set();
    for (const view of views) {
      for (const call of view.calls) {
        const id = `${view.instance}/${call.callId}`;
        if (call.owner !== myself || !LIVE_STATES.has(call.state)) continue;
        mine.add(id);
        if (wanted[id] && !media.has(id)) startMedia(view.instance, call);
      }
    }
    // A remembered call that ended or changed hands while the tab was away is forgotten.
    for (const id of Object.keys(wanted)) if (!mine.has(id) && !media.has(id)) remember(id, null);
  }

  function startMedia(instance, call) {
    const attachment = new MediaAttachment(instance, call, {
      onChange: () => renderMedia(attachment),
      onError: (error) => {
        const context = error instanceof ApiError && error.code === "not_call_owner" ? "media.notOwner" : "media.failed";
        sayAt(`media/${instance}/${call.callId}`, error, t(context, { call: call.callId }));
      },
    });
    media.set(attachment.id, attachment);
    attachment.start();
    renderMedia(attachment);
  }

  function renderMedia(attachment) {
    const holder = body.querySelector(`[data-media="${CSS.escape(attachment.id)}"]`);
    if (!holder) return;
    const stateText = t(`media.state.${attachment.state}`);
    clear(
      holder,
      h(
        "span",
        { class: `badge ${attachment.state === "attached" ? "ok" : "off"}`, dataset: { state: attachment.state } },
        h("span", { class: "dot", "aria-hidden": "true" }),
        stateText,
      ),
      " ",
      h("span", { class: "frames" }, t("media.received", { count: attachment.received })),
      attachment.resumed ? h("span", { class: "hint" }, " ", t("media.resumed")) : null,
    );
  }

  function renderConnection(connection, view) {
    const title = connection.number
      ? `${formatPhone(connection.number)} (${connection.displayName}) · ${connection.name}`
      : connection.name;
    const section = h("section", { class: "card", "aria-label": t("calls.region", { name: connection.name }) });
    const source = view.source;
    const fact = (label, name, ...value) => h("div", {}, h("dt", {}, label), h("dd", { dataset: { field: name } }, ...value));
    const summary = h(
      "dl",
      { class: "facts" },
      fact(
        t("calls.limit"),
        "limit",
        view.limit === null ? t("calls.limitUnknown") : String(view.limit),
        view.version === null ? "" : ` (${t("calls.version", { version: view.version })}`,
        view.version === null ? "" : source ? ` · ${t(`calls.source.${source}`)})` : ")",
      ),
      fact(t("calls.occupancy"), "occupancy", String(view.occupancy)),
      fact(t("calls.available"), "available", view.available === null ? t("common.none") : String(view.available)),
    );
    section.append(h("h2", {}, title, " ", badge(view.connected)), summary, slotFor(`reconcile/${connection.name}`));
    if (view.excess) {
      section.append(h("p", { class: "notice", dataset: { field: "excess" } }, t("calls.excess", { count: view.excess, limit: view.limit })));
    }
    if (view.conflict) section.append(h("p", { class: "notice" }, t("calls.conflict")));
    section.append(readiness(view));
    if (!view.connected) section.append(h("p", { class: "notice" }, t("calls.disconnected")));

    const refusal = busy.get(connection.name);
    if (refusal) {
      // The box lists the calls that held the line when the dial was refused: those that ended
      // leave it, and it goes once none is left or a slot is free.
      const live = new Set([...view.calls, ...view.reservations].map((occupant) => occupant.id));
      const still = ((refusal.body && refusal.body.occupants) || []).filter((occupant) => live.has(occupant.id));
      if (still.length && !(view.available > 0)) section.append(lineBusy(refusal, still));
      else busy.delete(connection.name);
    }

    const parts = [callsTable(connection, view), reservationsList(connection, view), dialForm(connection, view)];
    section.append(...parts.filter(Boolean));
    if (isAdmin) section.append(limitForm(connection, view));
    return section;
  }

  function readiness(view) {
    const capabilities = view.capabilities;
    if (!capabilities) return h("p", { class: "notice" }, t("calls.capabilitiesUnknown"));
    const missing = [];
    if (!capabilities.calls) missing.push(t("calls.capability.calls"));
    if (!capabilities.callsPerInstanceLimit) missing.push(t("calls.capability.limit"));
    if (!capabilities.callsSettingsWebhook) missing.push(t("calls.capability.settingsWebhook"));
    const holder = h("div", { class: "readiness" });
    clear(
      holder,
      missing.length
        ? h("p", { class: "notice" }, t("calls.notReady", { missing: missing.join(", ") }))
        : h("p", {}, t("calls.serverReady")),
    );
    if (isAdmin) {
      const result = h("p", { role: "status" });
      holder.append(
        h(
          "button",
          {
            type: "button",
            class: "secondary",
            onclick: async (event) => {
              event.currentTarget.disabled = true;
              unsay(`subscription/${view.instance}`);
              try {
                const report = await api.prepareSubscription(view.instance);
                clear(
                  result,
                  report.ready
                    ? t("calls.subscriptionReady")
                    : t("calls.subscriptionNotReady", {
                        missing: report.missing.join(", ") || t("common.none"),
                      }),
                );
              } catch (error) {
                sayAt(`subscription/${view.instance}`, error, t("calls.subscriptionFailed"));
              } finally {
                event.currentTarget && (event.currentTarget.disabled = false);
              }
            },
          },
          t("calls.prepareSubscription", { name: view.instance }),
        ),
        result,
        slotFor(`subscription/${view.instance}`),
      );
    }
    return holder;
  }

  function lineBusy(refusal, occupants) {
    const limit = refusal.body ? refusal.body.limit : null;
    return h(
      "div",
      { class: "notice busy", role: "status", dataset: { field: "line-busy" } },
      h("h3", {}, t("calls.busyTitle")),
      h("p", {}, t("calls.busy", { limit: limit === null || limit === undefined ? t("common.none") : limit })),
      h(
        "ul",
        { "aria-label": t("calls.busyOccupants") },
        occupants.map((occupant) => h("li", {}, occupantLabel(occupant))),
      ),
    );
  }

  function callsTable(connection, view) {
    if (!view.calls.length) return h("p", {}, t("calls.none"));
    return table(
      t("calls.liveOf", { name: connection.name }),
      [
        t("calls.col.from"),
        t("calls.col.to"),
        t("calls.col.direction"),
        t("calls.col.state"),
        t("calls.col.kind"),
        t("calls.col.owner"),
        t("common.actions"),
        t("calls.col.media"),
        t("calls.col.call"),
      ],
      view.calls.map((call) => {
        const mine = call.owner === myself;
        const id = `${connection.name}/${call.callId}`;
        const mediaCell = h("td", { dataset: { media: id } });
        const actions = h("div", { class: "actions" });
        const callKey = `call/${id}`;
        // Short visible words; the accessible name says which call.
        const run = (text, label, fn, done) =>
          h(
            "button",
            {
              type: "button",
              class: "secondary",
              "aria-label": label,
              onclick: async (event) => {
                const button = event.currentTarget;
                button.disabled = true;
                unsay(callKey);
                try {
                  await fn();
                  if (done) notify.info(done);
                  reload();
                } catch (error) {
                  sayAt(callKey, error, label);
                  button.disabled = false;
                }
              },
            },
            text,
          );
        if (!call.owner) actions.append(answerButton(connection.name, call));
        if (mine || isAdmin) {
          actions.append(run(t("calls.hangupShort"), t("calls.hangup", { call: call.callId }), () => api.hangupCall(connection.name, call.callId), t("calls.hungUp", { call: call.callId })));
          if (call.video) {
            actions.append(run(t("calls.stopVideoShort"), t("calls.stopVideo", { call: call.callId }), () => api.stopVideo(connection.name, call.callId), t("calls.videoStopped", { call: call.callId })));
          }
          if (call.owner) actions.append(transferForm(connection, call));
        }
        if (call.owner) {
          actions.append(
            h(
              "button",
              {
                type: "button",
                "aria-label": t("media.attach", { call: call.callId }),
                disabled: media.has(id),
                onclick: () => {
                  unsay(`media/${id}`);
                  startMedia(connection.name, call);
                },
              },
              t("media.attachShort"),
            ),
          );
        }
        // Where a refusal of this row's actions is said (answering it included: someone else
        // may have answered first, which leaves the call's row, not the ringing box).
        actions.append(slotFor(`answer/${id}`), slotFor(callKey), slotFor(`media/${id}`));
        if (media.has(id)) setTimeout(() => renderMedia(media.get(id)));
        return h(
          "tr",
          { dataset: { call: call.callId } },
          h("th", { scope: "row", class: "phone", dataset: { field: "from" } }, phone(call.from)),
          h("td", { class: "phone", dataset: { field: "to" } }, phone(call.to)),
          h("td", {}, t(`calls.direction.${call.direction}`)),
          h("td", {}, t(`calls.state.${call.state}`)),
          h("td", {}, call.video ? t("calls.video") : t("calls.voice")),
          h("td", {}, call.owner ? (mine ? t("calls.you", { owner: ownerName(call.owner) }) : ownerName(call.owner)) : t("calls.noOwner")),
          h("td", {}, actions),
          mediaCell,
          h("td", { class: "mono call-id" }, call.callId),
        );
      }),
    );
  }

  function transferForm(connection, call) {
    const transferKey = `transfer/${connection.name}/${call.callId}`;
    const input = drafted(
      transferKey,
      {
        type: "text",
        name: "transferTo",
        autocomplete: "off",
        required: true,
        placeholder: t("calls.transferPlaceholder"),
        "aria-label": t("calls.transferTo", { call: call.callId }),
      },
      "",
    );
    return h(
      "form",
      {
        class: "transfer",
        onsubmit: async (event) => {
          event.preventDefault();
          unsay(transferKey);
          try {
            await api.claimCall(connection.name, call.callId, input.value.trim());
            forget(transferKey);
            notify.info(t("calls.transferred", { call: call.callId, to: input.value.trim() }));
            reload();
          } catch (error) {
            sayAt(transferKey, error, t("calls.transferFailed", { call: call.callId }));
          }
        },
      },
      input,
      h("button", { type: "submit", class: "secondary", "aria-label": t("calls.transfer", { call: call.callId }) }, t("calls.transferShort")),
      slotFor(transferKey),
    );
  }

  function reservationsList(connection, view) {
    if (!view.reservations.length) return null;
    return h(
      "div",
      {},
      h("h3", {}, t("calls.reservations")),
      h(
        "ul",
        { "aria-label": t("calls.reservationsOf", { name: connection.name }) },
        view.reservations.map((reservation) =>
          h("li", {}, occupantLabel(reservation), " · ", formatDate(reservation.since)),
        ),
      ),
    );
  }

  function dialForm(connection, view) {
    const intent = intents.get(connection.name);
    const toKey = `dial-to/${connection.name}`;
    const videoKey = `dial-video/${connection.name}`;
    const to = drafted(toKey, { type: "tel", name: "to", inputmode: "tel", autocomplete: "off", required: true }, intent ? intent.to : "");
    const dialKey = `dial/${connection.name}`;
    const video = drafted(videoKey, { type: "checkbox" }, intent ? intent.video : false);
    const submit = h("button", { type: "submit", disabled: !view.connected || dialing.has(connection.name), dataset: { key: `dial/${connection.name}` } }, t("calls.dial"));
    const form = h(
      "form",
      {
        "aria-label": t("calls.dialOn", { name: connection.name }),
        onsubmit: async (event) => {
          event.preventDefault();
          if (submit.disabled || dialing.has(connection.name)) return; // a double click: one is in flight
          const number = to.value.replace(/\D/g, "");
          let current = intents.get(connection.name);
          // One key per dial intention: a retry of the same dial reuses it, another dial gets a new one.
          if (!current || current.to !== number || current.video !== video.checked) {
            current = { key: crypto.randomUUID(), to: number, video: video.checked };
            intents.set(connection.name, current);
          }
          submit.disabled = true;
          dialing.add(connection.name);
          busy.delete(connection.name);
          unsay(dialKey);
          try {
            const answer = await api.dial(connection.name, number, current.video, current.key);
            if (answer.status === "pending") {
              notify.info(t("calls.dialPending"));
            } else {
              intents.delete(connection.name);
              forget(toKey, videoKey);
              notify.info(t("calls.dialed", { call: answer.call.callId }));
            }
          } catch (error) {
            if (error instanceof ApiError && error.code === "line_busy") {
              intents.delete(connection.name);
              busy.set(connection.name, error);
              notify.info(t("calls.busyTitle"));
            } else {
              // A definitive refusal ends this intention; a lost answer keeps its key for the retry.
              if (error instanceof ApiError && error.status >= 400 && error.status < 500) intents.delete(connection.name);
              said.set(dialKey, { error, context: t("calls.dialFailed") }); // said by the re-read below
            }
          } finally {
            dialing.delete(connection.name);
          }
          await reload();
        },
      },
      h("h3", {}, t("calls.dialTitle")),
      field(t("calls.dialTo"), to),
      h("div", { class: "check" }, h("label", {}, video, " ", t("calls.dialVideo"))),
      submit,
      slotFor(dialKey),
      view.connected ? null : h("p", { class: "hint" }, t("calls.dialDisabled")),
      intent ? h("p", { class: "hint" }, t("calls.dialRetry")) : null,
    );
    return form;
  }

  function limitForm(connection, view) {
    const limitKey = `limit/${connection.name}`;
    const input = drafted(
      limitKey,
      { type: "number", name: "callsMaxConcurrent", min: "1", max: "8", step: "1", required: true },
      view.limit === null ? "" : String(view.limit),
    );
    const refusalKey = `limit-refused/${connection.name}`;
    const submit = h("button", { type: "submit", dataset: { key: `save-limit/${connection.name}` } }, t("calls.saveLimit"));
    return h(
      "form",
      {
        "aria-label": t("calls.limitOf", { name: connection.name }),
        onsubmit: async (event) => {
          event.preventDefault();
          unsay(refusalKey);
          const limit = Number(input.value);
          if (!Number.isInteger(limit) || limit < 1 || limit > 8) {
            sayAt(refusalKey, { code: "validation_error", body: { fields: [{ field: "callsMaxConcurrent", reason: "limit_range" }] } }, "");
            return;
          }
          submit.disabled = true;
          try {
            const saved = await api.setCallsLimit(connection.name, limit);
            forget(limitKey);
            notify.info(t("calls.limitSaved", { limit: saved.limit, version: saved.version }));
          } catch (error) {
            // 502/504: the provider did not save it, or did not confirm it: never shown as saved.
            said.set(refusalKey, { error, context: t("calls.limitFailed") }); // said by the re-read below
          } finally {
            submit.disabled = false;
          }
          reload();
        },
      },
      h("h3", {}, t("calls.limitTitle")),
      field(t("calls.limitLabel"), input, t("calls.limitHint")),
      submit,
      slotFor(refusalKey),
    );
  }

  reload({ reconcile: true });
  return {
    reload: () => reload(),
    leave: () => ring.stop(), // the panel is what knows whether a call still rings
    onReconnect: () => reload({ reconcile: true }),
    // Frames are hints: any of these makes the panel read the API again.
    onFrame: (frame) => FRAMES.has(frame.type),
  };
}
