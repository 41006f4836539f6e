"""A customer's message as the text an agent reads, for the forward that posts text only.

Files are not attached yet: the agent is told what arrived (its kind, its file name, its caption)
rather than nothing; a location is a map link, a contact card its name and numbers, a tapped
option its title and id, a reaction, an edit or a deletion what it did to which message. The
words are the helpdesk's UI language, pt-BR.
"""

from __future__ import annotations

from switchboard.providers.content import (
    Choice,
    Contacts,
    Content,
    Edit,
    Location,
    MediaKind,
    MediaMessage,
    Poll,
    Reaction,
    Revoke,
    Text,
)

_KIND: dict[MediaKind, str] = {
    "image": "imagem",
    "video": "vídeo",
    "audio": "áudio",
    "voice": "mensagem de voz",
    "document": "documento",
    "sticker": "figurinha",
}


def as_text(content: Content) -> str:
    """The text of `content`: a text's own body, a readable account of anything else."""
    if isinstance(content, Text):
        return content.body
    if isinstance(content, MediaMessage):
        media = content.media
        named = f" {media.file_name}" if media.file_name else ""
        head = f"[{_KIND[media.kind]}{named} recebido(a): o arquivo ainda não é encaminhado ao helpdesk]"
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
