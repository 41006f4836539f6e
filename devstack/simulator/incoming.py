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
- The calls-capable server (our envelope): `message` with `{id, from, type, timestamp}` and the
  type's object (`media` with `base64` or `url`, `location`, `contacts`, `reaction`, `choice`),
  `text` the caption, `replyTo` a quoted message (README: "The `message` event's data, per kind").

How a file travels is the message's `ArrivalOptions.mode`, as each server's setting would have it:
wuzapi's `media_delivery` (`base64` the default, `s3`: an `s3` object whose `url` the simulator
serves as the S3 bucket's public URL, `both`), Evolution's `webhookBase64` (`base64`:
`message.base64`; off by default: fetched with `getBase64FromMediaMessage`) or its S3/MinIO
storage (`s3`: `message.mediaUrl`, a MinIO presigned GET the simulator serves), the envelope's
`base64` (default) or `url`; a Cloud API file is a media id alone. A file may be padded to a size
(`ArrivalOptions.file_size`: a 3 MB photo in base64), and a message may announce a size its file is not
(`ArrivalOptions.announced_size`: a file over the kind's limit, never fetched). Contact cards, list
replies and quotes (`ArrivalOptions.quote`) are the same three servers' own shapes.

Read from: asternic/wuzapi 71df5694 (`wmiau.go` `case *events.Message`, `media.go` `processMedia`),
whatsmeow 8d370015 (`proto/waE2E/WAWebProtobufsE2E.pb.go`, `send.go` `getTypeFromMessage`),
EvolutionAPI/evolution-api 3454bec7 (`whatsapp.baileys.service.ts` `messages.upsert`,
`prepareMessage`, its S3 upload and `mediaUrl`; `minio.server.ts` `getObjectUrl`), Baileys
4599ff84 (`WAProto/WAProto.proto`), david-lev/pywa 1af30edd (`tests/data/updates/message.json`):
the pins of tests/contracts.

The bytes are tiny files of the right kind (a 16x16 JPEG, an Ogg page, an MP4 `ftyp` box, a PDF,
a WebP header), so a receiver that types media by its bytes sees the real type.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import quote

from devstack.simulator import files, payloads, wire

MediaKind = Literal["image", "audio", "video", "document", "sticker", "location", "reaction", "contacts", "list"]
MEDIA_KINDS: tuple[MediaKind, ...] = (
    "image",
    "audio",
    "video",
    "document",
    "sticker",
    "location",
    "reaction",
    "contacts",
    "list",
)
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
# Evolution's: the first extension the `mime-types` package knows for the declared type.
_MINIO_EXTENSIONS = {"image": ".jpeg", "audio": ".oga", "video": ".mp4", "sticker": ".webp"}
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
CONTACT_NAME = "Ana Souza"
CONTACT_VCARD = (
    "BEGIN:VCARD\nVERSION:3.0\nN:Souza;Ana;;;\nFN:Ana Souza\n"
    "item1.TEL;waid=5511912345678:+55 11 91234-5678\nitem1.X-ABLabel:Celular\nEND:VCARD"
)
CONTACT_PHONE = "+55 11 91234-5678"
LIST_TITLE, LIST_ROW = "Segunda via do boleto", "boleto-2"
LIST_MESSAGE_ID = "3EB0LIST00001"  # the business's list message the customer answered
# Where the wuzapi user's S3 bucket is served (its `public_url`, path style) and its name.
S3_PATH, S3_BUCKET = "/wuzapi/s3", "wuzapi-media"
# Where an Evolution server's S3/MinIO storage is served (its `S3_ENDPOINT`, path style as minio-js
# addresses a non-Amazon endpoint), its bucket (`S3_BUCKET`, `.env.example`'s) and region.
MINIO_PATH, MINIO_BUCKET, MINIO_REGION = "/evolution/minio", "evolution", "eu-west-3"
MINIO_ACCESS_KEY = "SIMULATORMINIOKEY"
FILES_PATH = "/files"  # the calls-capable server's own media URLs


@dataclass(frozen=True)
class ArrivalOptions:
    """How a message's file travels and what the message claims (see the module's docstring);
    `media_fails`: its file cannot be downloaded from the start (Meta: the media URL answers 404;
    elsewhere the server's download route or URL fails); `base_url` is the simulator's own URL,
    where a URL-mode file is served."""

    mode: str | None = None
    file_size: int | None = None
    announced_size: int | None = None
    quote: str | None = None
    media_fails: bool = False
    base_url: str = ""


@dataclass(frozen=True)
class Arrival:
    """One message other than a plain text: its kind, the sender's message id, its caption
    (image, video, document) or text, the id of the message a reaction reacts to, its file's
    bytes, and how it travels."""

    kind: str
    message_id: str
    sender: str
    caption: str
    reacted_id: str
    seconds: float
    data: bytes = b""
    options: ArrivalOptions = ArrivalOptions()

    @property
    def announced_size(self) -> int:
        return self.options.announced_size if self.options.announced_size is not None else len(self.data)


DELIVERY_MODES = {
    "wuzapi": ("base64", "s3", "both"),
    "evolution": ("base64", "none", "s3"),
    "calls": ("base64", "url"),
    "meta": ("id",),
}


def arrival(
    kind: str, message_id: str, sender: str, caption: str, *, reacted_id: str, options: ArrivalOptions
) -> Arrival:
    """One message of `kind`, with its file when it has one; a reaction to the quoted message
    when one is named (else to `reacted_id`)."""
    data = media_file(kind, options.file_size) if kind in DOWNLOADABLE else b""
    if kind == "reaction" and options.quote:
        reacted_id, options = options.quote, replace(options, quote=None)
    return Arrival(kind, message_id, sender, caption, reacted_id, time.time(), data, options)


def checked_mode(flavour: str, options: ArrivalOptions) -> None:
    """A delivery mode the flavour's server has (None: its default). Raises ValueError."""
    if options.mode is not None and options.mode not in DELIVERY_MODES[flavour]:
        raise ValueError(f"{flavour} delivers media as {', '.join(DELIVERY_MODES[flavour])}")


def media_file(kind: str, size: int | None = None) -> bytes:
    """The kind's file, padded to `size` bytes when given (past the file's own end)."""
    raw = _FILES[kind]
    return files.sized(raw, size) if size else raw


def file_by_sha256(digest: bytes, sent: Iterable[bytes] = ()) -> tuple[str, bytes] | None:
    """The kind and bytes of the simulator's file whose SHA-256 is `digest` (what a server's
    download route is handed as `FileSHA256`), among the kinds' files and the `sent` ones."""
    for raw in sent:
        if hashlib.sha256(raw).digest() == digest:
            return next((kind for kind, base in _FILES.items() if raw.startswith(base)), "document"), raw
    for kind, raw in _FILES.items():
        if hashlib.sha256(raw).digest() == digest:
            return kind, raw
    return None


def served_file(
    records_files: dict[str, tuple[bytes, str, str]], failing: set[str], key: str
) -> tuple[bytes, str] | None:
    """A URL-mode file by its key, unless its message was made to fail (`/_sim/media/fail`)."""
    found = records_files.get(key)
    if found is None or found[2] in failing or key in failing:
        return None
    return found[0], found[1]


def file_url(arrival: Arrival, flavour: str, owner: str = "") -> tuple[str, str]:
    """Where a URL-mode file is served on the simulator, and its key there: wuzapi's S3 object
    (`users/<user>/inbox/...` under the bucket, as wuzapi's `GenerateS3Key`), Evolution's MinIO
    object (`owner` the instance's id) by its presigned GET, the envelope's own."""
    extension = _WUZAPI_EXTENSIONS.get(arrival.kind, ".bin")
    if flavour == "wuzapi":
        key = f"users/{arrival.sender}/inbox/{arrival.message_id}{extension}"
        return f"{arrival.options.base_url}{S3_PATH}/{S3_BUCKET}/{key}", key
    if flavour == "evolution":
        return _minio_url(arrival, owner)
    key = f"{arrival.message_id}{extension}"
    return f"{arrival.options.base_url}{FILES_PATH}/{key}", key


def _minio_url(arrival: Arrival, instance_id: str) -> tuple[str, str]:
    """Evolution's `mediaUrl` and the object's key: `evolution-api/<instance id>/<remoteJid>/
    <mediaType>/<Date.now()>_<fileName>` (`fileName` the document's own, else `<key.id>.<the first
    extension of its mimetype>`), presigned by minio-js (`presignedGetObject`: path style, the
    object name escaped but for `/`, 7 days, the query in its order)."""
    kind = arrival.kind
    file_name = DOCUMENT_NAME if kind == "document" else arrival.message_id + _MINIO_EXTENSIONS[kind]
    millis = int(arrival.seconds * 1000)
    key = f"evolution-api/{instance_id}/{wire.jid(arrival.sender)}/{_PROTO_KEYS[kind]}/{millis}_{file_name}"
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(arrival.seconds))
    credential = quote(f"{MINIO_ACCESS_KEY}/{stamp[:8]}/{MINIO_REGION}/s3/aws4_request", safe="")
    signature = hashlib.sha256(f"{key}{stamp}".encode()).hexdigest()  # stands for the HMAC: never checked
    query = (
        f"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={credential}&X-Amz-Date={stamp}"
        f"&X-Amz-Expires=604800&X-Amz-SignedHeaders=host&X-Amz-Signature={signature}"
    )
    path = quote(f"{MINIO_BUCKET}/{key}", safe="/-_.~")
    return f"{arrival.options.base_url}{MINIO_PATH}/{path}?{query}", key


