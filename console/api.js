// Every HTTP call of the console: same origin, relative paths, the credential as a Bearer token:
// a person's access token (signed in with email and password) or an API key (the platform
// operator). Both live in sessionStorage only: they leave with the tab, and never go in a URL or
// cookie. A person's access token is refreshed shortly before it expires.

const STORAGE_KEY = "switchboard.apiKey";
const PERSON_KEY = "switchboard.person"; // {accessToken, refreshToken, expiresAt}
const REFRESH_MARGIN_MS = 60_000;

function person() {
  try {
    return JSON.parse(sessionStorage.getItem(PERSON_KEY) || "null");
  } catch {
    return null;
  }
}

function keepPerson(tokens, refreshToken) {
  sessionStorage.setItem(
    PERSON_KEY,
    JSON.stringify({
      accessToken: tokens.accessToken,
      refreshToken: tokens.refreshToken || refreshToken,
      expiresAt: Date.now() + (tokens.expiresIn || 3600) * 1000,
    }),
  );
}

export const session = {
  key: () => {
    const signedIn = person();
    return signedIn ? signedIn.accessToken : sessionStorage.getItem(STORAGE_KEY);
  },
  isPerson: () => person() !== null,
  signIn: (key) => {
    sessionStorage.removeItem(PERSON_KEY);
    sessionStorage.setItem(STORAGE_KEY, key);
  },
  signInPerson: (tokens) => {
    sessionStorage.removeItem(STORAGE_KEY);
    keepPerson(tokens);
  },
  signOut: () => {
    sessionStorage.removeItem(STORAGE_KEY);
    sessionStorage.removeItem(PERSON_KEY);
  },
};

let refreshing = null;

/** A person's access token, refreshed first when it expires within a minute. */
async function freshToken() {
  const signedIn = person();
  if (!signedIn) return sessionStorage.getItem(STORAGE_KEY);
  if (signedIn.expiresAt - Date.now() > REFRESH_MARGIN_MS || !signedIn.refreshToken) return signedIn.accessToken;
  refreshing =
    refreshing ||
    send("POST", "/api/sign-in/refresh", { refreshToken: signedIn.refreshToken }, {}, null)
      .then((tokens) => {
        keepPerson(tokens, signedIn.refreshToken);
        return tokens.accessToken;
      })
      .finally(() => {
        refreshing = null;
      });
  return refreshing;
}

/** A refusal by the API, with its error code and message (`{"error", "message"}`). */
export class ApiError extends Error {
  constructor(status, code, message, body = null, retryAfter = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body; // the whole error body: some refusals carry data (line_busy: limit, occupants)
    this.retryAfter = retryAfter;
  }
}

let unauthorized = () => {};

/** `fn` is called when the API refuses the tab's own credential (401): the key was revoked, the
 * person disabled or signed out elsewhere, the session ended. Whatever screen asked, the shell
 * signs the tab out and says why; the screen's own refusal is then gone with it. */
export function whenUnauthorized(fn) {
  unauthorized = fn;
}

async function request(method, path, body, extraHeaders = {}) {
  try {
    return await send(method, path, body, extraHeaders, await freshToken());
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) unauthorized(error);
    throw error;
  }
}

async function send(method, path, body, extraHeaders, key) {
  const headers = { Accept: "application/json", ...extraHeaders };
  if (key) headers.Authorization = `Bearer ${key}`;
  const init = { method, headers, cache: "no-store", credentials: "omit" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, "network", "");
  }
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    // Our errors are {error, message}; API Gateway's own (authorizer, throttle) are {message}.
    const code = (data && data.error) || `http_${response.status}`;
    const message = (data && (data.message || data.error)) || response.statusText || "";
    throw new ApiError(response.status, code, message, data, response.headers.get("Retry-After"));
  }
  // 202 (a dial whose outcome is unknown) is a success with a body the caller must read.
  if (data && typeof data === "object" && !Array.isArray(data)) Object.defineProperty(data, "httpStatus", { value: response.status });
  return data;
}

const enc = encodeURIComponent;

