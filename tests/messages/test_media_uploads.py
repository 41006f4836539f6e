"""Uploads of files a message sends: a presigned PUT with its type and length signed in, and the
object checked on first use (size, sha256, type by its bytes, the kind's limit)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import boto3
import httpx
import pytest
from botocore.config import Config
from moto import mock_aws

from devstack.aws_endpoint import AwsEndpoint
from switchboard.core.errors import InvalidInput, PayloadTooLarge, UnknownReference
from switchboard.media.limits import MAX_BYTES
from switchboard.media.uploads import MediaUploads, fetch_under_policy
from switchboard.messages.domain import Message
from switchboard.messages.schemas import MessageView
from switchboard.providers.content import Media, MediaKind, MediaMessage, MediaRef
from tests.support.trickle import Trickle
from tools.support.aws import AwsResources

BUCKET = "media-bucket"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
PDF = b"%PDF-1.7\n" + b"x" * 32


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1", config=Config(signature_version="s3v4"))
        client.create_bucket(Bucket=BUCKET)
        yield client


def uploaded(s3: Any, uploads: MediaUploads, data: bytes, mime: str, **declared: Any) -> str:
    """What the client's PUT with exactly the ticket's headers stores: the bytes, their type and
    the declaration's metadata (`x-amz-meta-*`)."""
    ticket = uploads.presign("acme", mime, len(data), **declared)
    key = f"acme/outgoing/{ticket.media_id}"
    metadata = {name.removeprefix("x-amz-meta-"): value for name, value in ticket.headers.items() if "meta" in name}
    s3.put_object(Bucket=BUCKET, Key=key, Body=data, ContentType=mime, Metadata=metadata)
    return ticket.media_id


def test_the_presigned_put_signs_the_whole_declaration_and_expires_in_minutes(s3: Any) -> None:
    digest = hashlib.sha256(PNG).hexdigest()
    ticket = MediaUploads(s3, BUCKET).presign("acme", "image/png", len(PNG), file_name="vitrine é.png", sha256=digest)

    query = parse_qs(urlparse(ticket.url).query)
    assert query["X-Amz-Expires"] == ["300"]
    signed = set(query["X-Amz-SignedHeaders"][0].split(";"))
    assert {"content-length", "content-type", "x-amz-meta-sha256", "x-amz-meta-file-name"} <= signed
    assert ticket.headers["Content-Type"] == "image/png"
    assert ticket.headers["Content-Length"] == str(len(PNG))
    assert ticket.headers["x-amz-meta-sha256"] == digest
    assert ticket.headers["x-amz-meta-file-name"].isascii()
    assert urlparse(ticket.url).path.endswith(f"/acme/outgoing/{ticket.media_id}")
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0  # nothing written before the PUT


def test_a_put_with_the_tickets_headers_stores_the_declaration_the_check_reads_back(
    served_aws: AwsResources, aws_endpoint: AwsEndpoint
) -> None:
    """Through the presigned URL itself, as a client does (the local S3 endpoint stores what the
    headers say; real S3 also checks their signature)."""
    client = boto3.client(
        "s3", region_name="us-east-1", endpoint_url=aws_endpoint.url, config=Config(signature_version="s3v4")
    )
    client.create_bucket(Bucket=BUCKET)
    uploads = MediaUploads(client, BUCKET)
    name = "vitrine de verão 🌞.png" + "x" * 200
    ticket = uploads.presign("acme", "image/png", len(PNG), file_name=name, sha256=hashlib.sha256(PNG).hexdigest())

    put = httpx.put(ticket.url, content=PNG, headers=ticket.headers, trust_env=False)

    assert put.status_code == 200, put.text
    ref = uploads.claim("acme", ticket.media_id, "image")
    assert (ref.file_name, ref.mime_type, ref.size) == (name, "image/png", len(PNG))
    wrong = uploads.presign("acme", "image/png", len(PNG), sha256="0" * 64)
    assert httpx.put(wrong.url, content=PNG, headers=wrong.headers, trust_env=False).status_code == 200
    with pytest.raises(UnknownReference) as mismatch:
        uploads.claim("acme", wrong.media_id, "image")
    assert mismatch.value.code == "mismatch"


def test_a_checked_upload_becomes_a_reference_typed_by_its_bytes(s3: Any) -> None:
    uploads = MediaUploads(s3, BUCKET)
    media_id = uploaded(s3, uploads, PNG, "image/png", sha256=hashlib.sha256(PNG).hexdigest())

    ref = uploads.claim("acme", media_id, "image")

    assert (ref.mime_type, ref.size, ref.sha256) == ("image/png", len(PNG), hashlib.sha256(PNG).hexdigest())
    assert uploads.read(ref) == PNG


def test_an_unknown_or_another_tenants_media_id_is_not_found(s3: Any) -> None:
    uploads = MediaUploads(s3, BUCKET)
    media_id = uploaded(s3, uploads, PNG, "image/png")
    with pytest.raises(UnknownReference) as other:
        uploads.claim("globex", media_id, "image")
    with pytest.raises(UnknownReference) as missing:
        uploads.claim("acme", "med_00000000000000000000000000000000", "image")
    assert other.value.code == missing.value.code == "media_not_found"