def declared_type(kind: str) -> str:
    """The type the sender's client declares for a file of `kind`."""
    return _DECLARED[kind]


def _url_and_path() -> tuple[str, str]:
    path = f"/v/t62.7118-24/{secrets.token_hex(8)}_n.enc?ccb=11-4&oh=01_{secrets.token_hex(6)}&oe=6A3B2C1D"
    return f"https://mmg.whatsapp.net{path}&mms3=true", path


# --- wuzapi (whatsmeow) ----------------------------------------------------------------------


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _wuzapi_context(arrival: Arrival) -> dict[str, Any]:
    """`contextInfo` of a quoting message (whatsmeow's json names), empty when none is quoted."""
    quote = arrival.options.quote or (LIST_MESSAGE_ID if arrival.kind == "list" else None)
    if quote is None:
        return {}
    return {"contextInfo": {"stanzaID": quote, "participant": wire.jid(arrival.sender)}}


def wuzapi_content(arrival: Arrival) -> dict[str, Any]:
    """The `waE2E.Message` of one kind, fields in the generated struct's order."""
    kind, caption, seconds = arrival.kind, arrival.caption, arrival.seconds
    context = _wuzapi_context(arrival)
    if kind == "text":
        return {"extendedTextMessage": {"text": caption, **context}}
    if kind == "location":
        place = {"degreesLatitude": LATITUDE, "degreesLongitude": LONGITUDE, "name": PLACE, "address": ADDRESS}
        return {"locationMessage": {**place, **context}}
    if kind == "reaction":
        key = {"remoteJID": wire.jid(arrival.sender), "fromMe": True, "ID": arrival.reacted_id}
        return {"reactionMessage": {"key": key, "text": REACTION, "senderTimestampMS": int(seconds * 1000)}}
    if kind == "contacts":
        return {"contactMessage": {"displayName": CONTACT_NAME, "vcard": CONTACT_VCARD, **context}}
    if kind == "list":
        reply = {"title": LIST_TITLE, "listType": 1, "singleSelectReply": {"selectedRowID": LIST_ROW}}
        return {"listResponseMessage": {**reply, **context}}
    raw = arrival.data
    url, path = _url_and_path()
    sha, enc_sha, media_key = hashlib.sha256(raw).digest(), secrets.token_bytes(32), secrets.token_bytes(32)
    stamp, length = int(seconds), arrival.announced_size
    media: dict[str, Any]
    if kind == "image":
        media = {"URL": url, "mimetype": _DECLARED[kind]}
        media |= {"caption": caption} if caption else {}
        media |= {"fileSHA256": _b64(sha), "fileLength": length, "height": 16, "width": 16}
        media |= {"mediaKey": _b64(media_key)}
        media |= {"fileEncSHA256": _b64(enc_sha), "directPath": path, "mediaKeyTimestamp": stamp}
        media |= {"JPEGThumbnail": _b64(_JPEG), **context}
    elif kind == "audio":
        media = {"URL": url, "mimetype": _DECLARED[kind], "fileSHA256": _b64(sha), "fileLength": length}
        media |= {"seconds": 4, "PTT": True, "mediaKey": _b64(media_key), "fileEncSHA256": _b64(enc_sha)}
        media |= {"directPath": path, "mediaKeyTimestamp": stamp, **context, "waveform": _b64(bytes(range(0, 64)))}
    elif kind == "video":
        media = {"URL": url, "mimetype": _DECLARED[kind], "fileSHA256": _b64(sha), "fileLength": length}
        media |= {"seconds": 3, "mediaKey": _b64(media_key)}
        media |= {"caption": caption} if caption else {}
        media |= {"height": 640, "width": 360, "fileEncSHA256": _b64(enc_sha), "directPath": path}
        media |= {"mediaKeyTimestamp": stamp, **context}
    elif kind == "document":
        media = {"URL": url, "mimetype": _DECLARED[kind], "title": DOCUMENT_NAME, "fileSHA256": _b64(sha)}
        media |= {"fileLength": length, "pageCount": 1, "mediaKey": _b64(media_key), "fileName": DOCUMENT_NAME}
        media |= {"fileEncSHA256": _b64(enc_sha), "directPath": path, "mediaKeyTimestamp": stamp, **context}
        media |= {"caption": caption} if caption else {}
    else:  # sticker
        media = {"URL": url, "fileSHA256": _b64(sha), "fileEncSHA256": _b64(enc_sha), "mediaKey": _b64(media_key)}
        media |= {"mimetype": _DECLARED[kind], "height": 64, "width": 64, "directPath": path}
        media |= {"fileLength": length, "mediaKeyTimestamp": stamp, "isAnimated": False, **context}
    return {_PROTO_KEYS[kind]: media}


