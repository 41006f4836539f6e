"""What the real servers answer and post, shaped and encoded as they do (pure functions).

- wuzapi: answers `{"code", "data"|"error", "success"}` (Go `json.NewEncoder`: sorted, `\\n`);
  webhooks are the event map `{"event", "type", "state"?}` plus `instanceName` and `userID`,
  in JSON mode (every level sorted) or form mode (`instanceName=..&jsonData=..&userID=..`).
- Evolution API v2: errors `{"status", "error", "response": {"message"}}`; webhooks
  `{event, instance, data, destination, date_time, sender, server_url, apikey}`.
- Meta Cloud API: errors `{"error": {"message", "type", "code", ...}}`; webhooks
  `{"object": "whatsapp_business_account", "entry": [{"id", "changes": [{"value", "field"}]}]}`.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from devstack.simulator import wire

WUZAPI_EVENT_TYPES = frozenset(
    {
        "Message",
        "UndecryptableMessage",
        "Receipt",
        "MediaRetry",
        "ReadReceipt",
        "GroupInfo",
        "JoinedGroup",
        "Picture",
        "BlocklistChange",
        "Blocklist",
        "Connected",
        "Disconnected",
        "ConnectFailure",
        "KeepAliveRestored",
        "KeepAliveTimeout",
        "QRTimeout",
        "LoggedOut",
        "ClientOutdated",
        "TemporaryBan",
        "StreamError",
        "StreamReplaced",
        "PairSuccess",
        "PairError",
        "QR",
        "QRScannedWithoutMultidevice",
        "PrivacySettings",
        "PushNameSetting",
        "UserAbout",
        "AppState",
        "AppStateSyncComplete",
        "HistorySync",
        "OfflineSyncCompleted",
        "OfflineSyncPreview",
        "CallOffer",
        "CallAccept",
        "CallTerminate",
        "CallOfferNotice",
        "CallRelayLatency",
        "Presence",
        "ChatPresence",
        "IdentityChange",
        "CATRefreshError",
        "NewsletterJoin",
        "NewsletterLeave",
        "NewsletterMuteChange",
        "NewsletterLiveUpdate",
        "FBMessage",
        "All",
    }
)
WUZAPI_DEFAULT_EVENTS = ["Message", "ReadReceipt", "Connected", "Disconnected", "LoggedOut"]
EVOLUTION_DEFAULT_EVENTS = ["MESSAGES_UPSERT", "MESSAGES_UPDATE", "CONNECTION_UPDATE"]
EVOLUTION_SERVER_URL = "http://localhost:8080"
META_131049_DETAILS = "In order to maintain a healthy ecosystem engagement, the message failed to be delivered."
META_API_VERSION_PATTERN = r"v[0-9]{1,3}\.[0-9]{1,3}"
META_TEXT_CHARS = 4096


class Refused(Exception):
    """A real server's non-2xx answer, already encoded as that server writes it."""

    def __init__(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.content_type = content_type


# --- wuzapi ----------------------------------------------------------------------------------


def wuzapi_answer(data: Any) -> bytes:
    """`Respond` for a success: the envelope, every level sorted, then a newline."""
    return wuzapi_encode({"code": 200, "data": data, "success": True})


def wuzapi_encode(envelope: dict[str, Any]) -> bytes:
    return wire.go_json(envelope, sort_keys=True) + b"\n"


def wuzapi_refused(status: int, text: str) -> Refused:
    return Refused(status, wuzapi_encode({"code": status, "error": text, "success": False}))


def wuzapi_raw(payload: dict[str, Any]) -> bytes:
    """`respondWithJSON` (the HMAC routes): the object alone, no envelope."""
    return wire.go_json(payload, sort_keys=True) + b"\n"


def wuzapi_valid_events(names: list[Any]) -> list[str]:
    """Unknown names are dropped silently, as the real server does."""
    return [name for name in names if isinstance(name, str) and name in WUZAPI_EVENT_TYPES]


def wuzapi_message_event(message_id: str, sender: str, text: str, seconds: float, push_name: str) -> dict[str, Any]:
    """whatsmeow's `events.Message` for a text from a phone-number-addressed chat (struct order)."""
    chat = wire.jid(sender)
    info = {
        "Chat": chat,
        "Sender": chat,
        "IsFromMe": False,
        "IsGroup": False,
        "AddressingMode": "",
        "SenderAlt": "",
        "RecipientAlt": "",
        "BroadcastListOwner": "",
        "BroadcastRecipients": None,
        "ID": message_id,
        "ServerID": 0,
        "Type": "text",
        "PushName": push_name,
        "Timestamp": wire.wuzapi_time(seconds),
        "Category": "",
        "Multicast": False,
        "MediaType": "",
        "Edit": "",
        "MsgBotInfo": {"EditType": "", "EditTargetID": "", "EditSenderTimestampMS": "0001-01-01T00:00:00Z"},
        "MsgMetaInfo": {
            "TargetID": "",
            "TargetSender": "",
            "TargetChat": "",
            "DeprecatedLIDSession": None,
            "ThreadMessageID": "",
            "ThreadMessageSenderJID": "",
        },
        "VerifiedName": None,
        "DeviceSentMeta": None,
    }
    return {
        "Info": info,
        "Message": {"conversation": text},
        "IsEphemeral": False,
        "IsViewOnce": False,
        "IsViewOnceV2": False,
        "IsViewOnceV2Extension": False,
        "IsDocumentWithCaption": False,
        "IsLottieSticker": False,
        "IsBotInvoke": False,
        "IsEdit": False,
        "SourceWebMsg": None,
        "UnavailableRequestID": "",
        "RetryCount": 0,
        "NewsletterMeta": None,
        "RawMessage": {"conversation": text},
    }


def wuzapi_receipt_event(recipient: str, message_ids: list[str], seconds: float, read: bool) -> dict[str, Any]:
    """whatsmeow's `events.Receipt` (MessageSource flattened); `Type` is `""` for delivered."""
    chat = wire.jid(recipient)
    return {
        "Chat": chat,
        "Sender": chat,
        "IsFromMe": False,
        "IsGroup": False,
        "AddressingMode": "",
        "SenderAlt": "",
        "RecipientAlt": "",
        "BroadcastListOwner": "",
        "BroadcastRecipients": None,
        "MessageIDs": message_ids,
        "Timestamp": wire.wuzapi_time(seconds),
        "Type": "read" if read else "",
        "MessageSender": "",
    }


def wuzapi_webhook(postmap: dict[str, Any], *, instance_name: str, user_id: str, form: bool) -> tuple[bytes, str]:
    """The request body of one webhook and its content type.

    `postmap` is `{"event": <struct>, "type": ..., "state"?: ...}`. JSON mode re-parses it into
    maps (every level sorted) and adds `instanceName` and `userID`; form mode sends it as the
    `jsonData` field (only its top level sorted) next to `instanceName` and `userID`.
    """
    if form:
        fields = {
            "jsonData": wire.go_top_sorted_json(postmap).decode(),
            "userID": user_id,
            "instanceName": instance_name,
        }
        return wire.go_form(fields), "application/x-www-form-urlencoded"
    body = {**postmap, "instanceName": instance_name, "userID": user_id}
    return wire.go_json(body, sort_keys=True), "application/json"


# --- Evolution API ---------------------------------------------------------------------------


def evolution_refused(status: int, message: Any) -> Refused:
    error = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found"}.get(
        status, "Internal Server Error"
    )
    body = {"status": status, "error": error, "response": {"message": message}}
    return Refused(status, wire.node_json(body), "application/json; charset=utf-8")