export const api = {
  me: () => request("GET", "/api/me"),

  // People: signing in takes no credential; the users screen is an admin's.
  signIn: (email, password) => send("POST", "/api/sign-in", { email, password }, {}, null),
  setNewPassword: (email, session, newPassword) =>
    send("POST", "/api/sign-in/new-password", { email, session, newPassword }, {}, null),
  answerMfa: (email, session, code) => send("POST", "/api/sign-in/mfa", { email, session, code }, {}, null),
  // Ends every token of the person (this tab's, and their other tabs' and devices'); a key is just forgotten.
  signOut: () => (session.isPerson() ? request("POST", "/api/sign-out") : Promise.resolve(null)),
  // A person's own authenticator app (two-step verification).
  authenticator: () => request("GET", "/api/me/authenticator"),
  // Making a new secret and turning it off take the person's password (and the app's current code
  // while one is on): the tab's token alone changes nothing.
  startAuthenticator: (password, code) =>
    request("POST", "/api/me/authenticator", code ? { password, code } : { password }),
  confirmAuthenticator: (code) => request("POST", "/api/me/authenticator/confirm", { code }),
  turnOffAuthenticator: (password, code) => request("DELETE", "/api/me/authenticator", { password, code }),
  users: () => request("GET", "/api/users"),
  inviteUser: (body) => request("POST", "/api/users", body),
  updateUser: (id, changes) => request("PATCH", `/api/users/${enc(id)}`, changes),

  numbers: () => request("GET", "/api/numbers"),
  createNumber: (body) => request("POST", "/api/numbers", body),
  createProvider: (body) => request("POST", "/api/providers", body),
  pairing: (name) => request("GET", `/api/instances/${enc(name)}/qr`),
  connectInstance: (name) => request("POST", `/api/instances/${enc(name)}/connect`),
  logoutInstance: (name) => request("POST", `/api/instances/${enc(name)}/logout`),
  testMessage: (name, to, text) => request("POST", `/api/instances/${enc(name)}/test-message`, { to, text }),
  replyWebhook: (name) => request("POST", `/api/instances/${enc(name)}/webhook-secret`),
  tenant: (ownerTag) => request("GET", `/api/tenants/${enc(ownerTag)}`),
  putDownstream: (ownerTag, body) => request("PUT", `/api/tenants/${enc(ownerTag)}`, body),
  updateNumber: (id, changes) => request("PATCH", `/api/numbers/${enc(id)}`, changes),
  instances: () => request("GET", "/api/instances"),
  providers: () => request("GET", "/api/providers"),
  instance: (name) => request("GET", `/api/instances/${enc(name)}`),
  putInstance: (name, body) => request("PUT", `/api/instances/${enc(name)}`, body),
  health: (name) => request("GET", `/api/instances/${enc(name)}/health`),

  keys: () => request("GET", "/api/api-keys"),
  key: (id) => request("GET", `/api/api-keys/${enc(id)}`),
  createKey: (body) => request("POST", "/api/api-keys", body),
  updateKey: (id, changes) => request("PATCH", `/api/api-keys/${enc(id)}`, changes),
  revokeKey: (id) => request("DELETE", `/api/api-keys/${enc(id)}`),

  setSelectionMode: (id, mode) =>
    request("PUT", `/api/api-keys/${enc(id)}/selection-mode`, { numberSelectionMode: mode }),
  pool: (id) => request("GET", `/api/api-keys/${enc(id)}/pool`),
  addToPool: (id, numberId) => request("POST", `/api/api-keys/${enc(id)}/pool`, { whatsappNumberId: numberId }),
  removeFromPool: (id, numberId) => request("DELETE", `/api/api-keys/${enc(id)}/pool/${enc(numberId)}`),
  reorderPool: (id, numberIds) => request("PUT", `/api/api-keys/${enc(id)}/pool/reorder`, { numberIds }),

  message: (id) => request("GET", `/api/messages/${enc(id)}`),
  contactWindow: (phone) => request("GET", `/api/contacts/${enc(phone)}/window`),
  templates: (numberId, refresh = false) =>
    request("GET", `/api/numbers/${enc(numberId)}/templates${refresh ? "?refresh=true" : ""}`),
  usage: (month) => request("GET", `/api/usage/summary?month=${enc(month)}`),
  audit: (limit = 100) => request("GET", `/api/audit?limit=${enc(limit)}`),

  connections: () => request("GET", "/api/connections"),
  calls: (instance) => request("GET", `/api/connections/${enc(instance)}/calls`),
  setCallsLimit: (instance, limit) =>
    request("PUT", `/api/connections/${enc(instance)}/calls-limit`, { callsMaxConcurrent: limit }),
  prepareSubscription: (instance) => request("POST", `/api/connections/${enc(instance)}/subscription`, {}),
  reconcile: (instance) => request("POST", `/api/connections/${enc(instance)}/reconcile`),
  dial: (instance, to, video, idempotencyKey) =>
    request("POST", `/api/connections/${enc(instance)}/calls`, { to, video }, { "Idempotency-Key": idempotencyKey }),
  claimCall: (instance, callId, transferTo) =>
    request("POST", `/api/calls/${enc(instance)}/${enc(callId)}/claim`, transferTo ? { transferTo } : {}),
  hangupCall: (instance, callId) => request("POST", `/api/calls/${enc(instance)}/${enc(callId)}/hangup`),
  stopVideo: (instance, callId) => request("POST", `/api/calls/${enc(instance)}/${enc(callId)}/video`, { action: "stop" }),
  attachMedia: (instance, callId) => request("POST", `/api/calls/${enc(instance)}/${enc(callId)}/attach`),

  liveTicket: () => request("POST", "/api/live/tickets"),

  // The operators' view: the message log, a customer's conversation, webhook deliveries and an
  // instance's ignored provider events. `query` is an object of the route's filters (empty ones left out).
  messages: (query = {}) => request("GET", `/api/messages${queryString(query)}`),
  conversation: (number, cursor) => request("GET", `/api/contacts/${enc(number)}/messages${queryString({ cursor })}`),
  deliveries: (query = {}) => request("GET", `/api/webhook-deliveries${queryString(query)}`),
  replayDelivery: (id) => request("POST", `/api/webhook-deliveries/${enc(id)}/replay`),
  replayFailedDeliveries: (since, until, cursor) =>
    request("POST", "/api/webhook-deliveries/replay", cursor ? { since, until, cursor } : { since, until }),
  ignoredEvents: (instance, limit = 20) =>
    request("GET", `/api/instances/${enc(instance)}/ignored-events${queryString({ limit })}`),
};

/** `?a=1&b=2` of the entries with a value; "" when none has one. */
function queryString(query) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}
