"""The simulator's state: instances of every flavour, calls, subscriptions, faults and the events they emit.

Everything lives behind one lock, and an event is emitted under the same lock as the change
that causes it, so the per-instance `seq` order is the order of the changes.

Flavours: `calls` is the calls-capable server (its `/call/*`, call settings and signed envelope
are ours; its messaging routes are real wuzapi's); `wuzapi`, `evolution` and `meta` follow the
real servers (`payloads` holds their shapes).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from devstack.simulator import incoming, payloads, wire
from devstack.simulator.model import (
    Call,
    Delivery,
    DialRecord,
    EmittedEvent,
    Fault,
    Hook,
    Instance,
    SentMessage,
    SimError,
    Subscription,
    rfc3339,
    rfc3339_nano,
)
from devstack.simulator.schemas import (
    MAX_VERSION,
    CallActionBody,
    CapabilitiesPatch,
    CreateInstanceBody,
    FaultBody,
    GlobalWebhookBody,
    NumberStatusBody,
    SimulatorConfig,
    WebhookBody,
)

__all__ = ["Delivery", "SimError", "SimulatorState"]

DEFAULT_EVENTS = {
    "calls": ["call", "call_settings", "connection"],
    "messages": ["message", "receipt", "connection"],
}
EVENT_LOG_SIZE = 10_000
NOT_CONNECTED_TEXT = "error sending message: websocket not connected"


class SimulatorState:
    """All mutable state. Every public method takes the lock; helpers starting with `_` expect it held."""

    def __init__(
        self,
        config: SimulatorConfig,
        *,
        deliver: Callable[[Delivery], None],
    ) -> None:
        self._lock = threading.Lock()
        self._dials_changed = threading.Condition(self._lock)
        self._config = config
        self._deliver = deliver
        self.dials_held = False
        self.reset()

    def _reset(self) -> None:
        self.capabilities = self._config.capabilities.model_copy()
        self._release_dials()
        self._instances: dict[str, Instance] = {}
        self._global_subscription: Subscription | None = None
        self._sent: list[SentMessage] = []
        self._delivered: dict[tuple[str, str, str], SentMessage] = {}
        self._events: OrderedDict[str, EmittedEvent] = OrderedDict()
        self._faults: list[Fault] = []
        self._on_whatsapp: dict[str, str] = {}  # Evolution's IsOnWhatsapp cache: LID JID -> phone JID

    def reset(self) -> None:
        with self._lock:
            self._reset()

    def hold_dials(self, held: bool) -> None:
        """While held, every dial keeps its reservation and waits: a dial in flight, frozen for tests."""
        with self._lock:
            if held:
                self.dials_held = True
            else:
                self._release_dials()

    def _release_dials(self) -> None:
        self.dials_held = False
        self._dials_changed.notify_all()

    # --- capabilities and faults -------------------------------------------------------------

    def capabilities_view(self) -> dict[str, Any]:
        with self._lock:
            caps = self.capabilities
            return {
                "capabilities": {
                    "calls": caps.calls,
                    "calls_per_instance_limit": caps.calls_per_instance_limit,
                    "calls_settings_webhook": caps.calls_settings_webhook,
                    "calls_video": caps.calls_video,
                },
                "calls_max_concurrent": caps.calls_max_concurrent,
                "calls_max_concurrent_range": {"min": 1, "max": 8},
            }

    def patch_capabilities(self, patch: CapabilitiesPatch) -> dict[str, Any]:
        with self._lock:
            self.capabilities = self.capabilities.model_copy(update=patch.model_dump(exclude_none=True))
        return self.capabilities_view()

    def add_fault(self, body: FaultBody) -> None:
        with self._lock:
            self._faults.append(Fault(body.route, body.method, body.mode, body.times))

    def clear_faults(self) -> int:
        """Forget every pending fault; returns how many were still pending."""
        with self._lock:
            pending = len(self._faults)
            self._faults = []
            return pending

    def take_fault(self, route: str, method: str) -> str | None:
        """Consume one pending fault for this route, oldest first."""
        with self._lock:
            for fault in self._faults:
                if fault.route == route and fault.method in (None, method):
                    fault.remaining -= 1
                    if fault.remaining == 0:
                        self._faults.remove(fault)
                    return fault.mode
            return None

    # --- instances ---------------------------------------------------------------------------

    def create_instance(self, body: CreateInstanceBody) -> dict[str, Any]:
        with self._lock:
            if body.id in self._instances:
                raise SimError(409, "instance_exists")
            if any(instance.token == body.token for instance in self._instances.values()):
                raise SimError(409, "token_in_use")
            kind = body.kind or ("calls" if body.flavour == "calls" else "messages")
            if kind == "calls" and body.flavour != "calls":
                raise SimError(400, "calls_need_the_calls_server", "only the calls flavour has calls")
            self._check_flavour_fields(body)
            instance = Instance(
                id=body.id,
                token=body.token,
                kind=kind,
                number=body.number,
                connected=body.connected,
                calls_max_concurrent=body.calls_max_concurrent or self.capabilities.calls_max_concurrent,
                calls_config_version=body.calls_config_version,
                updated_ns=time.time_ns(),
                flavour=body.flavour,
                session=body.connected,
                webhook_format=body.webhook_format,
                meta_phone_id=body.meta_phone_id,
                waba_id=body.waba_id or str(uuid.uuid4().int % 10**15),
                verify_token=body.verify_token,
            )
            if body.user_id is not None:
                instance.user_id = body.user_id
            if body.flavour == "calls":
                if body.webhook_url is not None and body.webhook_secret is not None:
                    events = body.webhook_events if body.webhook_events is not None else DEFAULT_EVENTS[kind]
                    instance.subscription = Subscription(body.webhook_url, list(events), {}, True, body.webhook_secret)
            else:
                instance.hook = self._initial_hook(body)
            self._instances[body.id] = instance
            return self._control_view(instance)

    def _check_flavour_fields(self, body: CreateInstanceBody) -> None:
        if body.flavour == "calls" and body.webhook_url is not None and body.webhook_secret is None:
            raise SimError(400, "secret_required", "a webhook URL needs a secret")
        if body.flavour == "meta":
            if body.meta_phone_id is None:
                raise SimError(400, "meta_phone_id_required", "a Meta number is addressed by its phone number id")
            if any(other.meta_phone_id == body.meta_phone_id for other in self._instances.values()):
                raise SimError(409, "meta_phone_id_in_use")
            if not body.connected:
                raise SimError(400, "always_connected", "a Cloud API number has no session to lose")

    @staticmethod
    def _initial_hook(body: CreateInstanceBody) -> Hook:
        """Default events only with a URL: a server user nobody configured subscribes to nothing."""
        defaults = {"wuzapi": payloads.WUZAPI_DEFAULT_EVENTS, "evolution": payloads.EVOLUTION_DEFAULT_EVENTS}
        given = body.webhook_events
        events = list(given if given is not None else defaults.get(body.flavour, []) if body.webhook_url else [])
        if body.flavour == "wuzapi":
            events = payloads.wuzapi_valid_events(list(events))
        return Hook(url=body.webhook_url or "", events=events, live_events=list(events), secret=body.webhook_secret)

    def instance_for_token(self, token: str, flavour: str = "calls") -> str | None:
        with self._lock:
            for instance in self._instances.values():
                if instance.token == token and instance.flavour == flavour:
                    return instance.id
            return None

    def control_view(self, instance_id: str) -> dict[str, Any]:
        with self._lock:
            return self._control_view(self._instance(instance_id))

    def status(self, instance_id: str) -> dict[str, Any]:
        with self._lock:
            return {"instance": self._status_view(self._instance(instance_id))}

    def set_connection(
        self,
        instance_id: str,
        connected: bool,
        *,
        include_calls_config: bool,
        reason: str | None = None,
        notify: bool = True,
    ) -> dict[str, Any]:
        """The WhatsApp connection changes; each flavour posts what its real server posts (with
        `notify` False nothing is posted: only a status read tells)."""
        with self._lock:
            instance = self._instance(instance_id)
            if instance.flavour == "meta":
                raise SimError(400, "always_connected", "a Cloud API number has no session to lose")
            instance.connected = connected
            instance.session = connected or reason == "disconnected"
            instance.updated_ns = time.time_ns()
            if not notify:
                return {"instance": self._status_view(instance)}
            if instance.flavour == "calls":
                self._emit_connection(instance, include_calls_config)
            elif instance.flavour == "wuzapi":
                self._wuzapi_connection(instance, reason)
            else:
                self._evolution_connection(instance, reason)
            return {"instance": self._status_view(instance)}

    def _emit_connection(self, instance: Instance, include_calls_config: bool) -> None:
        summary: dict[str, Any] = {"kind": instance.kind}
        if instance.kind == "calls" and include_calls_config:
            summary.update(instance.calls_config())
        data = {
            "connected": instance.connected,
            "number": instance.number,
            "timestamp": rfc3339_nano(instance.updated_ns),
        }
        self._emit(instance, "connection", data, instance_summary=summary)

    def _wuzapi_connection(self, instance: Instance, reason: str | None) -> None:
        if instance.connected:
            self._emit_wuzapi(instance, {"event": {}, "type": "Connected"})
        elif reason == "disconnected":
            self._emit_wuzapi(instance, {"event": {}, "type": "Disconnected"})
        else:
            self._emit_wuzapi(instance, {"event": {"OnConnect": False, "Reason": 401}, "type": "LoggedOut"})

    def _evolution_connection(self, instance: Instance, reason: str | None) -> None:
        """Open posts `open`; a logout posts `close` (401); a reconnectable drop posts nothing."""
        if instance.connected:
            data: dict[str, Any] = {
                "instance": instance.id,
                "wuid": wire.jid(instance.number),
                "profileName": instance.id,
                "profilePictureUrl": None,
                "state": "open",
                "statusReason": 200,
            }
        elif reason == "disconnected":
            return
        else:
            data = {"instance": instance.id, "state": "close", "statusReason": 401}
        self._emit_evolution(instance, "connection.update", data)

    def set_call_settings(self, instance_id: str, calls_max_concurrent: int) -> dict[str, Any]:
        """Save the limit; every accepted save increments the version, even with the same value."""
        with self._lock:
            instance = self._instance(instance_id)
            if not self.capabilities.calls_per_instance_limit:
                raise SimError(404, "not_found", "this server has no per-instance call limit")
            if instance.kind != "calls":
                raise SimError(400, "not_calls_instance")
            if instance.calls_config_version >= MAX_VERSION:
                raise SimError(409, "version_exhausted", "the 64-bit config version cannot grow")
            instance.calls_max_concurrent = calls_max_concurrent
            instance.calls_config_version += 1
            instance.updated_ns = time.time_ns()
            if self.capabilities.calls_settings_webhook:
                data = {
                    "kind": instance.kind,
                    **instance.calls_config(),
                    "updatedAt": rfc3339_nano(instance.updated_ns),
                }
                self._emit(instance, "call_settings", data)
            return {"instance": self._status_view(instance)}

    def _instance(self, instance_id: str) -> Instance:
        instance = self._instances.get(instance_id)
        if instance is None:
            raise SimError(404, "instance_not_found")
        return instance

    def _status_view(self, instance: Instance) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": instance.id,
            "kind": instance.kind,
            "connected": instance.connected,
            "updated": rfc3339(instance.updated_ns),
        }
        if instance.kind == "calls" and self.capabilities.calls_per_instance_limit:
            view.update(instance.calls_config())
        return view

    def _control_view(self, instance: Instance) -> dict[str, Any]:
        view = {
            **self._status_view(instance),
            "flavour": instance.flavour,
            "number": instance.number,
            "session": instance.session,
            **instance.calls_config(),
            "occupancy": instance.occupancy(),
            "reservations": len(instance.reservations),
            "seq": instance.seq,
            "calls": [call.view() for call in instance.calls.values()],
            "webhook": self._webhook_control_view(instance),
        }
        if instance.flavour == "wuzapi":
            view["userId"] = instance.user_id
        if instance.flavour == "meta":
            view |= {"metaPhoneId": instance.meta_phone_id, "wabaId": instance.waba_id}
        return view

    def _webhook_control_view(self, instance: Instance) -> dict[str, Any] | None:
        if instance.flavour != "calls":
            hook = instance.hook
            return {
                "url": hook.url,
                "events": list(hook.events),
                "liveEvents": list(hook.live_events),
                "format": instance.webhook_format if instance.flavour == "wuzapi" else "json",
                "hasSecret": hook.secret is not None,
            }
        subscription, inherited = self._effective_subscription(instance)
        if subscription is None:
            return None
        return {
            **subscription.public_view(inherited=inherited),
            "hasSecret": bool(subscription.secret),
            "rotating": subscription.previous_secret is not None,
        }

    # --- the calls server's webhook subscription ---------------------------------------------

    def get_webhook(self, instance_id: str) -> dict[str, Any]:
        with self._lock:
            subscription, inherited = self._effective_subscription(self._instance(instance_id))
            if subscription is None:
                return {"url": None, "events": [], "filters": {}, "enabled": False, "inherited": False}
            return subscription.public_view(inherited=inherited)

    def post_webhook(self, instance_id: str, body: WebhookBody) -> dict[str, Any]:
        """Merge into the current subscription and save it as the instance's own.

        Posting on an inherited subscription creates the instance's own copy, as the real
        server does. Omitting `secret` keeps the current one only for the same URL.
        """
        with self._lock:
            instance = self._instance(instance_id)
            current, _ = self._effective_subscription(instance)
            url = body.url if body.url is not None else (current.url if current else None)
            if url is None:
                raise SimError(400, "url_required")
            if body.secret is not None:
                secret, previous = body.secret, None
            elif current is not None and current.url == url:
                secret, previous = current.secret, current.previous_secret
            else:
                raise SimError(400, "secret_required", "a new URL needs a secret")
            instance.subscription = Subscription(
                url=url,
                events=list(body.events if body.events is not None else (current.events if current else [])),
                filters=dict(body.filters if body.filters is not None else (current.filters if current else {})),
                enabled=body.enabled if body.enabled is not None else (current.enabled if current else True),
                secret=secret,
                previous_secret=previous,
            )
            return instance.subscription.public_view(inherited=False)

    def set_webhook_secrets(self, instance_id: str, secret: str, previous_secret: str | None) -> None:
        """The calls server: start (or end, with no previous) a rotation on the instance's own
        subscription. Other flavours: replace the HMAC key, `jwt_key` or app secret."""
        with self._lock:
            instance = self._instance(instance_id)
            if instance.flavour != "calls":
                if previous_secret is not None:
                    raise SimError(400, "no_rotation", "this server signs with one secret at a time")
                instance.hook.secret = secret
                return
            subscription = instance.subscription
            if subscription is None:
                raise SimError(409, "no_own_subscription")
            subscription.secret, subscription.previous_secret = secret, previous_secret

    def set_webhook_format(self, instance_id: str, webhook_format: str) -> None:
        with self._lock:
            instance = self._instance(instance_id)
            if instance.flavour != "wuzapi":
                raise SimError(400, "not_wuzapi", "only wuzapi has a form mode")
            instance.webhook_format = webhook_format

    def set_global_webhook(self, body: GlobalWebhookBody | None) -> None:
        with self._lock:
            self._global_subscription = None
            if body is not None:
                self._global_subscription = Subscription(
                    body.url,
                    list(body.events),
                    dict(body.filters),
                    body.enabled,
                    body.secret,
                    body.previous_secret,
                )

    def _effective_subscription(self, instance: Instance) -> tuple[Subscription | None, bool]:
        if instance.subscription is not None:
            return instance.subscription, False
        return self._global_subscription, self._global_subscription is not None

    def meta_verification(self, instance_id: str) -> tuple[str, str]:
        """Where Meta would send its `hub.challenge` GET, and the verify token it would carry."""
        with self._lock:
            instance = self._instance(instance_id)
            if instance.flavour != "meta" or not instance.hook.url or instance.verify_token is None:
                raise SimError(400, "no_verification", "a Meta instance with a webhook URL and a verify token")
            return instance.hook.url, instance.verify_token

    # --- wuzapi's session and webhook routes (the calls server shares the session ones) ------

    def session_status(self, instance_id: str) -> dict[str, Any]:
        """`GET /session/status` without the token real wuzapi echoes (it must not reach logs)."""
        with self._lock:
            instance = self._instance(instance_id)
            if instance.flavour == "calls":
                subscription, _ = self._effective_subscription(instance)
                url, events = (subscription.url, subscription.events) if subscription else ("", [])
                hmac_configured = False
            else:
                url, events, hmac_configured = instance.hook.url, instance.hook.events, instance.hook.secret is not None
            return {
                "connected": instance.connected,
                "events": ",".join(events),
                "history": "0",
                "hmac_configured": hmac_configured,
                "id": instance.user_id,
                "jid": f"{instance.number.lstrip('+')}:12@s.whatsapp.net",
                "loggedIn": instance.connected,
                "name": instance.id,
                "proxy_config": {"enabled": False, "proxy_url": ""},
                "proxy_url": "",
                "qrcode": "",
                "s3_config": {
                    "access_key": "***",
                    "bucket": "",
                    "enabled": False,
                    "endpoint": "",
                    "media_delivery": "base64",
                    "path_style": False,
                    "public_url": "",
                    "region": "",
                    "retention_days": 0,
                },
                "webhook": url,
            }

    def wuzapi_get_webhook(self, instance_id: str) -> dict[str, Any]:
        with self._lock:
            hook = self._instance(instance_id).hook
            return {"webhook": hook.url, "subscribe": ",".join(hook.events).split(",")}

    def wuzapi_set_webhook(self, instance_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        """`POST /webhook {webhookurl, events}`: without `events` only the URL is stored, but the
        live subscription is emptied (the real server's cache), so nothing is posted any more."""
        with self._lock:
            hook = self._instance(instance_id).hook
            url = payload.get("webhookurl")
            hook.url = url if isinstance(url, str) else ""
            events = self._events_field(payload)
            if events:
                hook.events = events
            hook.live_events = events
            return {"webhook": hook.url}

    def wuzapi_update_webhook(self, instance_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        """`PUT /webhook {webhook, events, active}`: `active` missing or false clears the URL."""
        with self._lock:
            hook = self._instance(instance_id).hook
            url = payload.get("webhook")
            active = payload.get("active") is True
            events = self._events_field(payload)
            hook.url = url if active and isinstance(url, str) else ""
            if events:
                hook.events = events if active else []
            hook.live_events = events if active else []
            return {"active": active, "events": events or None, "webhook": hook.url}

    def wuzapi_delete_webhook(self, instance_id: str) -> dict[str, Any]:
        with self._lock:
            hook = self._instance(instance_id).hook
            hook.url, hook.events, hook.live_events = "", [], []
            return {"Details": "Webhook and events deleted successfully"}

    @staticmethod
    def _events_field(payload: dict[str, Any]) -> list[str]:
        events = payload.get("events")
        return payloads.wuzapi_valid_events(events) if isinstance(events, list) else []

    def hmac_config(self, instance_id: str, key: str | None, *, delete: bool = False) -> dict[str, Any]:
        """`/session/hmac/config`: GET (key None), POST (a key of 32+ characters), DELETE."""
        with self._lock:
            hook = self._instance(instance_id).hook
            if delete:
                hook.secret = None
                return {"Details": "HMAC configuration deleted successfully"}
            if key is None:
                return {"hmac_key": "***" if hook.secret is not None else ""}
            if len(key) < 32:
                raise payloads.wuzapi_refused(400, "HMAC key must be at least 32 characters long")
            hook.secret = key
            return {"Details": "HMAC configuration saved successfully"}

    # --- Evolution and Meta lookups ----------------------------------------------------------

    def evolution_instance(self, name: str, apikey: str | None) -> str:
        """The instance guard (404 first, whatever the key), then the key: the instance's or the global one."""
        with self._lock:
            instance = self._instances.get(name)
            if instance is None or instance.flavour != "evolution":
                raise payloads.evolution_refused(404, [f'The "{name}" instance does not exist'])
            if apikey not in (instance.token, self._config.admin_token):
                raise payloads.evolution_refused(401, "Unauthorized")
            return instance.id

    def evolution_state(self, instance_id: str) -> dict[str, Any]:
        with self._lock:
            instance = self._instance(instance_id)
            return {"instance": {"instanceName": instance.id, "state": "open" if instance.connected else "close"}}

    def meta_instance(self, phone_number_id: str, bearer: str | None, method: str = "post") -> str:
        """The access token first (190), then the phone number id it may use (100/33)."""
        with self._lock:
            owner = next(
                (i for i in self._instances.values() if i.flavour == "meta" and bearer and i.token == bearer), None
            )
            if owner is None:
                raise payloads.meta_refused(401, 190, "Invalid OAuth access token - Cannot parse access token")
            if owner.meta_phone_id != phone_number_id:
                raise payloads.meta_refused(
                    400,
                    100,
                    f"Unsupported {method} request. Object with ID '{phone_number_id}' does not exist, "
                    "cannot be loaded due to missing permissions, or does not support this operation.",
                    kind="GraphMethodException",
                    error_subcode=33,
                )
            return owner.id

    def meta_number(self, instance_id: str, fields: str | None) -> dict[str, Any]:
        """The number's phone number node, with the fields asked for."""
        with self._lock:
            instance = self._instance(instance_id)
            node = {
                "id": instance.meta_phone_id,
                "display_phone_number": payloads.display_phone_number(instance.number),
                "verified_name": instance.id,
                "quality_rating": instance.quality_rating,
                "status": instance.number_status,
                "code_verification_status": "VERIFIED",
                "name_status": "APPROVED",
                "platform_type": "CLOUD_API",
                "account_mode": "LIVE",
                "throughput": {"level": instance.throughput},
                "whatsapp_business_manager_messaging_limit": instance.messaging_limit,
                "is_official_business_account": False,
            }
            return payloads.meta_phone_number(node, fields)

    def set_number_status(self, instance_id: str, body: NumberStatusBody) -> dict[str, Any]:
        """What the Graph API reports of a Meta number from now on (no webhook: Meta's
        `phone_number_quality_update` and account updates are not simulated)."""
        with self._lock:
            instance = self._instance(instance_id)
            if instance.flavour != "meta":
                raise SimError(400, "not_meta", "only a Cloud API number has a phone number node")
            instance.number_status = body.status or instance.number_status
            instance.quality_rating = body.quality_rating or instance.quality_rating
            instance.messaging_limit = body.messaging_limit or instance.messaging_limit
            instance.throughput = body.throughput or instance.throughput
            return {
                "status": instance.number_status,
                "qualityRating": instance.quality_rating,
                "messagingLimit": instance.messaging_limit,
                "throughput": instance.throughput,
            }

    # --- messages ----------------------------------------------------------------------------

    def send_wuzapi(self, instance_id: str, raw: bytes, idempotency_key: str | None) -> dict[str, Any]:
        """`POST /chat/send/text` as real wuzapi answers it (the calls server's too).

        An `Id` the recipient already got is the same message on their phone: recorded once,
        counted as a resend, answered 200 again. The `Idempotency-Key` header is only recorded.
        """
        with self._lock:
            instance = self._instance(instance_id)
            if not instance.session:
                raise payloads.wuzapi_refused(500, "no session")
            phone, text, message_id = payloads.wuzapi_send_body(raw)
            if not instance.connected:
                raise payloads.wuzapi_refused(500, NOT_CONNECTED_TEXT)
            if (code := instance.take_send_error(phone.removesuffix("@s.whatsapp.net"))) is not None:
                raise payloads.wuzapi_send_error(code)
            message = self._record_send(
                instance, phone, text, message_id or wire.whatsapp_message_id(), idempotency_key
            )
            return {"Details": "Sent", "Id": message.id, "Timestamp": int(time.time())}

    def send_evolution(self, instance_id: str, raw: bytes, idempotency_key: str | None) -> dict[str, Any]:
        with self._lock:
            instance = self._instance(instance_id)
            number, text = payloads.evolution_send_body(raw)
            if not instance.connected:
                raise payloads.evolution_refused(500, "Connection Closed")
            message = self._record_send(instance, number, text, wire.whatsapp_message_id(), idempotency_key)
            return payloads.evolution_sent(message.id, number, text, time.time(), instance.uuid)

    def send_meta(self, instance_id: str, raw: bytes, idempotency_key: str | None) -> dict[str, Any]:
        with self._lock:
            instance = self._instance(instance_id)
            to, text = payloads.meta_send_body(raw)
            if (code := instance.take_send_error("".join(ch for ch in to if ch.isdigit()))) is not None:
                raise payloads.meta_send_error(code)
            wa_id = "".join(ch for ch in to if ch.isdigit())
            message = self._record_send(instance, wa_id, text, wire.wamid(wa_id), idempotency_key)
            return payloads.meta_sent(to, message.id)

    def _record_send(
        self, instance: Instance, phone: str, text: str, message_id: str, idempotency_key: str | None
    ) -> SentMessage:
        """What the recipient's phone shows: messages keyed by id, so a resent id is not a second one."""
        recipient = phone.removesuffix("@s.whatsapp.net")
        key = (instance.id, recipient, message_id)
        known = self._delivered.get(key)
        if known is not None:
            known.resends += 1
            return known
        message = SentMessage(
            message_id, instance.id, instance.flavour, recipient, text, idempotency_key, time.time_ns()
        )
        self._sent.append(message)
        self._delivered[key] = message
        instance.contacts.add(recipient)
        return message

    def set_send_error(self, instance_id: str, code: str | None, times: int | None) -> dict[str, Any]:
        """Every send of the instance is refused with `code` (`times` sends, or until cleared)."""
        with self._lock:
            instance = self._instance(instance_id)
            if code == "463" and instance.flavour not in ("calls", "wuzapi"):
                raise SimError(400, "not_on_this_server", "463 is a wuzapi (whatsmeow) send error")
            if code is not None and code != "463" and instance.flavour != "meta":
                raise SimError(400, "not_on_this_server", "Meta error codes are answered by the /meta server")
            instance.send_error = code
            instance.send_error_remaining = times if code is not None else None
            return {"sendError": code, "remaining": instance.send_error_remaining}

    def sent_messages(self) -> list[dict[str, Any]]:
        with self._lock:
            return [message.view() for message in self._sent]

    def incoming_message(
        self,
        instance_id: str,
        sender: str,
        text: str,
        kind: str = "text",
        *,
        push_name: str | None = "Cliente",
        addressing: str = "pn",
    ) -> dict[str, Any]:
        """A message from `sender` arrives, posted as the instance's server posts it: `{id, eventId}`
        (`eventId` is the simulator's, for `/_sim/webhooks/redeliver`; the calls envelope's too).
        `kind` other than text: `text` is the caption of an image, video or document.

        `addressing` (Evolution only) is how WhatsApp addressed the chat: `pn`, `lid` or
        `lid_only` (see `payloads.evolution_upsert`)."""
        with self._lock:
            instance = self._instance(instance_id)
            if instance.flavour != "meta" and not instance.connected:
                raise SimError(409, "not_connected", "the instance has no WhatsApp session")
            if addressing != "pn" and instance.flavour != "evolution":
                raise SimError(400, "not_on_this_server", "only the Evolution server simulates LID-addressed chats")
            sender = sender.lstrip("+")
            instance.contacts.add(sender)
            if kind != "text":
                return self._incoming_other(instance, sender, text, kind)
            now = time.time()
            data: dict[str, Any]
            if instance.flavour == "calls":
                message_id = wire.whatsapp_message_id()
                data = {"id": message_id, "from": sender, "text": text, "timestamp": rfc3339_nano(time.time_ns())}
                event_id = self._emit(instance, "message", data)
            elif instance.flavour == "wuzapi":
                message_id = wire.phone_message_id()
                event = payloads.wuzapi_message_event(message_id, sender, text, now, push_name or "")
                event_id = self._emit_wuzapi(instance, {"event": event, "type": "Message"})
            elif instance.flavour == "evolution":
                message_id = wire.phone_message_id()
                data = payloads.evolution_upsert(
                    message_id, sender, text, now, instance.uuid, push_name=push_name, addressing=addressing
                )
                self._remember_evolution_contact(instance, data["key"], push_name)
                event_id = self._emit_evolution(instance, "messages.upsert", data)
            else:
                message_id = wire.wamid(sender)
                value = payloads.meta_message(message_id, sender, text, now, push_name=push_name)
                event_id = self._emit_meta(instance, "messages", value)
            return {"id": message_id, "eventId": event_id}

    def _incoming_other(self, instance: Instance, sender: str, caption: str, kind: str) -> dict[str, Any]:
        """A photo, voice note, video, document, sticker, location or reaction (`incoming`)."""
        reacted = self._last_sent_to(instance, sender)
        flavour = instance.flavour
        if flavour == "meta":
            message_id, reacted_id = wire.wamid(sender), reacted or wire.wamid(sender)
        else:
            message_id = wire.whatsapp_message_id() if flavour == "calls" else wire.phone_message_id()
            reacted_id = reacted or wire.whatsapp_message_id()
        arrival = incoming.Arrival(kind, message_id, sender, caption, reacted_id, time.time())
        if flavour == "calls":
            event_id = self._emit(instance, "message", incoming.envelope_message(arrival, rfc3339_nano(time.time_ns())))
        elif flavour == "wuzapi":
            event_id = self._emit_wuzapi(instance, incoming.wuzapi_postmap(arrival, "Cliente"))
        elif flavour == "evolution":
            event_id = self._emit_evolution(
                instance, "messages.upsert", incoming.evolution_upsert(arrival, instance.uuid)
            )
        else:
            event_id = self._emit_meta(instance, "messages", incoming.meta_message(arrival))
        return {"id": message_id, "eventId": event_id}

    def _last_sent_to(self, instance: Instance, recipient: str) -> str | None:
        """The id of the last message the instance sent `recipient` (what a reaction reacts to)."""
        return next((m.id for m in reversed(self._sent) if m.instance_id == instance.id and m.phone == recipient), None)

    def _remember_evolution_contact(self, instance: Instance, key: dict[str, Any], push_name: str | None) -> None:
        """What Evolution stores on an incoming message: the contact's pushName by `remoteJid`, and in
        its `IsOnWhatsapp` cache (one for the whole server) a phone number's LID, learned only from
        a phone-addressed message whose `remoteJidAlt` is that LID (`saveOnWhatsappCache` keeps the
        alternate address only when it contains `@lid`)."""
        if push_name:
            instance.push_names[key["remoteJid"]] = push_name
        alternate = key.get("remoteJidAlt")
        if key["remoteJid"].endswith("@s.whatsapp.net") and isinstance(alternate, str) and "@lid" in alternate:
            self._on_whatsapp[alternate] = key["remoteJid"]

    def evolution_numbers(self, instance_id: str, raw: bytes) -> list[dict[str, Any]]:
        """`POST /chat/whatsappNumbers/{instance}` as Evolution's `whatsappNumber` answers it."""
        with self._lock:
            instance = self._instance(instance_id)
            answers = []
            for number in payloads.evolution_numbers_body(raw):
                phone_jid = self._on_whatsapp.get(number) if "@lid" in number else None
                name = instance.push_names.get(phone_jid or (number if "@lid" in number else wire.jid(number)))
                answers.append(payloads.evolution_on_whatsapp(number, phone_jid, name))
            return answers

    def receipt(self, instance_id: str, message_id: str, status: str) -> None:
        """The recipient's phone got (or read) a message the instance sent; `failed` is not a
        receipt wuzapi ever posts."""
        with self._lock:
            instance = self._instance(instance_id)
            message = next(
                (m for m in reversed(self._sent) if m.id == message_id and m.instance_id == instance_id), None
            )
            if message is None:
                raise SimError(404, "message_not_found")
            now = time.time()
            if instance.flavour == "calls":
                data = {"id": message_id, "status": status, "timestamp": rfc3339_nano(time.time_ns())}
                self._emit(instance, "receipt", data)
            elif instance.flavour == "wuzapi":
                if status == "failed":
                    raise SimError(400, "not_posted_by_wuzapi", "wuzapi posts Delivered and Read receipts only")
                event = payloads.wuzapi_receipt_event(message.phone, [message_id], now, read=status == "read")
                state = "Read" if status == "read" else "Delivered"
                self._emit_wuzapi(instance, {"event": event, "state": state, "type": "ReadReceipt"})
            elif instance.flavour == "evolution":
                data = payloads.evolution_update(message_id, message.phone, status, instance.uuid)
                self._emit_evolution(instance, "messages.update", data)
            else:
                self._emit_meta(instance, "statuses", payloads.meta_status(message_id, message.phone, status, now))

    # --- calls -------------------------------------------------------------------------------

    def dial(self, instance_id: str, phone: str, video: bool, idempotency_key: str | None) -> dict[str, Any]:
        """Reserve a slot, then create the call (at once, or when held dials are released).

        The reservation counts toward the limit but `/call/active` does not list it. A repeated
        Idempotency-Key returns the same call; a repeat while the first is in flight waits for it.
        """
        with self._lock:
            instance = self._calls_instance(instance_id)
            known = self._known_dial(instance, idempotency_key, phone, video)
            if known is not None:
                return {"callId": known}
            if not instance.connected:
                raise SimError(409, "not_connected", "the instance has no WhatsApp session")
            self._check_video(video)
            self._check_slot(instance)
            reservation = uuid.uuid4().hex
            instance.reservations.add(reservation)
            if idempotency_key is not None:
                instance.dials[idempotency_key] = DialRecord(phone, video)
            self._dials_changed.wait_for(lambda: not self.dials_held)
            instance.reservations.discard(reservation)
            call = self._new_call(instance, "outgoing", phone, video)
            if idempotency_key is not None:
                instance.dials[idempotency_key] = DialRecord(phone, video, call.call_id)
            self._dials_changed.notify_all()
            self._emit_call(instance, call, "ringing")
            return {"callId": call.call_id}

    def _known_dial(self, instance: Instance, key: str | None, phone: str, video: bool) -> str | None:
        """The call id an Idempotency-Key already produced, waiting while that dial is in flight."""
        if key is None:
            return None
        self._dials_changed.wait_for(lambda: key not in instance.dials or instance.dials[key].call_id is not None)
        record = instance.dials.get(key)
        if record is None:
            return None
        if (record.phone, record.video) != (phone, video):
            raise SimError(422, "idempotency_key_reused", "the key was used for another dial")
        return record.call_id

    def incoming_call(self, instance_id: str, sender: str, video: bool) -> dict[str, Any]:
        with self._lock:
            instance = self._calls_instance(instance_id)
            if not instance.connected:
                raise SimError(409, "not_connected")
            self._check_video(video)
            self._check_slot(instance)
            call = self._new_call(instance, "incoming", sender, video)
            self._emit_call(instance, call, "offer")
            return {"callId": call.call_id}

    def active_calls(self, instance_id: str) -> dict[str, Any]:
        with self._lock:
            instance = self._calls_instance(instance_id)
            return {"calls": [call.view() for call in instance.calls.values() if call.live]}

    def call_history(self, instance_id: str) -> dict[str, Any]:
        """Every call of the instance, newest first, ended ones included."""
        with self._lock:
            instance = self._calls_instance(instance_id)
            return {"calls": [call.view() for call in reversed(instance.calls.values())]}

    def get_call(self, instance_id: str, call_id: str) -> dict[str, Any]:
        with self._lock:
            return {"call": self._call(self._calls_instance(instance_id), call_id).view()}

    def hangup(self, instance_id: str, call_id: str) -> dict[str, Any]:
        with self._lock:
            instance = self._calls_instance(instance_id)
            call = self._call(instance, call_id)
            self._end(instance, call, reason="hangup", ended_by="local")
            return {"call": call.view()}

    def stop_video(self, instance_id: str, call_id: str) -> dict[str, Any]:
        """Turn the camera off: the call keeps its slot."""
        with self._lock:
            instance = self._calls_instance(instance_id)
            call = self._live_call(instance, call_id)
            call.video = False
            self._emit_call(instance, call, "video")
            return {"call": call.view()}

    def call_action(self, instance_id: str, call_id: str, action: str, details: CallActionBody) -> dict[str, Any]:
        """Drive a call from the peer's or the network's side (control API)."""
        with self._lock:
            instance = self._calls_instance(instance_id)
            call = self._call(instance, call_id)
            if action == "end":
                self._end(instance, call, reason=details.reason or "hangup", ended_by=details.ended_by or "remote")
            elif action in ("recording_ready", "recording_failed"):
                recording = {"status": action.removeprefix("recording_"), "url": details.url}
                self._emit_call(instance, call, action, recording=recording)
            else:
                self._advance(instance, self._live_call(instance, call_id), action, details)
            return {"call": call.view()}

    def _advance(self, instance: Instance, call: Call, action: str, details: CallActionBody) -> None:
        if action == "answer":
            if call.state != "ringing":
                raise SimError(409, "invalid_transition", f"cannot answer a call in state {call.state}")
            call.state, call.answered_ns = "connecting", time.time_ns()
            self._emit_call(instance, call, "answered")
        elif action == "active":
            call.state = "active"
            call.answered_ns = call.answered_ns or time.time_ns()
            self._emit_call(instance, call, "active")
        else:
            call.video = True if details.video is None else details.video
            self._emit_call(instance, call, "video")

    def require_live_call(self, instance_id: str, call_id: str) -> None:
        """For a media attachment: `404 call_not_found` for an unknown call, `409 call_ended` for an ended one."""
        with self._lock:
            self._live_call(self._calls_instance(instance_id), call_id)

    def call_is_live(self, instance_id: str, call_id: str) -> bool:
        with self._lock:
            instance = self._instances.get(instance_id)
            call = instance.calls.get(call_id) if instance is not None else None
            return call is not None and call.live

    def _check_slot(self, instance: Instance) -> None:
        limit = (
            instance.calls_max_concurrent
            if self.capabilities.calls_per_instance_limit
            else self.capabilities.calls_max_concurrent
        )
        if instance.occupancy() >= limit:
            raise SimError(409, "line_busy", "no free call slot on this instance")

    def _new_call(self, instance: Instance, direction: str, peer: str, video: bool) -> Call:
        call = Call(uuid.uuid4().hex.upper(), direction, peer, instance.number, video, "ringing", time.time_ns())
        instance.calls[call.call_id] = call
        return call

    def _end(self, instance: Instance, call: Call, *, reason: str, ended_by: str) -> None:
        """End once: a repeat keeps the first reason and emits nothing."""
        if not call.live:
            return
        call.state, call.ended_ns, call.end_reason, call.ended_by = "ended", time.time_ns(), reason, ended_by
        self._emit_call(instance, call, "ended")

    def _check_video(self, video: bool) -> None:
        if video and not self.capabilities.calls_video:
            raise SimError(400, "video_unsupported")

    def _calls_instance(self, instance_id: str) -> Instance:
        if not self.capabilities.calls:
            raise SimError(404, "not_found", "this server has no calls")
        instance = self._instance(instance_id)
        if instance.kind != "calls":
            raise SimError(400, "not_calls_instance")
        return instance

    def _call(self, instance: Instance, call_id: str) -> Call:
        call = instance.calls.get(call_id)
        if call is None:
            raise SimError(404, "call_not_found")
        return call

    def _live_call(self, instance: Instance, call_id: str) -> Call:
        call = self._call(instance, call_id)
        if not call.live:
            raise SimError(409, "call_ended")
        return call

    # --- events ------------------------------------------------------------------------------

    def events(self, instance_id: str | None = None) -> list[dict[str, Any]]:
        """Calls-server events as their envelope; other flavours as `{eventId, instanceId, flavour,
        event, seq, payload}` (`payload`: the posted JSON, or the form fields with `jsonData` parsed)."""
        with self._lock:
            return [
                {**event.view, "delivered": event.delivery is not None}
                for event in self._events.values()
                if instance_id is None or event.view["instanceId"] == instance_id
            ]

    def redeliver(self, event_id: str) -> None:
        """Send an already emitted event again, byte for byte: what a duplicate looks like."""
        with self._lock:
            event = self._events.get(event_id)
            if event is None:
                raise SimError(404, "event_not_found")
            if event.delivery is None:
                raise SimError(409, "event_not_subscribed", "the event was not sent to any URL")
            self._deliver(event.delivery)

    def _emit_call(self, instance: Instance, call: Call, sub_event: str, **extra: Any) -> None:
        data = {"type": sub_event, **call.view(), **extra, "timestamp": rfc3339_nano(time.time_ns())}
        self._emit(instance, "call", data)

    def _emit(
        self,
        instance: Instance,
        name: str,
        data: dict[str, Any],
        instance_summary: dict[str, Any] | None = None,
    ) -> str:
        """The calls server's signed envelope; returns its eventId."""
        instance.seq += 1
        envelope: dict[str, Any] = {
            "EventType": name,
            "event": name,
            "eventId": str(uuid.uuid4()),
            "instanceId": instance.id,
            "seq": instance.seq,
            "data": data,
        }
        if instance_summary is not None:
            envelope["instance"] = instance_summary
        body = json.dumps(envelope, separators=(",", ":")).encode()
        subscription, _ = self._effective_subscription(instance)
        delivery = None
        if subscription is not None and subscription.wants(name):
            delivery = Delivery(
                envelope["eventId"], instance.id, subscription.url, body, subscription.signing_secrets()
            )
            self._deliver(delivery)
        self._log(envelope["eventId"], EmittedEvent(envelope, delivery))
        return str(envelope["eventId"])

    def _emit_wuzapi(self, instance: Instance, postmap: dict[str, Any]) -> str:
        """Posted only when the live subscription lists its type (or `All`); returns the event's id."""
        body, content_type = payloads.wuzapi_webhook(
            postmap, instance_name=instance.id, user_id=instance.user_id, form=instance.webhook_format == "form"
        )
        live = instance.hook.live_events
        wanted = postmap["type"] in live or "All" in live
        return self._emit_real(instance, postmap["type"], body, content_type, wanted=wanted)

    def _emit_evolution(self, instance: Instance, event: str, data: dict[str, Any]) -> str:
        body = payloads.evolution_webhook(
            event, instance.id, data, url=instance.hook.url, own_number=instance.number, seconds=time.time()
        )
        configured = instance.hook.events
        wanted = not configured or event.replace(".", "_").upper() in configured
        return self._emit_real(instance, event, body, "application/json", wanted=wanted)

    def _emit_meta(self, instance: Instance, name: str, value: dict[str, Any]) -> str:
        assert instance.meta_phone_id is not None
        body = payloads.meta_webhook(instance.waba_id, instance.number, instance.meta_phone_id, value)
        return self._emit_real(instance, name, body, "application/json", wanted=True)

    def _emit_real(self, instance: Instance, name: str, body: bytes, content_type: str, *, wanted: bool) -> str:
        instance.seq += 1
        event_id = str(uuid.uuid4())
        delivery = None
        if wanted and instance.hook.url:
            secrets = (instance.hook.secret,) if instance.hook.secret is not None else ()
            delivery = Delivery(event_id, instance.id, instance.hook.url, body, secrets, instance.flavour, content_type)
            self._deliver(delivery)
        view = {
            "eventId": event_id,
            "instanceId": instance.id,
            "flavour": instance.flavour,
            "event": name,
            "seq": instance.seq,
            "payload": _readable(body, content_type),
        }
        self._log(event_id, EmittedEvent(view, delivery))
        return event_id

    def _log(self, event_id: str, event: EmittedEvent) -> None:
        self._events[event_id] = event
        if len(self._events) > EVENT_LOG_SIZE:
            self._events.popitem(last=False)


def _readable(body: bytes, content_type: str) -> Any:
    if content_type.startswith("application/x-www-form-urlencoded"):
        fields: dict[str, Any] = dict(parse_qsl(body.decode(), keep_blank_values=True))
        fields["jsonData"] = json.loads(fields["jsonData"])
        return fields
    return json.loads(body)
