"""A customer's message in the words an agent reads, in the helpdesk's UI language (pt-BR).

A file reaches the helpdesk attached to its message (`routing.incoming_post`); the words here
are what stands beside it or instead of it: a location is a map link, a contact card its name
and numbers, a tapped option its title and id, a poll its question and options; a file that
could not be had is a placeholder saying which kind it was and why; a reaction, an edit or a
deletion says what it did, threaded to its message, or which message it meant when that one is
not in the conversation.
"""

from __future__ import annotations

from switchboard.providers.content import (
    Choice,
    Contacts,
    Content,
    Edit,
    Location,
    Media,
    MediaKind,
    MediaMessage,
    Poll,
    Reaction,
    Revoke,
    Text,
)

KIND_WORDS: dict[MediaKind, str] = {
    "image": "imagem",
    "video": "vídeo",
    "audio": "áudio",
    "voice": "mensagem de voz",
    "document": "documento",
    "sticker": "figurinha",
}

# Why a file is not attached, by the reason's code (`media.ports.UnavailableReason`, and the
# helpdesk's own limit).
REASON_WORDS: dict[str, str] = {
    "expired": "o arquivo expirou no provedor",
    "not_found": "o provedor não encontrou o arquivo",
    "too_large": "o arquivo passa do limite do WhatsApp para este tipo",
    "bad_type": "o tipo do arquivo não é permitido",
    "mismatch": "o arquivo recebido não confere com o anunciado",
    "provider_error": "o provedor não entregou o arquivo",
    "too_slow": "o provedor demorou demais para entregar o arquivo",
    "forbidden_url": "o endereço do arquivo não é permitido",
    "no_source": "o provedor não enviou o arquivo",
    "helpdesk_limit": "o arquivo passa do limite de 40 MB do helpdesk",
}


def as_text(content: Content) -> str:
    """The text of `content`: a text's own body, a readable account of anything else."""
    if isinstance(content, Text):
        return content.body
    if isinstance(content, MediaMessage):
        media = content.media
        named = f" {media.file_name}" if media.file_name else ""
        head = f"[{KIND_WORDS[media.kind]}{named}]"
        return f"{head}\n{media.caption}" if media.caption else head
    if isinstance(content, Location):
        place = ", ".join(part for part in (content.name, content.address) if part)
        link = f"https://maps.google.com/?q={content.latitude},{content.longitude}"
        label = "Localização em tempo real" if content.live else "Localização"
        return f"[{label}] {place}\n{link}" if place else f"[{label}]\n{link}"
    if isinstance(content, Contacts):
        cards = [f"{card.name or 'sem nome'}: {', '.join(card.phones) or 'sem número'}" for card in content.cards]
        return "[Contato] " + "\n[Contato] ".join(cards)
    if isinstance(content, Choice):
        chosen = content.title or content.id or "(sem título)"
        return f"{chosen} (opção {content.id})" if content.id and content.title else chosen
    if isinstance(content, Poll):
        options = "\n".join(f"- {option}" for option in content.options)
        return f"[Enquete] {content.question}\n{options}".rstrip()
    if isinstance(content, Reaction):
        if not content.emoji:
            return f"[Reação removida da mensagem {content.target_id}]"
        return f"[Reação {content.emoji} à mensagem {content.target_id}]"
    if isinstance(content, Edit):
        return f"[Mensagem {content.target_id} editada] {content.body}"
    if isinstance(content, Revoke):
        return f"[O cliente apagou a mensagem {content.target_id}]"
    raise TypeError(f"no text for {type(content).__name__}")  # every Content type is handled above


def unavailable_text(media: Media, reason: str) -> str:
    """The placeholder of a file that is not attached: its kind, why, its name, its caption."""
    why = REASON_WORDS.get(reason, "o arquivo não pôde ser obtido")
    head = f"[{KIND_WORDS[media.kind]} indisponível: {why}]"
    if media.file_name:
        head += f" {media.file_name}"
    return f"{head}\n{media.caption}" if media.caption else head


def change_text(content: Reaction | Edit | Revoke) -> str:
    """What a reaction, an edit or a deletion did, as a reply threaded to its message."""
    if isinstance(content, Reaction):
        return f"Reagiu com {content.emoji}" if content.emoji else "Removeu a reação"
    if isinstance(content, Edit):
        return f"Editou esta mensagem para: {content.body}"
    return "Apagou esta mensagem no WhatsApp"