def wuzapi_info_types(kind: str) -> tuple[str, str]:
    """`Info.Type` and `Info.MediaType` as whatsmeow sets them for the content."""
    media_type = {"image": "image", "audio": "ptt", "video": "video", "document": "document", "sticker": "sticker"}
    if kind == "reaction":
        return "reaction", ""
    if kind in media_type:
        return "media", media_type[kind]
    if kind == "contacts":
        return "media", "vcard"
    return "text", ""


def wuzapi_postmap(arrival: Arrival, push_name: str) -> dict[str, Any]:
    """The `postmap` of a non-text `Message`: the event plus what `processMedia` adds for the
    user's `media_delivery` (`base64`, the default; `s3`; `both`)."""
    kind = arrival.kind
    event = payloads.wuzapi_message_event(arrival.message_id, arrival.sender, "", arrival.seconds, push_name)
    info_type, media_type = wuzapi_info_types(kind)
    event["Info"] |= {"Type": info_type, "MediaType": media_type}
    content = wuzapi_content(arrival)
    event["Message"] = content
    event["RawMessage"] = content
    postmap: dict[str, Any] = {"event": event, "type": "Message"}
    if kind not in DOWNLOADABLE:
        return postmap
    mode = arrival.options.mode or "base64"
    file_name = arrival.message_id + _WUZAPI_EXTENSIONS[kind]
    if mode in ("s3", "both"):
        url, key = file_url(arrival, "wuzapi")
        postmap["s3"] = {
            "url": url,
            "key": key,
            "bucket": S3_BUCKET,
            "size": len(arrival.data),
            "mimeType": _DECLARED[kind],
            "fileName": file_name,
        }
    if mode in ("base64", "both"):
        postmap |= {"base64": _b64(arrival.data), "mimeType": _SNIFFED[kind], "fileName": file_name}
    return postmap