def test_bytes_that_are_not_what_was_declared_are_refused(s3: Any) -> None:
    uploads = MediaUploads(s3, BUCKET)
    wrong_digest = uploaded(s3, uploads, PNG, "image/png", sha256="0" * 64)
    with pytest.raises(UnknownReference) as mismatch:
        uploads.claim("acme", wrong_digest, "image")
    assert mismatch.value.code == "mismatch"
    pdf_as_image = uploaded(s3, uploads, PDF, "image/png")
    with pytest.raises(UnknownReference) as bad_type:
        uploads.claim("acme", pdf_as_image, "image")
    assert bad_type.value.code == "bad_type"
    executable = uploaded(s3, uploads, b"MZ\x90\x00" + b"\x00" * 16, "application/pdf")
    with pytest.raises(UnknownReference):
        uploads.claim("acme", executable, "document")


def test_an_amr_recording_is_a_voice_note_and_every_executable_form_is_refused(s3: Any) -> None:
    uploads = MediaUploads(s3, BUCKET)
    amr = uploaded(s3, uploads, b"#!AMR\n" + b"\x3c" * 32, "audio/amr")
    assert uploads.claim("acme", amr, "voice").mime_type == "audio/amr"
    for magic in (b"#!/bin/sh\n", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xce"):
        executable = uploaded(s3, uploads, magic + b"\x00" * 16, "application/pdf")
        with pytest.raises(UnknownReference) as refused:
            uploads.claim("acme", executable, "document")
        assert refused.value.code == "bad_type"


def test_a_file_over_its_kinds_limit_is_refused(s3: Any) -> None:
    uploads = MediaUploads(s3, BUCKET)
    big_image = PNG + b"\x00" * MAX_BYTES["image"]
    media_id = uploaded(s3, uploads, big_image, "image/png")
    with pytest.raises(PayloadTooLarge):
        uploads.claim("acme", media_id, "image")
    with pytest.raises(PayloadTooLarge):
        uploads.presign("acme", "application/pdf", MAX_BYTES["document"] + 1)


def test_a_url_is_fetched_once_into_the_bucket(s3: Any) -> None:
    fetched: list[str] = []

    def fetch(url: str, max_bytes: int) -> tuple[bytes, str]:
        fetched.append(url)
        return PDF, "application/pdf"

    ref = MediaUploads(s3, BUCKET, fetch=fetch).fetch_url(
        "acme", "https://files.example.test/r.pdf", "document", "r.pdf"
    )

    assert fetched == ["https://files.example.test/r.pdf"]
    assert s3.get_object(Bucket=BUCKET, Key=ref.key)["Body"].read() == PDF
    with pytest.raises(InvalidInput):
        MediaUploads(s3, BUCKET).fetch_url("acme", "https://files.example.test/r.pdf", "document")


@pytest.mark.parametrize(
    "url", ["https://127.0.0.1/a.pdf", "https://169.254.169.254/latest/meta-data", "https://10.0.0.5/a.pdf"]
)
def test_a_url_the_outbound_policy_refuses_is_never_fetched(url: str) -> None:
    with pytest.raises(InvalidInput):
        fetch_under_policy()(url, 1024)


def test_a_url_whose_file_trickles_in_is_a_client_error_within_the_request() -> None:
    trickle = Trickle()  # one second passes per byte read
    fetch = fetch_under_policy(transport=trickle.transport, clock=trickle.clock)

    with pytest.raises(InvalidInput) as refused:
        fetch("https://files.example.test/r.pdf", 1024)
    assert refused.value.code == "media_url_failed"
    assert len(trickle.sent) <= 10


def test_a_file_the_bucket_no_longer_holds_is_expired(s3: Any) -> None:
    uploads = MediaUploads(s3, BUCKET)
    ref = uploads.store_bytes("acme", PDF, "document", "application/pdf", "r.pdf")
    s3.delete_object(Bucket=BUCKET, Key=ref.key)  # the lifecycle's expiry

    with pytest.raises(UnknownReference) as gone:
        uploads.read(ref)

    assert gone.value.code == "expired"


def test_a_stored_image_has_a_preview_link_valid_minutes_answered_with_its_checked_type(s3: Any) -> None:
    uploads = MediaUploads(s3, BUCKET)
    ref = uploads.store_bytes("acme", PNG, "image", "application/octet-stream")

    url = urlparse(uploads.preview_url(ref))

    query = parse_qs(url.query)
    assert url.path.endswith(f"/{ref.key}") and query["X-Amz-Expires"] == ["300"]
    assert (query["response-content-type"], query["response-content-disposition"]) == (["image/png"], ["inline"])


def test_a_message_view_shows_its_file_and_a_preview_for_an_image_only() -> None:
    digest = hashlib.sha256(PNG).hexdigest()
    stored = MediaRef(key=f"acme/outgoing/url_{digest}", sha256=digest, mime_type="image/png", size=len(PNG))
    previewed: list[str] = []

    def preview(ref: MediaRef) -> str:
        previewed.append(ref.key)
        return f"https://bucket.example/{ref.key}?sig"

    def view(kind: MediaKind, **fields: Any) -> dict[str, Any]:
        content = MediaMessage(media=Media(kind=kind, stored=stored, **fields))
        message = Message(
            tenant="acme", id="msg_1", api_key_id="key_1", to="5511988880001", text="x", content=content, body_hash="h"
        )
        media: dict[str, Any] = MessageView.of(message, preview).model_dump(by_alias=True)["media"]
        return media

    image = view("image", caption="Produto")
    document = view("document", file_name="Pedido.pdf")

    assert image == {
        "type": "image",
        "caption": "Produto",
        "fileName": None,
        "mimeType": "image/png",
        "size": len(PNG),
        "previewUrl": f"https://bucket.example/{stored.key}?sig",
    }
    assert (document["fileName"], document["previewUrl"]) == ("Pedido.pdf", None)
    assert previewed == [stored.key]