def evolution_sent(message_id: str, number: str, text: str, seconds: float, instance_uuid: str) -> dict[str, Any]:
    """`prepareMessage(messageSent)`: the 201 answer of `sendText` (and the `send.message` data)."""
    return {
        "key": {"remoteJid": wire.jid(number), "fromMe": True, "id": message_id},
        "pushName": "Você",
        "status": "PENDING",
        "message": {"conversation": text},
        "contextInfo": {
            "mentionedJid": [],
            "groupMentions": [],
            "ephemeralSettingTimestamp": {"low": int(seconds) - 172800, "high": 0, "unsigned": False},
            "disappearingMode": {"initiator": 0},
        },
        "messageType": "conversation",
        "messageTimestamp": int(seconds),
        "instanceId": instance_uuid,
        "source": "web",
    }


def evolution_upsert(
    message_id: str,
    sender: str,
    text: str,
    seconds: float,
    instance_uuid: str,
    *,
    push_name: str | None = "Cliente",
    addressing: str = "pn",
) -> dict[str, Any]:
    """`messages.upsert` data of an incoming text in a 1:1 chat, the key as Baileys builds it: a
    phone-addressed chat (`pn`) has the sender's LID in `remoteJidAlt`, a LID-addressed one (`lid`)
    the phone number there; `lid_only` is a LID chat whose stanza carried no number (no
    `remoteJidAlt` at all). Without a notify name WhatsApp sends none, and Evolution's
    `prepareMessage` leaves `pushName` null for a 1:1 chat."""
    phone_jid, lid_jid = wire.jid(sender), wire.lid_jid(sender)
    key: dict[str, Any] = {"remoteJid": phone_jid if addressing == "pn" else lid_jid}
    if addressing != "lid_only":
        key["remoteJidAlt"] = lid_jid if addressing == "pn" else phone_jid
    key |= {
        "fromMe": False,
        "id": message_id,
        "participant": "",
        "addressingMode": "pn" if addressing == "pn" else "lid",
    }
    return {
        "key": key,
        "pushName": push_name,
        "status": "DELIVERY_ACK",
        "message": {"conversation": text},
        "messageType": "conversation",
        "messageTimestamp": int(seconds),
        "instanceId": instance_uuid,
        "source": "android",
    }