# --- Evolution (Baileys) ---------------------------------------------------------------------


def _node_bytes(raw: bytes) -> dict[str, int]:
    """A Buffer after Evolution's `deserializeMessageBuffers`, as `JSON.stringify` writes it."""
    return {str(index): value for index, value in enumerate(raw)}


def _long(value: int, *, unsigned: bool) -> dict[str, Any]:
    return {"low": value, "high": 0, "unsigned": unsigned}


def evolution_content(arrival: Arrival) -> dict[str, Any]:
    """`data.message` of one kind, Baileys' proto names in field order (a quote's `contextInfo`
    is moved out to `data.contextInfo` by `prepareMessage`)."""
    kind, caption, seconds = arrival.kind, arrival.caption, arrival.seconds
    if kind == "text":
        return {"conversation": caption}
    if kind == "location":
        place = {"degreesLatitude": LATITUDE, "degreesLongitude": LONGITUDE, "name": PLACE, "address": ADDRESS}
        return {"locationMessage": place}
    if kind == "reaction":
        key = {"remoteJid": wire.jid(arrival.sender), "fromMe": True, "id": arrival.reacted_id}
        stamp = _long(int(seconds * 1000), unsigned=False)
        return {"reactionMessage": {"key": key, "text": REACTION, "senderTimestampMs": stamp}}
    if kind == "contacts":
        return {"contactMessage": {"displayName": CONTACT_NAME, "vcard": CONTACT_VCARD}}
    if kind == "list":
        reply = {"title": LIST_TITLE, "listType": 1, "singleSelectReply": {"selectedRowId": LIST_ROW}}
        return {"listResponseMessage": reply}
    raw = arrival.data
    url, path = _url_and_path()
    sha, enc_sha, media_key = hashlib.sha256(raw).digest(), secrets.token_bytes(32), secrets.token_bytes(32)
    length, stamp = _long(arrival.announced_size, unsigned=True), _long(int(seconds), unsigned=False)
    common = {"fileSha256": _node_bytes(sha), "fileLength": length, "mediaKey": _node_bytes(media_key)}
    media: dict[str, Any]
    if kind == "image":
        media = {"interactiveAnnotations": [], "scanLengths": [], "annotations": [], "url": url}
        media |= {"mimetype": _DECLARED[kind]}
        media |= {"caption": caption} if caption else {}
        media |= {"fileSha256": common["fileSha256"], "fileLength": length, "height": 16, "width": 16}
        media |= {"mediaKey": common["mediaKey"], "fileEncSha256": _node_bytes(enc_sha), "directPath": path}
        media |= {"mediaKeyTimestamp": stamp, "jpegThumbnail": _node_bytes(_JPEG[:24])}
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


