// Live updates: a ticket from the API, then a WebSocket whose frames say what changed.
// Frames are hints: the screen re-reads what they name through the API. After a reconnect the
// screen re-reads everything, since frames sent while disconnected are lost.

import { api, ApiError } from "./api.js";

const PING_MS = 5 * 60 * 1000; // the WebSocket API closes connections idle for 10 minutes
const BACKOFF_BASE_MS = 1000;
const BACKOFF_MAX_MS = 60 * 1000;

/**
 * new Live({onFrame, onReconnect, onState, onRefused}).start()
 * onState(state): "connecting" | "open" | "reconnecting" | "unavailable" | "closed".
 * onRefused(): the credential itself was refused (401): revoked, disabled or signed out elsewhere.
 * document.body.dataset.live mirrors it as "open", "closed" or "unavailable".
 */
export class Live {
  constructor({ onFrame, onReconnect, onState, onRefused }) {
    this.onFrame = onFrame;
    this.onReconnect = onReconnect;
    this.onState = onState;
    this.onRefused = onRefused;
    this.socket = null;
    this.attempt = 0;
    this.everOpened = false;
    this.stopped = true;
    this.retryTimer = null;
    this.pingTimer = null;
  }

  start() {
    this.stopped = false;
    this.everOpened = false;
    this.attempt = 0;
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    if (this.socket) {
      const socket = this.socket;
      this.socket = null;
      socket.close(1000);
    }
    this.setState("closed");
  }

  setState(state) {
    this.state = state;
    document.body.dataset.live = state === "open" ? "open" : state === "unavailable" ? "unavailable" : "closed";
    if (this.onState) this.onState(state);
  }

  async connect() {
    if (this.stopped) return;
    this.setState(this.everOpened ? "reconnecting" : "connecting");
    let ticket;
    try {
      ticket = await api.liveTicket();
    } catch (error) {
      if (this.stopped) return;
      // No ticket route (a backend without live updates) or a key that may not have one (or no
      // longer works): the console goes on without live updates rather than retrying forever.
      if (error instanceof ApiError && [401, 403, 404, 405, 501].includes(error.status)) {
        this.setState("unavailable");
        if (error.status === 401 && this.onRefused) this.onRefused();
        return;
      }
      this.retry();
      return;
    }
    if (this.stopped) return;
    let socket;
    try {
      socket = new WebSocket(`${ticket.url}?ticket=${encodeURIComponent(ticket.ticket)}`);
    } catch {
      this.setState("unavailable");
      return;
    }
    this.socket = socket;
    socket.addEventListener("open", () => {
      if (socket !== this.socket) return;
      const reconnected = this.everOpened;
      this.everOpened = true;
      this.attempt = 0;
      this.setState("open");
      clearInterval(this.pingTimer);
      this.pingTimer = setInterval(() => {
        if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ action: "ping" }));
      }, PING_MS);
      if (reconnected && this.onReconnect) this.onReconnect();
    });
    socket.addEventListener("message", (event) => {
      if (socket !== this.socket) return;
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      if (frame && typeof frame.type === "string" && this.onFrame) this.onFrame(frame);
    });
    socket.addEventListener("close", () => {
      if (socket !== this.socket) return;
      this.socket = null;
      clearInterval(this.pingTimer);
      this.retry();
    });
  }

  /** Exponential backoff with jitter, and a new ticket each time (tickets are single-use). */
  retry() {
    if (this.stopped) return;
    this.setState("reconnecting");
    const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** this.attempt);
    this.attempt += 1;
    const delay = ceiling / 2 + Math.random() * (ceiling / 2);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }
}