def evolution_on_whatsapp(number: str, phone_jid: str | None, name: str | None) -> dict[str, Any]:
    """One `OnWhatsAppDto` of `whatsappNumbers`: a LID the cache maps answers its phone JID; a LID
    it does not is answered as itself with `lid: "lid"`; a number is answered as its JID (every
    number is on WhatsApp here). `name` is the pushName of the instance's contact, when known."""
    is_lid = "@lid" in number
    jid = phone_jid or (number if is_lid else wire.jid("".join(ch for ch in number if ch.isdigit())))
    answer: dict[str, Any] = {"jid": jid, "exists": True, "number": number}
    if name is not None:
        answer["name"] = name
    if is_lid and phone_jid is None:
        answer["lid"] = "lid"
    return answer


def evolution_numbers_body(raw: bytes) -> list[str]:
    """`whatsappNumberSchema`: `numbers`, an array of strings (at least one, no duplicates)."""
    payload = _json_object(raw)
    numbers = payload.get("numbers") if payload is not None else None
    if not isinstance(numbers, list) or not numbers or not all(isinstance(n, str) for n in numbers):
        raise evolution_refused(400, [["instance.numbers is not of a type(s) array"]])
    if len(set(numbers)) != len(numbers):
        raise evolution_refused(400, [["instance.numbers contains duplicate item"]])
    return numbers


EVOLUTION_RECEIPT = {"delivered": "DELIVERY_ACK", "read": "READ", "failed": "ERROR"}


def evolution_update(message_id: str, recipient: str, status: str, instance_uuid: str) -> dict[str, Any]:
    """`messages.update` data: flat, the WhatsApp id in `keyId`, Evolution's own id in `messageId`."""
    return {
        "keyId": message_id,
        "remoteJid": wire.jid(recipient),
        "fromMe": True,
        "status": EVOLUTION_RECEIPT[status],
        "instanceId": instance_uuid,
        "messageId": wire.evolution_cuid(),
    }


def evolution_webhook(
    event: str, instance_name: str, data: dict[str, Any], *, url: str, own_number: str, seconds: float
) -> bytes:
    body = {
        "event": event,
        "instance": instance_name,
        "data": data,
        "destination": url,
        "date_time": wire.evolution_date_time(seconds),
        "sender": wire.jid(own_number),
        "server_url": EVOLUTION_SERVER_URL,
        "apikey": None,
    }
    return wire.node_json(body)


# --- Meta Cloud API --------------------------------------------------------------------------


def meta_refused(status: int, code: int, message: str, *, kind: str = "OAuthException", **extra: Any) -> Refused:
    error = {"message": message, "type": kind, "code": code, **extra, "fbtrace_id": _fbtrace_id()}
    return Refused(status, json.dumps({"error": error}, separators=(",", ":")).encode())


