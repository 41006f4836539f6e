"""What each content becomes in the helpdesk (Chatwoot's messages API), one message per content:

- a file: attached (multipart `attachments[]`), its caption the message's content; a voice note
  marked as one (`is_voice_message`); a file that could not be had: a placeholder saying why;
- a contact card: its name and numbers, and its `.vcf` attached;
- a location: a map link with its name and address; a tapped button, list row or flow: the title
  chosen and its id; a poll: its question and options;
- a quote: threaded to the quoted message (`content_attributes.in_reply_to`) when that is in the
  conversation;
- a reaction, an edit or a deletion: a reply threaded to the message it changes, saying what it
  did; when that message is not in the conversation (older than the links are kept, or in another
  conversation), a private note naming it, never a customer's message standing alone.
"""

from __future__ import annotations

import mimetypes
import re

from switchboard.providers.content import Contacts, Content, Edit, Media, MediaMessage, MediaRef, Reaction, Revoke
from switchboard.providers.vcard import vcard_of
from switchboard.routing.as_text import as_text, change_text, unavailable_text
from switchboard.routing.domain import DownstreamPost, FileToPost, MessageLink

# Chatwoot's own attachment limit (`MAXIMUM_FILE_UPLOAD_SIZE`, 40 MB by default): a larger file
# is not posted (the agent gets a placeholder saying so).
HELPDESK_MAX_BYTES = 40 * 1024 * 1024

VCARD_TYPE = "text/vcard"
_EXTENSIONS = {
    "image/jpeg": ".jpg",
    "image/png": ".png",
    "image/webp": ".webp",
    "image/gif": ".gif",
    "audio/ogg": ".ogg",
    "audio/mpeg": ".mp3",
    "audio/mp4": ".m4a",
    "audio/aac": ".aac",
    "audio/amr": ".amr",
    "video/mp4": ".mp4",
    "video/3gpp": ".3gp",
    "video/quicktime": ".mov",
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    VCARD_TYPE: ".vcf",
}
_UNSAFE_NAME = re.compile(r"[^\w .-]+")


def downstream_post(
    content: Content,
    *,
    file: FileToPost | None = None,
    unavailable: str | None = None,
    refers_to: MessageLink | None = None,
) -> DownstreamPost:
    """The helpdesk message of `content`. A media content comes with its `file`, or the reason it
    is `unavailable`; `refers_to` is the link of the message quoted (or changed), when known."""
    if isinstance(content, Reaction | Edit | Revoke):
        return DownstreamPost(content=change_text(content), refers_to=refers_to, change_note=as_text(content))
    if isinstance(content, MediaMessage):
        media = content.media
        if file is None:
            return DownstreamPost(content=unavailable_text(media, unavailable or "no_source"), refers_to=refers_to)
        return DownstreamPost(content=media.caption, files=[file], voice=media.kind == "voice", refers_to=refers_to)
    if isinstance(content, Contacts):
        return DownstreamPost(content=as_text(content), files=[vcard_file(content)], refers_to=refers_to)
    return DownstreamPost(content=as_text(content), refers_to=refers_to)


def vcard_file(contacts: Contacts) -> FileToPost:
    """Every card of `contacts` in one `.vcf` (the cards as sent, else built from their fields)."""
    cards = "".join(vcard_of(card).rstrip("\r\n") + "\r\n" for card in contacts.cards)
    first = contacts.cards[0].name or ""
    return FileToPost(file_name=f"{_safe_name(first) or 'contato'}.vcf", mime_type=VCARD_TYPE, data=cards.encode())


def file_name_for(media: Media, ref: MediaRef) -> str:
    """The attachment's name: the one the customer's file had, else its kind and the extension of
    the type its bytes are (Chatwoot takes the extension from the name)."""
    named = _safe_name(media.file_name or ref.file_name or "")
    if named:
        return named
    extension = _EXTENSIONS.get(ref.mime_type) or mimetypes.guess_extension(ref.mime_type) or ""
    return f"{media.kind}{extension}"


def _safe_name(name: str) -> str:
    """A file name without a path or characters a multipart header cannot carry plainly."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    return _UNSAFE_NAME.sub("_", base).strip(" .")[:200]
