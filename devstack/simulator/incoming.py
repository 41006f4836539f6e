"""What a customer sends besides text (photos, voice notes, videos, documents, stickers, locations,
reactions), as each server posts it (pure functions; `payloads` holds the text message and the
envelopes).

- wuzapi: whatsmeow's `events.Message` with the content's protobuf message (`waE2E`, Go's
  `encoding/json` of the generated structs: the `json` tags' names, in declaration order, bytes as
  base64, 64-bit integers as numbers); `Info.Type` and `Info.MediaType` as whatsmeow's own
  `getTypeFromMessage` / `getMediaTypeFromMessage` give them; for the five downloadable kinds,
  `processMedia` adds `base64`, `mimeType` (`http.DetectContentType` of the bytes) and `fileName`
  (`<Info.ID><ext>`) at the top of the webhook, with the default `media_delivery = base64`.
- Evolution: `messages.upsert` whose `data.message` is Baileys' `proto.Message` as
  `prepareMessage` leaves it (camelCase proto names, `Long`s as `{low, high, unsigned}`, bytes as
  `{"0": n, ...}`), `messageType` the content key, `data.contextInfo` null for a content type with
  a `contextInfo` field, absent for a reaction; no `base64` (`webhookBase64` is off by default).
- Meta: `messages[]` of `type` image, audio (`voice: true` for a voice note), video, document,
  sticker, location or reaction, as in the Cloud API's webhook reference (pywa's
  `tests/data/updates/message.json`).
- The calls-capable server (our envelope): `message` with `{id, from, type, timestamp}` and no
  `text` (`caption` when one is given).

Read from: asternic/wuzapi 71df5694 (`wmiau.go` `case *events.Message`, `media.go` `processMedia`),
whatsmeow 8d370015 (`proto/waE2E/WAWebProtobufsE2E.pb.go`, `send.go` `getTypeFromMessage`),
EvolutionAPI/evolution-api 3454bec7 (`whatsapp.baileys.service.ts` `messages.upsert`,
`prepareMessage`), Baileys 4599ff84 (`WAProto/WAProto.proto`), david-lev/pywa 1af30edd
(`tests/data/updates/message.json`): the pins of tests/contracts.

The bytes are tiny files of the right kind (a 16x16 JPEG, an Ogg page, an MP4 `ftyp` box, a PDF,
a WebP header), so a receiver that types media by its bytes sees the real type.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any, Literal

from devstack.simulator import files, payloads, wire

MediaKind = Literal["image", "audio", "video", "document", "sticker", "location", "reaction"]
MEDIA_KINDS: tuple[MediaKind, ...] = ("image", "audio", "video", "document", "sticker", "location", "reaction")
DOWNLOADABLE = frozenset({"image", "audio", "video", "document", "sticker"})

_JPEG = base64.b64decode(
    "/9j/4AAQSkZJRgABAQEAAQABAAD/2wBDAAMCAgICAgMCAgIDAwMDBAYEBAQEBAgGBgUGCQgKCgkICQkKDA8MCgsOCwkJDRENDg8QEBEQ"
    "CgwSExIQEw8QEBD/2wBDAQMDAwQDBAgEBAgQCwkLEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ"
    "EBD/wAARCAAQABADASIAAhEBAxEB/8QAFgABAQEAAAAAAAAAAAAAAAAABwQF/8QAJBAAAQQBBAICAwAAAAAAAAAAAQIDBAYFBwgSExEi"
    "ABQJMTL/xAAVAQEBAAAAAAAAAAAAAAAAAAAABv/EACMRAAECBQMFAAAAAAAAAAAAAAECEQMEBQYhABIxFRZhgeH/2gAMAwEAAhEDEQA/"
    "ABSm0mobc8HmExLUlRzzEWPkJWW+ulrsaUVAseUgslSlH9LKuPryIKuWPZdskzXmm3fX5m2nF4GlVxx/HOpx4ks51+MiU/Iaad7UcUo4"
    "tILoS4kqcWkezS0hO/HvuRp0rO6hWnWO1UisZVuFi4GFeyEpmGepa5S5SWVPuciFKRFLgSrwetnyPIB+Vb4N9mKhQMzo5po9XLdDs9d6"
    "ZVix2VEhiL9kuNPxw2gEKcDQ/rs8AuA8VAe0vdl7VOYn+27flGAUgmITjbhSmCg3BYlyeWDkMolvw4KOp1KM6iCNvngZHwetf//Z"
)
# The first bytes each kind's file starts with, padded: enough for a sniffer to type it.
_FILES: dict[str, bytes] = {
    "image": _JPEG,
    "audio": files.ogg_opus(frames=10),  # a real Ogg Opus voice note (200 ms of silence)
    "video": b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + bytes(16),
    "document": files.pdf("comprovante"),  # a real one-page PDF
    "sticker": b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00",
}
# The type the sender's client declares, and (wuzapi) what Go's `http.DetectContentType` says of the bytes.
_DECLARED = {
    "image": "image/jpeg",
    "audio": "audio/ogg; codecs=opus",
    "video": "video/mp4",
    "document": "application/pdf",
    "sticker": "image/webp",
}
_SNIFFED = {
    "image": "image/jpeg",
    "audio": "application/ogg",
    "video": "video/mp4",
    "document": "application/pdf",
    "sticker": "image/webp",
}
# wuzapi's file extension: the first of Go's `mime.ExtensionsByType` for the declared type
# (its built-in table), else the fallback `processMedia` is given.
_WUZAPI_EXTENSIONS = {"image": ".jpeg", "audio": ".ogg", "video": ".mp4", "document": ".pdf", "sticker": ".webp"}
_PROTO_KEYS = {
    "image": "imageMessage",
    "audio": "audioMessage",
    "video": "videoMessage",
    "document": "documentMessage",
    "sticker": "stickerMessage",
    "location": "locationMessage",
    "reaction": "reactionMessage",
}
LATITUDE, LONGITUDE = -23.5613, -46.6565
PLACE, ADDRESS = "Avenida Paulista", "Av. Paulista, 1578 - Bela Vista, São Paulo - SP"
REACTION = "\U0001f44d"
DOCUMENT_NAME = "comprovante.pdf"


@dataclass(frozen=True)
class Arrival:
    """One non-text message: its kind, the sender's message id, its caption (image, video,
    document) and the id of the message a reaction reacts to."""

    kind: str
    message_id: str
    sender: str
    caption: str
    reacted_id: str
    seconds: float


def media_file(kind: str) -> bytes:
    return _FILES[kind]


def file_by_sha256(digest: bytes) -> tuple[str, bytes] | None:
    """The kind and bytes of the simulator's file whose SHA-256 is `digest` (what a server's
    download route is handed as `FileSHA256`)."""
    for kind, raw in _FILES.items():
        if hashlib.sha256(raw).digest() == digest:
            return kind, raw
    return None


def declared_type(kind: str) -> str:
    """The type the sender's client declares for a file of `kind`."""
    return _DECLARED[kind]