# The Cloud API's answers to a send refused for the number's standing (Meta's error-codes page):
# HTTP status, message, and the details it puts in `error_data`.
META_SEND_ERRORS: dict[str, tuple[int, str, str]] = {
    "130429": (
        429,
        "(#130429) Rate limit hit",
        "Cloud API message throughput has been reached.",
    ),
    "131056": (
        400,
        "(#131056) (Business Account, Consumer Account) pair rate limit hit",
        "Too many messages sent from the sender phone number to the same recipient phone number in a short period.",
    ),
    "131049": (
        400,
        "(#131049) This message was not delivered to maintain healthy ecosystem engagement.",
        "In order to maintain a healthy ecosystem engagement, the message failed to be delivered.",
    ),
}


def meta_send_error(code: str) -> Refused:
    status, message, details = META_SEND_ERRORS[code]
    error_data = {"messaging_product": "whatsapp", "details": details}
    if code == "130429":
        return meta_refused(status, int(code), message, error_data=error_data, error_subcode=2494055)
    return meta_refused(status, int(code), message, error_data=error_data)


def wuzapi_send_error(code: str) -> Refused:
    """wuzapi answers a send whatsmeow could not make 500 `error sending message: <err>`;
    whatsmeow's error for a refusal by WhatsApp's server is `server returned error <code>`."""
    return wuzapi_refused(500, f"error sending message: server returned error {code}")


def _fbtrace_id() -> str:
    return secrets.token_urlsafe(17)[:23]


# The fields of a WhatsApp Business phone number node the simulator knows. `messaging_limit_tier`
# is still a field but answers nothing (deprecated for `whatsapp_business_manager_messaging_limit`);
# a name that is no field of the node fails the whole read, as the Graph API does.
META_NUMBER_FIELDS = (
    "id",
    "display_phone_number",
    "verified_name",
    "quality_rating",
    "status",
    "code_verification_status",
    "name_status",
    "platform_type",
    "account_mode",
    "throughput",
    "whatsapp_business_manager_messaging_limit",
    "messaging_limit_tier",
    "is_official_business_account",
)
META_NUMBER_DEFAULT_FIELDS = ("id", "display_phone_number", "verified_name", "quality_rating")


def display_phone_number(number: str) -> str:
    """The node's international form (Meta groups the digits by country; nothing here reads them)."""
    return "+" + number.lstrip("+")


def meta_phone_number(node: dict[str, Any], fields: str | None) -> dict[str, Any]:
    """`GET /{version}/{phone-number-id}?fields=...`: the fields asked for that have a value (none
    asked: the node's defaults), `id` always; an unknown field is the Graph API's (#100)."""
    asked = [name.strip() for name in fields.split(",") if name.strip()] if fields else list(META_NUMBER_DEFAULT_FIELDS)
    for name in asked:
        if name not in META_NUMBER_FIELDS:
            raise meta_refused(
                400,
                100,
                f"(#100) Tried accessing nonexisting field ({name}) on node type (WhatsAppBusinessPhoneNumber)",
            )
    answer = {name: node[name] for name in asked if node.get(name) is not None}
    return {**answer, "id": node["id"]}


def meta_sent(to: str, message_id: str) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp",
        "contacts": [{"input": to, "wa_id": "".join(ch for ch in to if ch.isdigit())}],
        "messages": [{"id": message_id}],
    }


def meta_webhook(waba_id: str, own_number: str, phone_number_id: str, value: dict[str, Any]) -> bytes:
    full_value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": own_number.lstrip("+"), "phone_number_id": phone_number_id},
        **value,
    }
    body = {
        "object": "whatsapp_business_account",
        "entry": [{"id": waba_id, "changes": [{"value": full_value, "field": "messages"}]}],
    }
    return wire.meta_json(body)


def meta_message(
    message_id: str, sender: str, text: str, seconds: float, *, push_name: str | None = "Cliente"
) -> dict[str, Any]:
    contact: dict[str, Any] = {"profile": {"name": push_name}, "wa_id": sender} if push_name else {"wa_id": sender}
    return {
        "contacts": [contact],
        "messages": [
            {"from": sender, "id": message_id, "timestamp": str(int(seconds)), "type": "text", "text": {"body": text}}
        ],
    }


