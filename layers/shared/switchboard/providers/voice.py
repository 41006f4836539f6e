"""A voice note as each provider kind can send one: the one rule of every sender (the send API's
worker and the helpdesk's replies alike).

WhatsApp plays a voice note (push-to-talk) only as OGG with the Opus codec. A kind whose server
converts audio itself (`ProviderKindSpec.converts_voice_notes`: Evolution's `sendWhatsAppAudio`)
makes a voice note of any audio; the others send what they are given (wuzapi with `ptt`, the
Cloud API's `audio`), so a voice note in another format would reach the customer as a voice
message their phone cannot play. Nothing here transcodes (no codec in the functions): through
such a kind the recording leaves as an audio file the customer can play, rather than not at all.
"""

from __future__ import annotations

from switchboard.providers.content import MediaMessage
from switchboard.providers.kinds import spec_for

VOICE_MIME = "audio/ogg"  # the one format WhatsApp plays as a voice note (with the Opus codec)


def as_sent(message: MediaMessage, mime_type: str, kind: str) -> MediaMessage:
    """`message` as an instance of `kind` sends it, its file being of `mime_type` (as its bytes
    say): a voice note stays one when it is OGG/Opus or the kind converts it, else it becomes an
    audio; any other media is unchanged. `as_sent(...) is not message` tells that it changed."""
    media = message.media
    if media.kind != "voice" or _base(mime_type) == VOICE_MIME or spec_for(kind).converts_voice_notes:
        return message
    return message.model_copy(update={"media": media.model_copy(update={"kind": "audio"})})


def _base(mime_type: str) -> str:
    return mime_type.split(";", maxsplit=1)[0].strip().lower()