def _url_and_path() -> tuple[str, str]:
    path = f"/v/t62.7118-24/{secrets.token_hex(8)}_n.enc?ccb=11-4&oh=01_{secrets.token_hex(6)}&oe=6A3B2C1D"
    return f"https://mmg.whatsapp.net{path}&mms3=true", path


# --- wuzapi (whatsmeow) ----------------------------------------------------------------------


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def wuzapi_content(kind: str, caption: str, reacted_id: str, reacted_chat: str, seconds: float) -> dict[str, Any]:
    """The `waE2E.Message` of one kind, fields in the generated struct's order."""
    if kind == "location":
        return {
            "locationMessage": {
                "degreesLatitude": LATITUDE,
                "degreesLongitude": LONGITUDE,
                "name": PLACE,
                "address": ADDRESS,
            }
        }
    if kind == "reaction":
        key = {"remoteJID": reacted_chat, "fromMe": True, "ID": reacted_id}
        return {"reactionMessage": {"key": key, "text": REACTION, "senderTimestampMS": int(seconds * 1000)}}
    raw = _FILES[kind]
    url, path = _url_and_path()
    sha, enc_sha, media_key = hashlib.sha256(raw).digest(), secrets.token_bytes(32), secrets.token_bytes(32)
    stamp = int(seconds)
    media: dict[str, Any]
    if kind == "image":
        media = {"URL": url, "mimetype": _DECLARED[kind]}
        media |= {"caption": caption} if caption else {}
        media |= {"fileSHA256": _b64(sha), "fileLength": len(raw), "height": 16, "width": 16}
        media |= {"mediaKey": _b64(media_key)}
        media |= {"fileEncSHA256": _b64(enc_sha), "directPath": path, "mediaKeyTimestamp": stamp}
        media |= {"JPEGThumbnail": _b64(raw)}
    elif kind == "audio":
        media = {"URL": url, "mimetype": _DECLARED[kind], "fileSHA256": _b64(sha), "fileLength": len(raw)}
        media |= {"seconds": 4, "PTT": True, "mediaKey": _b64(media_key), "fileEncSHA256": _b64(enc_sha)}
        media |= {"directPath": path, "mediaKeyTimestamp": stamp, "waveform": _b64(bytes(range(0, 64)))}
    elif kind == "video":
        media = {"URL": url, "mimetype": _DECLARED[kind], "fileSHA256": _b64(sha), "fileLength": len(raw)}
        media |= {"seconds": 3, "mediaKey": _b64(media_key)}
        media |= {"caption": caption} if caption else {}
        media |= {"height": 640, "width": 360, "fileEncSHA256": _b64(enc_sha), "directPath": path}
        media |= {"mediaKeyTimestamp": stamp}
    elif kind == "document":
        media = {"URL": url, "mimetype": _DECLARED[kind], "title": DOCUMENT_NAME, "fileSHA256": _b64(sha)}
        media |= {"fileLength": len(raw), "pageCount": 1, "mediaKey": _b64(media_key), "fileName": DOCUMENT_NAME}
        media |= {"fileEncSHA256": _b64(enc_sha), "directPath": path, "mediaKeyTimestamp": stamp}
        media |= {"caption": caption} if caption else {}
    else:  # sticker
        media = {"URL": url, "fileSHA256": _b64(sha), "fileEncSHA256": _b64(enc_sha), "mediaKey": _b64(media_key)}
        media |= {"mimetype": _DECLARED[kind], "height": 64, "width": 64, "directPath": path}
        media |= {"fileLength": len(raw), "mediaKeyTimestamp": stamp, "isAnimated": False}
    return {_PROTO_KEYS[kind]: media}


