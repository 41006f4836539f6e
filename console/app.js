// The console's shell: sign-in, the header and navigation, hash routing, live updates, and the
// two announcement regions every screen reports through.

import { api, ApiError, session, whenUnauthorized } from "./api.js";
import { h, clear, debounce } from "./dom.js";
import { t, lang, setLang } from "./i18n.js";
import { Live } from "./live.js";
import * as signin from "./screens/signin.js";
import * as calls from "./screens/calls.js";
import * as numbers from "./screens/numbers.js";
import * as keys from "./screens/keys.js";
import * as keyEdit from "./screens/key-edit.js";
import * as messages from "./screens/messages.js";
import * as usage from "./screens/usage.js";
import * as audit from "./screens/audit.js";
import * as users from "./screens/users.js";
import * as instance from "./screens/instance.js";
import * as connect from "./screens/connect.js";
import { Banner } from "./banner.js";
import { refusal } from "./dom.js";
// The operators' view: a customer's conversation and the webhook deliveries.
import * as conversation from "./screens/conversation.js";
import * as deliveries from "./screens/deliveries.js";
// A person's own account (two-step verification), for admins and attendants alike.
import * as account from "./screens/account.js";
import * as templates from "./screens/templates.js";

const CALLS_ROUTE = { pattern: /^#\/calls$/, screen: calls, nav: "calls" };
const ACCOUNT_ROUTE = { pattern: /^#\/account$/, screen: account, nav: "account" };
const ADMIN_ROUTES = [
  { pattern: /^#\/numbers$/, screen: numbers, nav: "numbers" },
  { pattern: /^#\/numbers\/connect$/, screen: connect, nav: "numbers" },
  { pattern: /^#\/instances\/([^/]+)$/, screen: instance, nav: "numbers" },
  { pattern: /^#\/numbers\/([^/]+)\/templates$/, screen: templates, nav: "numbers" },
  CALLS_ROUTE,
  { pattern: /^#\/keys$/, screen: keys, nav: "keys" },
  { pattern: /^#\/keys\/([^/]+)$/, screen: keyEdit, nav: "keys" },
  { pattern: /^#\/messages(?:\/([^/]+))?$/, screen: messages, nav: "messages" },
  { pattern: /^#\/usage$/, screen: usage, nav: "usage" },
  { pattern: /^#\/audit$/, screen: audit, nav: "audit" },
  { pattern: /^#\/users$/, screen: users, nav: "users" },
  { pattern: /^#\/contacts\/([^/]+)$/, screen: conversation, nav: "messages" },
  { pattern: /^#\/deliveries$/, screen: deliveries, nav: "deliveries" },
];
const NAV = [
  ["numbers", "#/numbers"],
  ["calls", "#/calls"],
  ["keys", "#/keys"],
  ["messages", "#/messages"],
  ["deliveries", "#/deliveries"],
  ["usage", "#/usage"],
  ["audit", "#/audit"],
  ["users", "#/users"],
  ["account", "#/account"],
];

const root = document.getElementById("app");
let me = null; // GET /api/me of the signed-in key
let current = null; // {screen, view: {reload, onFrame}}
let liveState = "closed";
let signInError = null;
// Every admin screen shows the numbers that cannot send as they should (disconnected, paused).
const banner = new Banner();
const live = new Live({
  onFrame: (frame) => {
    banner.onFrame(frame);
    if (current && current.view.onFrame) current.view.onFrame(frame);
  },
  onReconnect: () => current && current.view.onReconnect && current.view.onReconnect(),
  // The socket was closed and no new ticket is given: the key was revoked or the person disabled.
  onRefused: () => me && signOut(t("signin.expired")),
  onState: (state) => {
    liveState = state;
    renderLiveIndicator();
  },
});

// --- announcements ----------------------------------------------------------------------------

const statusRegion = h("div", { id: "status", class: "status", role: "status", "aria-live": "polite" });
const alertRegion = h("div", { id: "alert", class: "alert", role: "alert", "aria-live": "assertive" });

/** Screens report through this: info() for done, error() for refusals in the API's own words. */
export const notify = {
  info(text) {
    clear(alertRegion);
    clear(statusRegion, h("p", {}, text));
  },
  error(error, context) {
    clear(statusRegion);
    // In the interface's words by the error's code; the API's own words behind "detalhes".
    const said = error instanceof ApiError ? refusal(error, context) : h("p", {}, describeError(error, context));
    said.removeAttribute("role"); // the region is the alert already
    clear(alertRegion, said);
  },
  clear() {
    clear(statusRegion);
    clear(alertRegion);
  },
};

export function describeError(error, context) {
  let detail;
  if (error instanceof ApiError) {
    if (error.status === 0) detail = t("error.network");
    else detail = error.message ? `${error.message} (${error.code})` : t("error.status", { status: error.status });
  } else {
    detail = String((error && error.message) || error);
  }
  return context ? `${context}: ${detail}` : detail;
}

// --- shell ------------------------------------------------------------------------------------

const liveIndicator = h("span", { id: "live-indicator", class: "live" });

function renderLiveIndicator() {
  liveIndicator.dataset.state = liveState;
  const key = { open: "live.open", unavailable: "live.unavailable", closed: "live.closed" }[liveState] || "live.reconnecting";
  clear(liveIndicator, h("span", { class: "dot", "aria-hidden": "true" }), t(key));
}

function header(activeNav) {
  const isAdmin = me && me.scopes.includes("admin");
  const otherLang = lang() === "pt-BR" ? "en" : "pt-BR";
  return h(
    "header",
    { class: "top" },
    h("a", { class: "skip", href: "#main", onclick: skipToMain }, t("shell.skip")),
    h(
      "div",
      { class: "bar" },
      h("p", { class: "brand" }, t("shell.brand")),
      me ? h("p", { class: "who" }, t("shell.signedInAs", { name: me.name, tenant: me.tenant })) : null,
      me ? liveIndicator : null,
      h(
        "button",
        { type: "button", class: "link", lang: otherLang, onclick: () => switchLanguage(otherLang) },
        t(`shell.switchTo.${otherLang}`),
      ),
      me ? h("button", { type: "button", class: "secondary", onclick: () => signOut() }, t("shell.signOut")) : null,
    ),
    me
      ? h(
          "nav",
          { "aria-label": t("nav.label") },
          h(
            "ul",
            {},
            // An agent key has the calls panel only; the administration screens need an admin key; a
            // person (admin or attendant) also has their own account.
            NAV.filter(([name]) => (name === "account" ? session.isPerson() : isAdmin || name === "calls")).map(([name, href]) =>
              h(
                "li",
                {},
                h("a", { href, "aria-current": name === activeNav ? "page" : undefined }, t(`nav.${name}`)),
              ),
            ),
          ),
        )
      : null,
  );
}

function skipToMain(event) {
  event.preventDefault();
  const main = document.getElementById("main");
  if (main) main.focus();
}

function switchLanguage(code) {
  setLang(code);
  renderLiveIndicator();
  route({ keepMessages: true });
}

// --- sign-in and routing ------------------------------------------------------------------------

// A person signs in with email and password; an invited person answers the new-password
// challenge first. Their tokens are kept like a key (the tab's sessionStorage) and refreshed.
const person = {
  async signIn(email, password) {
    const answer = await api.signIn(email, password);
    if (answer.challenge) return answer;
    await signedInAsPerson(answer);
    return null;
  },
  async setNewPassword(email, challengeSession, newPassword) {
    const answer = await api.setNewPassword(email, challengeSession, newPassword);
    if (answer.challenge) return answer;
    await signedInAsPerson(answer);
    return null;
  },
  // A person who turned on an authenticator app types its code after their password.
  async answerMfa(email, challengeSession, code) {
    await signedInAsPerson(await api.answerMfa(email, challengeSession, code));
  },
};

async function signedInAsPerson(tokens) {
  session.signInPerson(tokens);
  try {
    me = await api.me();
  } catch (error) {
    session.signOut();
    me = null;
    throw error;
  }
  live.start();
  banner.start(me.scopes.includes("admin"));
  // An attendant lands on the calls panel, an admin on the numbers (the tenant's overview).
  navigate(me.scopes.includes("admin") ? "#/numbers" : "#/calls");
}

async function signInWith(key) {
  session.signIn(key);
  try {
    me = await api.me();
  } catch (error) {
    session.signOut();
    me = null;
    if (error instanceof ApiError && error.status === 401) throw new Error(t("signin.refused"));
    throw new Error(describeError(error, t("signin.failed")));
  }
  if (!me.scopes.includes("admin") && !me.scopes.includes("agent")) {
    const scope = me.scopes.includes("send") ? "send" : me.scopes.join(", ");
    session.signOut();
    me = null;
    throw new Error(t("signin.wrongScope", { scope }));
  }
  live.start();
  banner.start(me.scopes.includes("admin"));
  // A deep link opened before signing in (e.g. #/keys/<id>) is where an admin lands.
  const wanted = ADMIN_ROUTES.some((candidate) => candidate.pattern.test(location.hash)) ? location.hash : "#/numbers";
  navigate(me.scopes.includes("admin") ? wanted : "#/calls");
}

// A 401 on any screen's request: the tab's credential no longer counts (see api.js).
whenUnauthorized(() => me && signOut(t("signin.expired")));

function signOut(reason) {
  const wasPerson = session.isPerson();
  live.stop();
  banner.stop();
  // A person's tokens are ended on the server too (every tab of theirs); a refused or expired
  // token needs nothing more. The tab forgets them either way.
  if (!reason) api.signOut().catch(() => {});
  session.signOut();
  me = null;
  signInError = reason || null;
  if (location.hash !== "#/signin") history.replaceState(null, "", "#/signin");
  route();
  if (!reason) notify.info(t(wasPerson ? "signin.signedOutPerson" : "signin.signedOut"));
}

function route({ keepMessages = false } = {}) {
  if (!keepMessages) notify.clear();
  if (current && current.view.leave) current.view.leave(); // a screen stops what it polls
  if (!me) {
    current = null;
    const main = h("main", { id: "main", tabindex: "-1" });
    clear(root, header(null), statusRegion, alertRegion, main);
    signin.mount(main, { onSubmit: signInWith, onPerson: person, error: signInError, notify });
    signInError = null;
    return;
  }
  const isAdmin = me.scopes.includes("admin");
  let match = null;
  let found = null;
  if (session.isPerson() && ACCOUNT_ROUTE.pattern.test(location.hash)) {
    found = ACCOUNT_ROUTE;
    match = [location.hash];
  } else if (isAdmin) {
    for (const candidate of ADMIN_ROUTES) {
      match = candidate.pattern.exec(location.hash);
      if (match) {
        found = candidate;
        break;
      }
    }
    if (!found) {
      history.replaceState(null, "", "#/numbers");
      found = ADMIN_ROUTES[0];
      match = ["#/numbers"];
    }
  } else {
    if (location.hash !== "#/calls") history.replaceState(null, "", "#/calls");
    found = CALLS_ROUTE;
    match = ["#/calls"];
  }
  const screen = found.screen;
  const main = h("main", { id: "main", tabindex: "-1" });
  banner.render();
  clear(root, header(found.nav), banner.element, statusRegion, alertRegion, main);
  const params = match ? match.slice(1).map((part) => (part === undefined ? undefined : decodeURIComponent(part))) : [];
  const view = screen.mount(main, { me, params, notify, navigate });
  const reload = view.reload ? debounce(view.reload, 150) : null;
  // A screen's onFrame answers true when the frame concerns what it shows: it is then re-read
  // (debounced, since frames come in bursts); a screen may also re-read only a part itself.
  const onFrame = (frame) => {
    if (view.onFrame && view.onFrame(frame) === true && reload) reload();
  };
  // After a reconnect a screen re-reads everything (the calls panel also reconciles first).
  const onReconnect = view.onReconnect || view.reload;
  current = { screen, view: { reload, onFrame, onReconnect, leave: view.leave } };
  const heading = main.querySelector("h1");
  if (heading) {
    heading.setAttribute("tabindex", "-1");
    heading.focus();
  }
}

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

window.addEventListener("hashchange", () => route());

async function boot() {
  renderLiveIndicator();
  if (session.key()) {
    try {
      me = await api.me();
      if (!me.scopes.includes("admin") && !me.scopes.includes("agent")) throw new Error("scope");
      live.start();
      banner.start(me.scopes.includes("admin"));
    } catch (error) {
      session.signOut();
      me = null;
      signInError = error instanceof ApiError && error.status === 401 ? t("signin.expired") : null;
    }
  }
  route();
}

boot();