def meta_status(message_id: str, recipient: str, status: str, seconds: float) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": message_id,
        "status": status,
        "timestamp": str(int(seconds)),
        "recipient_id": recipient,
    }
    if status == "delivered":
        entry["pricing"] = {
            "billable": False,
            "pricing_model": "PMP",
            "category": "service",
            "type": "free_customer_service",
        }
    if status == "failed":
        title = "This message was not delivered to maintain healthy ecosystem engagement."
        entry["errors"] = [
            {
                "code": 131049,
                "title": title,
                "message": title,
                "error_data": {"details": META_131049_DETAILS},
                "href": "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/",
            }
        ]
    return {"statuses": [entry]}


# --- request bodies, read as each server reads them ------------------------------------------


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        payload = json.loads(raw) if raw else None
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def _go_field(payload: dict[str, Any], name: str) -> Any:
    """Go's decoder: the exact key first, else any case-insensitive match."""
    if name in payload:
        return payload[name]
    return next((value for key, value in payload.items() if key.lower() == name.lower()), None)


def wuzapi_send_body(raw: bytes) -> tuple[str, str, str | None]:
    """`SendMessage`'s checks, in its order: (recipient, text, Id or None)."""
    payload = _json_object(raw)
    fields = {name: _go_field(payload, name) for name in ("Phone", "Body", "Id")} if payload is not None else {}
    if payload is None or any(value is not None and not isinstance(value, str) for value in fields.values()):
        raise wuzapi_refused(400, "could not decode Payload")
    if not fields["Phone"]:
        raise wuzapi_refused(400, "missing Phone in Payload")
    if not fields["Body"]:
        raise wuzapi_refused(400, "missing Body in Payload")
    phone = fields["Phone"].removeprefix("+")
    if "@" in phone and (phone.startswith("@") or phone.endswith("@")):
        raise wuzapi_refused(400, "could not parse Phone")
    return phone, fields["Body"], fields["Id"] or None


def wuzapi_json_body(raw: bytes) -> dict[str, Any]:
    payload = _json_object(raw)
    if payload is None:
        raise wuzapi_refused(400, "could not decode Payload")
    return payload


def evolution_send_body(raw: bytes) -> tuple[str, str]:
    """`textMessageSchema` (number and text required), then the empty-text check: (number, text)."""
    payload = _json_object(raw)
    if payload is None:
        raise evolution_refused(400, [["instance is not of a type(s) object"]])
    for name in ("number", "text"):
        if name not in payload:
            raise evolution_refused(400, [[f'instance requires property "{name}"']])
    number, text = payload["number"], payload["text"]
    if not isinstance(number, str):
        raise evolution_refused(400, [["Invalid format"]])
    if not isinstance(text, str):
        raise evolution_refused(400, [["instance.text is not of a type(s) string"]])
    if not text.strip():
        raise evolution_refused(400, ["Text is required"])
    digits = "".join(ch for ch in number if ch not in "+() -") if "@" not in number else number
    return digits, text


def meta_send_body(raw: bytes) -> tuple[str, str]:
    """A text message of the Cloud API: (to as sent, body)."""
    payload = _json_object(raw)
    if payload is None:
        raise meta_refused(400, 100, "(#100) Invalid parameter", error_data={"messaging_product": "whatsapp"})
    if payload.get("messaging_product") != "whatsapp":
        raise meta_refused(400, 100, "(#100) The parameter messaging_product is required.")
    to = payload.get("to")
    if not isinstance(to, str) or not to:
        raise meta_refused(400, 100, "(#100) The parameter to is required.")
    if payload.get("type", "text") != "text":
        raise meta_refused(400, 100, "(#100) Only text messages are simulated")
    text = payload.get("text")
    body = text.get("body") if isinstance(text, dict) else None
    if not isinstance(body, str) or not body:
        raise meta_refused(400, 100, "(#100) The parameter text['body'] is required.")
    # Meta documents 4,096 characters for a text body; counted here in UTF-16 code units, the
    # stricter reading of "characters".
    if len(body.encode("utf-16-le")) // 2 > META_TEXT_CHARS:
        raise meta_refused(400, 100, f"(#100) Param text['body'] must be at most {META_TEXT_CHARS} characters long.")
    return to, body
