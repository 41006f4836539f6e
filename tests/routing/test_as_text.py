"""What an agent reads of each kind of customer message in words: never nothing, never a bare
placeholder without what it was about."""

from __future__ import annotations

import pytest

from switchboard.providers.content import (
    Choice,
    ContactCard,
    Contacts,
    Content,
    Edit,
    Location,
    Media,
    MediaMessage,
    Poll,
    Reaction,
    Revoke,
    Text,
)
from switchboard.routing.as_text import as_text


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (Text(body="olá"), "olá"),
        (
            MediaMessage(media=Media(kind="image", caption="Segue o comprovante")),
            "[imagem]\nSegue o comprovante",
        ),
        (
            MediaMessage(media=Media(kind="document", file_name="boleto.pdf")),
            "[documento boleto.pdf]",
        ),
        (
            Location(latitude=-23.55, longitude=-46.63, name="Loja", address="Av. Paulista, 1000"),
            "[Localização] Loja, Av. Paulista, 1000\nhttps://maps.google.com/?q=-23.55,-46.63",
        ),
        (Contacts(cards=[ContactCard(name="Ana", phones=["+55 11 98888-7777"])]), "[Contato] Ana: +55 11 98888-7777"),
        (Choice(source="list", id="opt-2", title="Segunda via"), "Segunda via (opção opt-2)"),
        (Poll(question="Melhor dia?", options=["seg", "ter"]), "[Enquete] Melhor dia?\n- seg\n- ter"),
        (Reaction(target_id="wamid.1", emoji="👍"), "[Reação 👍 à mensagem wamid.1]"),
        (Reaction(target_id="wamid.1", emoji=""), "[Reação removida da mensagem wamid.1]"),
        (Edit(target_id="wamid.2", body="corrigido"), "[Mensagem wamid.2 editada] corrigido"),
        (Revoke(target_id="wamid.3"), "[O cliente apagou a mensagem wamid.3]"),
    ],
)
def test_each_kind_reads_as_what_the_customer_sent(content: Content, expected: str) -> None:
    assert as_text(content) == expected