_EVOLUTION_TYPES = {"text": "conversation", "contacts": "contactMessage", "list": "listResponseMessage"}


def evolution_upsert(arrival: Arrival, instance_uuid: str) -> dict[str, Any]:
    """`messages.upsert` data; with `webhookBase64` on (`ArrivalOptions.mode` `base64`) the file's
    bytes follow the content as `message.base64`, as the Baileys channel adds them; with S3/MinIO
    storage (`s3`) its presigned `message.mediaUrl` does."""
    kind = arrival.kind
    data = payloads.evolution_upsert(arrival.message_id, arrival.sender, "", arrival.seconds, instance_uuid)
    data["message"] = evolution_content(arrival)
    if kind in DOWNLOADABLE and arrival.options.mode == "base64":
        data["message"]["base64"] = _b64(arrival.data)
    if kind in DOWNLOADABLE and arrival.options.mode == "s3":
        data["message"]["mediaUrl"] = file_url(arrival, "evolution", instance_uuid)[0]
    # `prepareMessage` deserializes the content's `contextInfo`: null from the prototype for a
    # content type that has the field, undefined (so left out) for one that has not; a quote's
    # is the quoting context.
    ordered = {name: data[name] for name in ("key", "pushName", "status", "message")}
    quote = arrival.options.quote or (LIST_MESSAGE_ID if kind == "list" else None)
    if quote is not None and kind != "reaction":
        ordered["contextInfo"] = {"stanzaId": quote, "participant": wire.jid(arrival.sender)}
    elif kind not in ("reaction", "text"):
        ordered["contextInfo"] = None
    ordered |= {"messageType": _EVOLUTION_TYPES.get(kind) or _PROTO_KEYS[kind]}
    ordered |= {name: data[name] for name in ("messageTimestamp", "instanceId", "source")}
    return ordered