def wuzapi_info_types(kind: str) -> tuple[str, str]:
    """`Info.Type` and `Info.MediaType` as whatsmeow sets them for the content."""
    media_type = {"image": "image", "audio": "ptt", "video": "video", "document": "document", "sticker": "sticker"}
    if kind == "reaction":
        return "reaction", ""
    if kind in media_type:
        return "media", media_type[kind]
    return "text", ""


def wuzapi_postmap(arrival: Arrival, push_name: str) -> dict[str, Any]:
    """The `postmap` of a non-text `Message`: the event plus what `processMedia` adds."""
    kind = arrival.kind
    event = payloads.wuzapi_message_event(arrival.message_id, arrival.sender, "", arrival.seconds, push_name)
    info_type, media_type = wuzapi_info_types(kind)
    event["Info"] |= {"Type": info_type, "MediaType": media_type}
    content = wuzapi_content(kind, arrival.caption, arrival.reacted_id, wire.jid(arrival.sender), arrival.seconds)
    event["Message"] = content
    event["RawMessage"] = content
    postmap: dict[str, Any] = {"event": event, "type": "Message"}
    if kind in DOWNLOADABLE:
        postmap |= {
            "base64": _b64(_FILES[kind]),
            "mimeType": _SNIFFED[kind],
            "fileName": arrival.message_id + _WUZAPI_EXTENSIONS[kind],
        }
    return postmap


# --- Evolution (Baileys) ---------------------------------------------------------------------


def _node_bytes(raw: bytes) -> dict[str, int]:
    """A Buffer after Evolution's `deserializeMessageBuffers`, as `JSON.stringify` writes it."""
    return {str(index): value for index, value in enumerate(raw)}


def _long(value: int, *, unsigned: bool) -> dict[str, Any]:
    return {"low": value, "high": 0, "unsigned": unsigned}


def evolution_content(kind: str, caption: str, reacted_id: str, reacted_chat: str, seconds: float) -> dict[str, Any]:
    """`data.message` of one kind, Baileys' proto names in field order."""
    if kind == "location":
        place = {"degreesLatitude": LATITUDE, "degreesLongitude": LONGITUDE, "name": PLACE, "address": ADDRESS}
        return {"locationMessage": place}
    if kind == "reaction":
        key = {"remoteJid": reacted_chat, "fromMe": True, "id": reacted_id}
        stamp = _long(int(seconds * 1000), unsigned=False)
        return {"reactionMessage": {"key": key, "text": REACTION, "senderTimestampMs": stamp}}
    raw = _FILES[kind]
    url, path = _url_and_path()
    sha, enc_sha, media_key = hashlib.sha256(raw).digest(), secrets.token_bytes(32), secrets.token_bytes(32)
    length, stamp = _long(len(raw), unsigned=True), _long(int(seconds), unsigned=False)
    common = {"fileSha256": _node_bytes(sha), "fileLength": length, "mediaKey": _node_bytes(media_key)}
    media: dict[str, Any]
    if kind == "image":
        media = {"interactiveAnnotations": [], "scanLengths": [], "annotations": [], "url": url}
        media |= {"mimetype": _DECLARED[kind]}
        media |= {"caption": caption} if caption else {}
        media |= {"fileSha256": common["fileSha256"], "fileLength": length, "height": 16, "width": 16}
        media |= {"mediaKey": common["mediaKey"], "fileEncSha256": _node_bytes(enc_sha), "directPath": path}
        media |= {"mediaKeyTimestamp": stamp, "jpegThumbnail": _node_bytes(raw[:24])}
    elif kind == "audio":
        media = {"url": url, "mimetype": _DECLARED[kind], **common, "seconds": 4, "ptt": True}
        media |= {"fileEncSha256": _node_bytes(enc_sha), "directPath": path, "mediaKeyTimestamp": stamp}
    elif kind == "video":
        # protobufjs's constructor sets the repeated fields first, as `[]` (as for the image).
        media = {"interactiveAnnotations": [], "annotations": [], "processedVideos": [], "url": url}
        media |= {"mimetype": _DECLARED[kind], "fileSha256": common["fileSha256"], "fileLength": length}
        media |= {"seconds": 3, "mediaKey": common["mediaKey"]}
        media |= {"caption": caption} if caption else {}
        media |= {"height": 640, "width": 360, "fileEncSha256": _node_bytes(enc_sha), "directPath": path}
        media |= {"mediaKeyTimestamp": stamp}
    elif kind == "document":
        media = {"url": url, "mimetype": _DECLARED[kind], "title": DOCUMENT_NAME, "fileSha256": common["fileSha256"]}
        media |= {"fileLength": length, "pageCount": 1, "mediaKey": common["mediaKey"], "fileName": DOCUMENT_NAME}
        media |= {"fileEncSha256": _node_bytes(enc_sha), "directPath": path, "mediaKeyTimestamp": stamp}
        media |= {"caption": caption} if caption else {}
    else:  # sticker
        media = {"url": url, "fileSha256": common["fileSha256"], "fileEncSha256": _node_bytes(enc_sha)}
        media |= {"mediaKey": common["mediaKey"], "mimetype": _DECLARED[kind], "height": 64, "width": 64}
        media |= {"directPath": path, "fileLength": length, "mediaKeyTimestamp": stamp, "isAnimated": False}
    return {_PROTO_KEYS[kind]: media}


