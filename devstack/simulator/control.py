"""A small client for the simulator's `/_sim` control API, for tests and the local stack.

Every method raises `httpx.HTTPStatusError` on a non-2xx answer; its response carries the
simulator's `{"error", "message"}` body (e.g. `line_busy` for an incoming call with no slot).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx


class SimulatorControl:
    def __init__(self, base_url: str, *, timeout: float = 5.0) -> None:
        self._client = httpx.Client(base_url=base_url, timeout=timeout, trust_env=False)

    def close(self) -> None:
        self._client.close()

    def reset(self) -> None:
        self._post("/_sim/reset")

    def create_instance(self, **fields: Any) -> dict[str, Any]:
        """Fields as in `POST /_sim/instances`: id, token, flavour, kind, number, connected, webhookUrl, ..."""
        return self._post("/_sim/instances", fields)

    def instance(self, instance_id: str) -> dict[str, Any]:
        response = self._client.get(f"/_sim/instances/{instance_id}")
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result

    def set_connection(
        self,
        instance_id: str,
        connected: bool,
        *,
        include_calls_config: bool = True,
        reason: str | None = None,
        notify: bool = True,
    ) -> None:
        """`reason` for a wuzapi or Evolution disconnect: `logged_out` (default) or `disconnected`;
        `notify` False changes the connection without posting its webhook."""
        body: dict[str, Any] = {"connected": connected, "includeCallsConfig": include_calls_config, "notify": notify}
        if reason is not None:
            body["reason"] = reason
        self._post(f"/_sim/instances/{instance_id}/connection", body)

    def scan(self, instance_id: str) -> dict[str, Any]:
        """The phone scans the code the session shows (wuzapi, Evolution): paired and connected."""
        return self._post(f"/_sim/instances/{instance_id}/scan")

    def expire_code(self, instance_id: str) -> dict[str, Any]:
        """The code the session shows expires now: the server draws the next one."""
        return self._post(f"/_sim/instances/{instance_id}/code-expired")

    def number_status(self, instance_id: str, **fields: str) -> dict[str, Any]:
        """Meta only: what the Graph API reports of the number from now on (`status`, `qualityRating`,
        `messagingLimit`, `throughput`)."""
        return self._post(f"/_sim/instances/{instance_id}/number-status", fields)

    def webhook_format(self, instance_id: str, webhook_format: str) -> None:
        """wuzapi only: `json` or `form` (its `WEBHOOK_FORMAT`)."""
        self._post(f"/_sim/instances/{instance_id}/webhook-format", {"format": webhook_format})

    def verify_webhook(self, instance_id: str) -> dict[str, Any]:
        """Meta only: send the `hub.challenge` GET; `{"verified": bool, "status": int}`."""
        return self._post(f"/_sim/instances/{instance_id}/verify-webhook")

    def panel_call_settings(self, instance_id: str, calls_max_concurrent: int) -> dict[str, Any]:
        """A change made in the provider's own panel: bumps the version and emits `call_settings`."""
        return self._post(f"/_sim/instances/{instance_id}/call-settings", {"callsMaxConcurrent": calls_max_concurrent})

    def webhook_secrets(self, instance_id: str, secret: str, previous_secret: str | None = None) -> None:
        body = {"secret": secret, "previousSecret": previous_secret}
        self._post(f"/_sim/instances/{instance_id}/webhook-secrets", body)

    def incoming_message(
        self, instance_id: str, sender: str, text: str, *, push_name: str | None = "Cliente", addressing: str = "pn"
    ) -> str:
        """`push_name`: the sender's WhatsApp profile name (None: WhatsApp sent none); `addressing`
        (Evolution): `pn`, `lid` or `lid_only`, how WhatsApp addressed the chat."""
        body = {"from": sender, "text": text, "pushName": push_name, "addressing": addressing}
        message_id: str = self._post(f"/_sim/instances/{instance_id}/incoming-message", body)["id"]
        return message_id

    def fail_media(self, media_id: str) -> None:
        """From now on the file fails to download: a Meta media id answers as expired (400, code
        100) and its URL 404; an Evolution message id's getBase64 answers "Message not found"; a
        wuzapi `DirectPath` answers 500 (a failed download)."""
        self._post("/_sim/media/fail", {"id": media_id})

    def incoming(
        self,
        instance_id: str,
        sender: str,
        *,
        kind: str = "text",
        text: str | None = None,
        media_delivery: str | None = None,
        file_size: int | None = None,
        announced_size: int | None = None,
        quote: str | None = None,
        media_fails: bool = False,
    ) -> dict[str, Any]:
        """Any kind of incoming message (`text`, `image`, `audio`, `video`, `document`, `sticker`,
        `location`, `reaction`, `contacts`, `list`): `{id, eventId}`, the sender's message id and
        the simulator's event id. `media_delivery`: how its file travels (the server's setting);
        `file_size`: the file padded to that size; `announced_size`: the size the message claims;
        `quote`: the id of the message it quotes (a reaction's: the message it reacts to);
        `media_fails`: its file cannot be downloaded."""
        body: dict[str, Any] = {"from": sender, "type": kind}
        optional = {
            "text": text,
            "mediaDelivery": media_delivery,
            "fileSize": file_size,
            "announcedSize": announced_size,
            "quote": quote,
            "mediaFails": media_fails or None,
        }
        body |= {name: value for name, value in optional.items() if value is not None}
        return self._post(f"/_sim/instances/{instance_id}/incoming-message", body)

    def incoming_call(self, instance_id: str, sender: str, *, video: bool = False) -> str:
        body = {"from": sender, "video": video}
        call_id: str = self._post(f"/_sim/instances/{instance_id}/incoming-call", body)["callId"]
        return call_id

    def call_action(self, instance_id: str, call_id: str, action: str, **details: Any) -> dict[str, Any]:
        """action: answer, active, video, end, recording_ready or recording_failed."""
        call: dict[str, Any] = self._post(f"/_sim/instances/{instance_id}/calls/{call_id}/{action}", details)["call"]
        return call

    def media_session(self, instance_id: str, call_id: str) -> dict[str, Any] | None:
        """`{sessionId, connected}` of the call's retained media session, or None."""
        answer = self._client.get(f"/_sim/instances/{instance_id}/calls/{call_id}/media")
        if answer.status_code == 404:
            return None
        answer.raise_for_status()
        view: dict[str, Any] = answer.json()
        return view

    def incoming_choice(self, instance_id: str, sender: str, option_id: str, title: str, *, kind: str = "list") -> str:
        """`sender` taps a list row (`kind` list) or a reply button (`button`) of the last message
        the instance sent them (Meta's servers; Evolution's lists); the message id."""
        body = {"from": sender, "optionId": option_id, "title": title, "kind": kind}
        message_id: str = self._post(f"/_sim/instances/{instance_id}/incoming-choice", body)["id"]
        return message_id

    def open_window(self, instance_id: str, phone: str, *, at: float | None = None) -> None:
        """`phone` last wrote to the number at `at` (unix seconds; now), posting nothing: the Cloud
        API number's customer-service window with them is open for 24 h from then."""
        body: dict[str, Any] = {"with": phone}
        if at is not None:
            body["at"] = at
        self._post(f"/_sim/instances/{instance_id}/window", body)

    def set_template(self, waba_id: str, **fields: Any) -> dict[str, Any]:
        """Add or change a Meta business account's template (`name`, `language`, `status`, ...)."""
        return self._post(f"/_sim/waba/{waba_id}/templates", fields)

    def refused(self) -> list[dict[str, Any]]:
        """Sends a server accepted that never reached the user (a Cloud API number outside the window)."""
        response = self._client.get("/_sim/refused")
        response.raise_for_status()
        messages: list[dict[str, Any]] = response.json()["messages"]
        return messages

    def receipt(self, instance_id: str, message_id: str, status: str, *, outside_window: bool = False) -> None:
        """The recipient got (`delivered`), read (`read`) or never got (`failed`) a sent message;
        `outside_window`: a Cloud API number's `failed` for the customer-service window (131047)."""
        path = f"/_sim/instances/{instance_id}/messages/{quote(message_id, safe='/+=')}/status"
        self._post(path, {"status": status} | ({"outsideWindow": True} if outside_window else {}))

    def sent(self) -> list[dict[str, Any]]:
        response = self._client.get("/_sim/sent")
        response.raise_for_status()
        messages: list[dict[str, Any]] = response.json()["messages"]
        return messages

    def events(self, instance_id: str | None = None) -> list[dict[str, Any]]:
        params = {"instance": instance_id} if instance_id else {}
        response = self._client.get("/_sim/events", params=params)
        response.raise_for_status()
        events: list[dict[str, Any]] = response.json()["events"]
        return events

    def send_error(self, instance_id: str, code: str | None, *, times: int | None = None) -> None:
        """Refuse the instance's sends with `code` (`463`, `130429`, `131056`, `131049`); None stops."""
        self._post(f"/_sim/instances/{instance_id}/send-error", {"code": code, "times": times})

    def fault(self, route: str, mode: str, *, times: int = 1, method: str | None = None) -> None:
        self._post("/_sim/faults", {"route": route, "mode": mode, "times": times, "method": method})

    def clear_faults(self) -> int:
        """Forget every injected fault not yet consumed; returns how many there were."""
        response = self._client.delete("/_sim/faults")
        response.raise_for_status()
        cleared: int = response.json()["cleared"]
        return cleared

    def redeliver(self, event_id: str) -> None:
        self._post("/_sim/webhooks/redeliver", {"eventId": event_id})

    def set_global_webhook(self, **fields: Any) -> None:
        """Fields: url, events, filters, enabled, secret, previousSecret."""
        self._post("/_sim/global-webhook", fields)

    def clear_global_webhook(self) -> None:
        self._client.delete("/_sim/global-webhook").raise_for_status()

    def set_capabilities(self, **flags: Any) -> None:
        self._post("/_sim/capabilities", flags)

    def hold_dials(self, held: bool) -> None:
        """While held, dials keep their reservation (counted, not listed) and wait; False releases them."""
        self._post("/_sim/hold-dials", {"held": held})

    def _post(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self._client.post(path, json=body or {})
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result