# --- Meta Cloud API --------------------------------------------------------------------------


def meta_message(arrival: Arrival, media_id: str | None = None) -> dict[str, Any]:
    """`contacts` and `messages` of one incoming message; `media_id` the id the Graph API then
    serves the file under (`MetaServer`)."""
    kind, caption, sender = arrival.kind, arrival.caption, arrival.sender
    message: dict[str, Any] = {}
    if arrival.options.quote:
        message["context"] = {"from": sender, "id": arrival.options.quote}
    message |= {"from": sender, "id": arrival.message_id, "timestamp": str(int(arrival.seconds))}
    media_id = media_id or new_media_id()
    sha = base64.b64encode(hashlib.sha256(arrival.data).digest()).decode()
    if kind == "text":
        message |= {"text": {"body": caption}, "type": "text"}
        return {"contacts": [{"profile": {"name": "Cliente"}, "wa_id": sender}], "messages": [message]}
    if kind == "list":
        message.setdefault("context", {"from": sender, "id": LIST_MESSAGE_ID})
        message |= {"type": "interactive"}
        message["interactive"] = {"type": "list_reply", "list_reply": {"id": LIST_ROW, "title": LIST_TITLE}}
        return {"contacts": [{"profile": {"name": "Cliente"}, "wa_id": sender}], "messages": [message]}
    message["type"] = kind
    if kind == "location":
        message["location"] = {"latitude": LATITUDE, "longitude": LONGITUDE, "name": PLACE, "address": ADDRESS}
    elif kind == "reaction":
        message["reaction"] = {"message_id": arrival.reacted_id, "emoji": REACTION}
    elif kind == "contacts":
        phone = {"phone": CONTACT_PHONE, "wa_id": "5511912345678", "type": "CELL"}
        name = {"first_name": "Ana", "last_name": "Souza", "formatted_name": CONTACT_NAME}
        message["contacts"] = [{"name": name, "phones": [phone]}]
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
    """Our envelope's `message` data of one kind (README: "The `message` event's data, per
    kind"): a file inline (`base64`, the default) or by its `url` on this server."""
    kind = arrival.kind
    data: dict[str, Any] = {"id": arrival.message_id, "from": arrival.sender, "timestamp": timestamp}
    envelope_type = {"audio": "voice", "contacts": "contacts"}.get(kind, kind)
    data["type"] = envelope_type
    if arrival.caption:
        data["text"] = arrival.caption
    if kind in DOWNLOADABLE:
        media: dict[str, Any] = {"mimeType": _DECLARED[kind]}
        if kind == "document":
            media["fileName"] = DOCUMENT_NAME
        media |= {"size": arrival.announced_size, "sha256": hashlib.sha256(arrival.data).hexdigest()}
        if kind == "audio":
            media["seconds"] = 4
        if arrival.options.mode == "url":
            media["url"] = file_url(arrival, "calls")[0]
        else:
            media["base64"] = _b64(arrival.data)
        data["media"] = media
    elif kind == "location":
        data["location"] = {"latitude": LATITUDE, "longitude": LONGITUDE, "name": PLACE, "address": ADDRESS}
    elif kind == "contacts":
        data["contacts"] = [{"name": CONTACT_NAME, "phones": ["5511912345678"], "vcard": CONTACT_VCARD}]
    elif kind == "reaction":
        data["reaction"] = {"messageId": arrival.reacted_id, "emoji": REACTION}
    elif kind == "list":
        data["choice"] = {"id": LIST_ROW, "title": LIST_TITLE}
    if arrival.options.quote:
        data["replyTo"] = arrival.options.quote
    return data
