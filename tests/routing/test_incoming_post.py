"""Each content as the helpdesk takes it, and as the real Chatwoot client posts it to the
Chatwoot-shaped fake: a file as a multipart attachment whose bytes arrive unchanged, its caption
the message; a voice note marked as one; a contact card as words and its `.vcf`; a location,
a tapped option and a poll in words; a quote threaded to its message when that is in the
conversation; a reaction, an edit or a deletion threaded to its message, or a private note naming
it, never a customer's message standing alone."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devstack.simulator import files
from switchboard.providers.content import (
    Choice,
    ContactCard,
    Contacts,
    Edit,
    Location,
    Media,
    MediaMessage,
    MediaRef,
    Poll,
    Reaction,
    Revoke,
    Text,
)
from switchboard.routing.as_text import KIND_WORDS
from switchboard.routing.chatwoot import ChatwootClient
from switchboard.routing.domain import DownstreamPost, DownstreamTarget, FileToPost, IncomingMessage, MessageLink
from switchboard.routing.incoming_post import downstream_post, file_name_for, vcard_file
from tests.routing.test_downstream_answers import ACCOUNT_1, CONTRACT, Chatwoot
from tools.support.builders import incoming_message
from tools.support.downstream import FakeDownstream, parse_multipart

TARGET = DownstreamTarget(base_url="https://cw.example", account_id=1, inbox_id=2, api_token="t", source="tenant")
ORIGIN = "https://cw.example:443"
PNG = files.png()
CARD = ContactCard(name="Ana Lima", phones=["+55 11 98888-7777"])


def link(message: dict[str, Any], provider_id: str) -> MessageLink:
    return MessageLink(
        instance="acme:main",
        provider_message_id=provider_id,
        conversation_id=message["conversation_id"],
        downstream_message_id=message["id"],
        direction="in",
    )


# --- the mapping ------------------------------------------------------------------------------


def test_a_file_is_attached_with_its_caption_as_the_message() -> None:
    photo = FileToPost(file_name="image.png", mime_type="image/png", data=PNG)
    post = downstream_post(MediaMessage(media=Media(kind="image", caption="Segue a foto")), file=photo)

    assert post == DownstreamPost(content="Segue a foto", files=[photo])


def test_a_voice_note_is_marked_as_one() -> None:
    voice = FileToPost(file_name="voice.ogg", mime_type="audio/ogg", data=files.ogg_opus(3))
    post = downstream_post(MediaMessage(media=Media(kind="voice")), file=voice)

    assert post.voice and post.content is None and post.files == [voice]


@pytest.mark.parametrize(
    ("media", "reason", "expected"),
    [
        (
            Media(kind="image", caption="meu RG"),
            "expired",
            "[imagem indisponível: o arquivo expirou no provedor]\nmeu RG",
        ),
        (
            Media(kind="document", file_name="contrato.pdf"),
            "helpdesk_limit",
            "[documento indisponível: o arquivo passa do limite de 40 MB do helpdesk] contrato.pdf",
        ),
        (Media(kind="voice"), "not_found", "[mensagem de voz indisponível: o provedor não encontrou o arquivo]"),
        (Media(kind="sticker"), "bad_type", "[figurinha indisponível: o tipo do arquivo não é permitido]"),
    ],
)
def test_a_file_that_could_not_be_had_is_a_placeholder_saying_why_with_its_caption(
    media: Media, reason: str, expected: str
) -> None:
    post = downstream_post(MediaMessage(media=media), unavailable=reason)

    assert post == DownstreamPost(content=expected)


def test_a_contact_card_is_its_name_and_numbers_and_its_vcard() -> None:
    post = downstream_post(Contacts(cards=[CARD]))

    assert post.content == "[Contato] Ana Lima: +55 11 98888-7777"
    [card] = post.files
    assert (card.file_name, card.mime_type) == ("Ana Lima.vcf", "text/vcard")
    assert card.data.decode().startswith("BEGIN:VCARD\n") and "waid=5511988887777:+5511988887777" in card.data.decode()


def test_a_vcard_as_sent_is_attached_unchanged_one_after_the_other() -> None:
    sent = "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Loja\r\nTEL;waid=551130001000:+55 11 3000-1000\r\nEND:VCARD"
    cards = vcard_file(Contacts(cards=[ContactCard(name="Loja", vcard=sent), CARD]))

    assert cards.data.decode().startswith(sent + "\r\nBEGIN:VCARD\n")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            Location(latitude=-23.5613, longitude=-46.6565, name="Avenida Paulista", address="Av. Paulista, 1578"),
            "[Localização] Avenida Paulista, Av. Paulista, 1578\nhttps://maps.google.com/?q=-23.5613,-46.6565",
        ),
        (Choice(source="list", id="row-2", title="Segunda via do boleto"), "Segunda via do boleto (opção row-2)"),
        (Choice(source="button", id="sim"), "sim"),
        (Poll(question="Melhor dia?", options=["seg", "ter"]), "[Enquete] Melhor dia?\n- seg\n- ter"),
    ],
)
def test_a_location_an_option_and_a_poll_are_words(content: Any, expected: str) -> None:
    assert downstream_post(content) == DownstreamPost(content=expected)


@pytest.mark.parametrize(
    ("change", "threaded", "note"),
    [
        (Reaction(target_id="3EB0A1", emoji="👍"), "Reagiu com 👍", "[Reação 👍 à mensagem 3EB0A1]"),
        (Reaction(target_id="3EB0A1", emoji=""), "Removeu a reação", "[Reação removida da mensagem 3EB0A1]"),
        (
            Edit(target_id="3EB0A1", body="às 15h"),
            "Editou esta mensagem para: às 15h",
            "[Mensagem 3EB0A1 editada] às 15h",
        ),
        (Revoke(target_id="3EB0A1"), "Apagou esta mensagem no WhatsApp", "[O cliente apagou a mensagem 3EB0A1]"),
    ],
)
def test_a_change_says_what_it_did_and_which_message_it_meant(change: Any, threaded: str, note: str) -> None:
    assert downstream_post(change) == DownstreamPost(content=threaded, change_note=note)


def test_an_attachment_is_named_as_the_customer_named_it_else_by_its_kind_and_type() -> None:
    ref = MediaRef(key="k", sha256="0" * 64, mime_type="audio/ogg", size=3)

    assert file_name_for(Media(kind="voice"), ref) == "voice.ogg"
    assert file_name_for(Media(kind="document", file_name="../../etc/boleto\r\n.pdf"), ref) == "boleto_.pdf"
    assert file_name_for(Media(kind="sticker"), ref.model_copy(update={"mime_type": "image/webp"})) == "sticker.webp"


# --- posted by the Chatwoot client ------------------------------------------------------------


def post(fake: FakeDownstream, message: IncomingMessage, posting: DownstreamPost) -> dict[str, Any]:
    client = ChatwootClient(local_mode=True, transport=fake.transport())
    posted = client.post_incoming(TARGET, message, posting)
    [found] = [m for m in fake.posted[posted.conversation_id] if m["id"] == posted.message_id]
    return found


def test_a_photo_reaches_the_helpdesk_as_a_multipart_attachment_byte_for_byte() -> None:
    fake = FakeDownstream()
    photo = FileToPost(file_name="image.png", mime_type="image/png", data=PNG)

    message = post(fake, incoming_message("3EB0P1"), DownstreamPost(content="Segue a foto", files=[photo]))

    [request] = fake.messages()
    assert request.body == {"content": "Segue a foto", "message_type": "incoming", "source_id": "3EB0P1"}
    [upload] = fake.message_uploads(message)
    assert (upload.file_name, upload.content_type, upload.sha256) == (
        "image.png",
        "image/png",
        hashlib.sha256(PNG).hexdigest(),
    )
    [attachment] = message["attachments"]
    assert (attachment["file_type"], attachment["extension"], attachment["file_size"]) == ("image", "png", len(PNG))


def test_a_voice_note_is_posted_as_one_and_a_caption_less_file_has_no_content() -> None:
    fake = FakeDownstream()
    voice = FileToPost(file_name="voice.ogg", mime_type="audio/ogg", data=files.ogg_opus(3))

    message = post(fake, incoming_message("3EB0V1"), DownstreamPost(content=None, files=[voice], voice=True))

    [request] = fake.messages()
    assert request.body == {"message_type": "incoming", "source_id": "3EB0V1", "is_voice_message": "true"}
    assert message["content"] is None and message["attachments"][0]["id"] in fake.voice
    assert fake.message_uploads(message)[0].data == voice.data


def test_a_quote_is_threaded_to_its_message_in_the_conversation_and_left_unthreaded_elsewhere() -> None:
    fake = FakeDownstream()
    first = post(fake, incoming_message("3EB0Q1", "qual o preço?"), DownstreamPost(content="qual o preço?"))
    elsewhere = link(first, "3EB0Q1").model_copy(update={"conversation_id": first["conversation_id"] + 100})

    quote = post(
        fake, incoming_message("3EB0Q2"), DownstreamPost(content="e com frete?", refers_to=link(first, "3EB0Q1"))
    )
    unthreaded = post(fake, incoming_message("3EB0Q3"), DownstreamPost(content="alô?", refers_to=elsewhere))

    assert quote["content_attributes"] == {"in_reply_to": first["id"], "in_reply_to_external_id": "3EB0Q1"}
    assert quote["message_type"] == 0 and not quote["private"]
    assert unthreaded["content_attributes"] == {} and unthreaded["message_type"] == 0


def test_a_quoted_file_is_threaded_in_the_same_multipart_request() -> None:
    fake = FakeDownstream()
    first = post(fake, incoming_message("3EB0F1"), DownstreamPost(content="manda o comprovante"))
    pdf = FileToPost(file_name="comprovante.pdf", mime_type="application/pdf", data=files.pdf("pago"))

    message = post(
        fake, incoming_message("3EB0F2"), DownstreamPost(content=None, files=[pdf], refers_to=link(first, "3EB0F1"))
    )

    [_, request] = fake.messages()
    assert request.body is not None and json.loads(request.body["content_attributes"]) == {"in_reply_to": first["id"]}
    assert message["content_attributes"]["in_reply_to"] == first["id"]
    assert message["attachments"][0]["file_type"] == "file" and fake.message_uploads(message)[0].data == pdf.data


def test_a_reaction_is_a_reply_on_its_message_or_a_private_note_naming_it() -> None:
    fake = FakeDownstream()
    first = post(fake, incoming_message("3EB0R1"), DownstreamPost(content="chegou?"))
    reacted = downstream_post(Reaction(target_id="3EB0R1", emoji="👍"), refers_to=link(first, "3EB0R1"))
    unknown = downstream_post(Reaction(target_id="3EB0GONE", emoji="👍"))

    reply = post(fake, incoming_message("3EB0R2"), reacted)
    note = post(fake, incoming_message("3EB0R3"), unknown)

    assert (reply["content"], reply["message_type"], reply["private"]) == ("Reagiu com 👍", 0, False)
    assert reply["content_attributes"]["in_reply_to"] == first["id"]
    assert (note["content"], note["message_type"], note["private"]) == ("[Reação 👍 à mensagem 3EB0GONE]", 1, True)
    assert note["source_id"] == "3EB0R3"


def test_a_multipart_body_is_read_as_rack_reads_it() -> None:
    body = (
        b'--b1\r\nContent-Disposition: form-data; name="content"\r\n\r\nol\xc3\xa1\r\n'
        b'--b1\r\nContent-Disposition: form-data; name="attachments[]"; filename="a.bin"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n\r\n--b\x00\xff\r\n\r\n--b1--\r\n"
    )

    fields, parts = parse_multipart(body, "multipart/form-data; boundary=b1")

    assert fields == {"content": "olá"}
    assert parts[1][0] == "attachments[]" and getattr(parts[1][1], "data", None) == b"\r\n--b\x00\xff\r\n"


def test_a_malformed_multipart_body_or_a_nameless_file_creates_nothing() -> None:
    fake = FakeDownstream()
    conversation = fake.open_conversation(ORIGIN, "+5511988887777", 2)
    path = f"/api/v1/accounts/1/conversations/{conversation}/messages"
    broken = b'--b1\r\nContent-Disposition: form-data; name="content"\r\n\r\noi'
    as_text = b'--b1\r\nContent-Disposition: form-data; name="attachments[]"\r\n\r\nabc\r\n--b1--\r\n'

    for raw, status in ((broken, 400), (as_text, 422)):
        answer = fake.handle(
            ORIGIN, "POST", path, query="", token="t", raw=raw, content_type="multipart/form-data; boundary=b1"
        )
        assert answer[0] == status
    assert fake.posted.get(conversation, []) == []


def test_a_text_is_posted_as_json_as_before() -> None:
    fake = FakeDownstream()

    message = post(fake, incoming_message("3EB0T1"), downstream_post(Text(body="bom dia")))

    [request] = fake.messages()
    assert request.uploads == [] and message["content"] == "bom dia" and "attachments" not in message


def test_the_fakes_answer_to_a_multipart_post_has_chatwoots_shape() -> None:
    real = json.loads((CONTRACT / "api_messages_create_incoming_attachment.json").read_text())
    fake = FakeDownstream()
    first = post(fake, incoming_message("3EB0S1"), DownstreamPost(content="oi"))
    voice = FileToPost(file_name="voice.ogg", mime_type="audio/ogg", data=files.ogg_opus(3))

    message = post(
        fake,
        incoming_message("3EB0S2"),
        DownstreamPost(content=None, files=[voice], voice=True, refers_to=link(first, "3EB0S1")),
    )

    assert set(message) == set(real)
    assert set(message["attachments"][0]) == set(real["attachments"][0])
    assert message["attachments"][0]["file_type"] == real["attachments"][0]["file_type"] == "audio"
    assert set(message["content_attributes"]) == set(real["content_attributes"])


def test_against_chatwoots_answer_a_multipart_post_is_known_by_the_message_id_it_answers() -> None:
    chatwoot = Chatwoot(
        {
            ("GET", "/contacts/search"): "api_contacts_search.json",
            ("GET", "/contacts/{id}/conversations"): "api_contact_conversations.json",
            ("POST", "/conversations/{id}/messages"): "api_messages_create_incoming_attachment.json",
        }
    )
    client = ChatwootClient(local_mode=True, transport=chatwoot.transport())
    voice = FileToPost(file_name="voice.ogg", mime_type="audio/ogg", data=files.ogg_opus(3))
    sheena = incoming_message("wamid.S3").model_copy(update={"sender": "16505551234"})

    posted = client.post_incoming(ACCOUNT_1, sheena, DownstreamPost(content=None, files=[voice], voice=True))

    assert (posted.conversation_id, posted.message_id) == (12, 9002)
    [(_, _, body)] = [request for request in chatwoot.requests if request[0] == "POST"]
    assert isinstance(body, bytes) and files.ogg_opus(3) in body and b'name="is_voice_message"' in body


# --- whatever the content -----------------------------------------------------------------------

TEXT = st.text(min_size=1, max_size=40)
OPTIONAL = st.none() | TEXT
MEDIA = st.builds(
    Media,
    kind=st.sampled_from(["image", "video", "audio", "voice", "document", "sticker"]),
    file_name=st.none() | st.text(min_size=1, max_size=30),
    caption=OPTIONAL,
)
CONTENTS = st.one_of(
    st.builds(Text, body=TEXT),
    st.builds(MediaMessage, media=MEDIA),
    st.builds(
        Location,
        latitude=st.floats(-90, 90),
        longitude=st.floats(-180, 180),
        name=OPTIONAL,
        address=OPTIONAL,
        live=st.booleans(),
    ),
    st.builds(
        Contacts,
        cards=st.lists(
            st.builds(ContactCard, name=OPTIONAL, phones=st.lists(TEXT, max_size=3)), min_size=1, max_size=3
        ),
    ),
    st.builds(
        Choice, source=st.sampled_from(["button", "list", "flow", "template_button"]), id=OPTIONAL, title=OPTIONAL
    ),
    st.builds(Poll, question=TEXT, options=st.lists(TEXT, max_size=4)),
    st.builds(Reaction, target_id=TEXT, emoji=st.sampled_from(["", "👍", "❤️"])),
    st.builds(Edit, target_id=TEXT, body=TEXT),
    st.builds(Revoke, target_id=TEXT),
)


@settings(max_examples=200, deadline=None)
@given(content=CONTENTS, reason=st.sampled_from([None, "expired", "too_large", "helpdesk_limit", "something new"]))
def test_every_content_becomes_words_or_a_file_and_a_change_always_names_its_message(content: Any, reason: Any) -> None:
    post = downstream_post(content, unavailable=reason)

    if isinstance(content, Reaction | Edit | Revoke):
        assert post.change_note is not None and content.target_id in post.change_note and post.content
    elif isinstance(content, MediaMessage):
        media = content.media
        assert post.content is not None and post.content.startswith(f"[{KIND_WORDS[media.kind]} indisponível: ")
        assert post.files == [] and (media.caption is None or post.content.endswith(media.caption))
    else:
        assert post.content and post.change_note is None
    if isinstance(content, Contacts):
        [card] = post.files
        assert card.data.count(b"BEGIN:VCARD") >= len(content.cards) and card.file_name.endswith(".vcf")