def evolution_upsert(arrival: Arrival, instance_uuid: str) -> dict[str, Any]:
    kind = arrival.kind
    data = payloads.evolution_upsert(arrival.message_id, arrival.sender, "", arrival.seconds, instance_uuid)
    data["message"] = evolution_content(
        kind, arrival.caption, arrival.reacted_id, wire.jid(arrival.sender), arrival.seconds
    )
    # `prepareMessage` deserializes the content's `contextInfo`: null from the prototype for a
    # content type that has the field, undefined (so left out) for one that has not.
    ordered = {name: data[name] for name in ("key", "pushName", "status", "message")}
    if kind != "reaction":
        ordered["contextInfo"] = None
    ordered |= {"messageType": _PROTO_KEYS[kind]}
    ordered |= {name: data[name] for name in ("messageTimestamp", "instanceId", "source")}
    return ordered


# --- Meta Cloud API --------------------------------------------------------------------------


def meta_message(arrival: Arrival, media_id: str | None = None) -> dict[str, Any]:
    """`contacts` and `messages` of one incoming non-text message; `media_id` the id the Graph
    API then serves the file under (`MetaServer`)."""
    kind, caption, sender = arrival.kind, arrival.caption, arrival.sender
    message: dict[str, Any] = {
        "from": sender,
        "id": arrival.message_id,
        "timestamp": str(int(arrival.seconds)),
        "type": kind,
    }
    media_id = media_id or new_media_id()
    sha = base64.b64encode(hashlib.sha256(_FILES.get(kind, b"")).digest()).decode()
    if kind == "location":
        message["location"] = {"latitude": LATITUDE, "longitude": LONGITUDE, "name": PLACE, "address": ADDRESS}
    elif kind == "reaction":
        message["reaction"] = {"message_id": arrival.reacted_id, "emoji": REACTION}
    elif kind == "audio":
        message["audio"] = {"mime_type": _DECLARED[kind], "sha256": sha, "id": media_id, "voice": True}
    elif kind == "sticker":
        message["sticker"] = {"mime_type": _DECLARED[kind], "sha256": sha, "id": media_id, "animated": False}
    elif kind == "document":
        captioned = {"caption": caption} if caption else {}
        message["document"] = {**captioned, "filename": DOCUMENT_NAME, "mime_type": _DECLARED[kind]}
        message["document"] |= {"sha256": sha, "id": media_id}
    else:  # image, video
        captioned = {"caption": caption} if caption else {}
        message[kind] = {**captioned, "mime_type": _DECLARED[kind], "sha256": sha, "id": media_id}
    return {"contacts": [{"profile": {"name": "Cliente"}, "wa_id": sender}], "messages": [message]}


def new_media_id() -> str:
    return str(secrets.randbelow(9 * 10**15) + 10**15)


# --- the calls-capable server (ours) ---------------------------------------------------------


def envelope_message(arrival: Arrival, timestamp: str) -> dict[str, Any]:
    data: dict[str, Any] = {"id": arrival.message_id, "from": arrival.sender, "type": arrival.kind}
    if arrival.caption and arrival.kind in ("image", "video", "document"):
        data["caption"] = arrival.caption
    data["timestamp"] = timestamp
    return data
