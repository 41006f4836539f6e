"""The media bucket on moto's S3: the claim check, the resolver's downloads, the reader.

Downloads follow each provider's own contract (tests/contracts/media), answered by an httpx
mock transport in place of the server."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from moto import mock_aws

from devstack.simulator import files
from switchboard.core.clock import Deadline
from switchboard.media.ports import MediaUnavailable
from switchboard.media.service import S3Media
from switchboard.providers.base import ProviderClient, ProviderTarget
from switchboard.providers.content import Media, MediaSource
from switchboard.providers.evolution import EvolutionClient
from switchboard.providers.meta import MetaCloudClient
from switchboard.providers.wuzapi import WuzapiClient

CONTRACTS = Path(__file__).parents[1] / "contracts" / "media"
BUCKET = "switchboard-media"
INSTANCE = "t#acme#line-1"
Handler = Callable[[httpx.Request], httpx.Response]


def contract(name: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads((CONTRACTS / name).read_text())
    payload.pop("_source", None)
    return payload


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


class Server:
    """An httpx mock of one provider server that counts the requests it answered."""

    def __init__(self, handler: Handler) -> None:
        self.requests: list[httpx.Request] = []
        self._handler = handler

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self._handler(request)

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


def media_of(s3: Any, client: ProviderClient, target: ProviderTarget) -> S3Media:
    return S3Media(s3, BUCKET, lambda instance: (client, target))


META = ProviderTarget(
    kind="meta", base_url="https://graph.facebook.com", provider_instance_id="1065", instance_token="tok"
)


def meta_server(data: bytes, *, media_status: int = 200, gone: bool = False) -> Server:
    def handle(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == "Bearer tok"
        if request.url.host == "graph.facebook.com":
            if gone:
                return httpx.Response(400, json=contract("meta_media_gone.json"))
            answer = contract("meta_media_url.json") | {
                "sha256": hashlib.sha256(data).hexdigest(),
                "file_size": len(data),
            }
            return httpx.Response(media_status, json=answer)
        assert request.url.host == "lookaside.fbsbx.com"
        return httpx.Response(200, content=data, headers={"content-type": "image/png"})

    return Server(handle)


def photo(**fields: Any) -> Media:
    return Media(
        kind="image", mime_type="image/jpeg", source=MediaSource(via="meta_media_id", media_id="8040"), **fields
    )


def test_inline_bytes_are_stored_once_per_message_and_bytes(s3: Any) -> None:
    media = S3Media(s3, BUCKET)
    data = files.png()
    first = media.put_inline("acme", INSTANCE, "wamid.1", Media(kind="image", inline=True), data)
    again = media.put_inline("acme", INSTANCE, "wamid.1", Media(kind="image", inline=True), data)
    assert first.stored is not None
    assert first.stored == again.stored
    assert first.stored.sha256 == hashlib.sha256(data).hexdigest()
    assert first.stored.mime_type == "image/png"
    listed = s3.list_objects_v2(Bucket=BUCKET)["Contents"]
    assert [item["Key"] for item in listed] == [first.stored.key]
    assert media.read(first.stored) == data


def test_meta_media_id_is_downloaded_checked_and_stored(s3: Any) -> None:
    data = files.png()
    server = meta_server(data)
    media = media_of(s3, MetaCloudClient(local_mode=True, transport=server.transport), META)
    ref = media.resolve("acme", INSTANCE, "wamid.2", photo())
    assert ref.sha256 == hashlib.sha256(data).hexdigest()
    assert ref.mime_type == "image/png"  # the bytes', not the announced image/jpeg
    assert [request.url.path for request in server.requests] == ["/v25.0/8040", "/whatsapp_business/attachments/"]
    assert media.read(ref) == data


def test_resolve_is_idempotent_by_message_id(s3: Any) -> None:
    data = files.png()
    server = meta_server(data)
    media = media_of(s3, MetaCloudClient(local_mode=True, transport=server.transport), META)
    first = media.resolve("acme", INSTANCE, "wamid.3", photo())
    fetched = len(server.requests)
    # A retry after a crash, with or without the digest announced: found, nothing fetched.
    assert media.resolve("acme", INSTANCE, "wamid.3", photo()) == first
    assert media.resolve("acme", INSTANCE, "wamid.3", photo(sha256=first.sha256)) == first
    assert len(server.requests) == fetched


def test_expired_meta_media_id_is_expired_and_not_retryable(s3: Any) -> None:
    server = meta_server(b"", gone=True)
    media = media_of(s3, MetaCloudClient(local_mode=True, transport=server.transport), META)
    with pytest.raises(MediaUnavailable) as refused:
        media.resolve("acme", INSTANCE, "wamid.4", photo())
    assert (refused.value.reason, refused.value.retryable) == ("expired", False)


def test_a_provider_error_is_retryable(s3: Any) -> None:
    server = meta_server(files.png(), media_status=503)
    media = media_of(s3, MetaCloudClient(local_mode=True, transport=server.transport), META)
    with pytest.raises(MediaUnavailable) as refused:
        media.resolve("acme", INSTANCE, "wamid.5", photo())
    assert (refused.value.reason, refused.value.retryable) == ("provider_error", True)


def test_bytes_that_differ_from_the_announced_digest_are_a_mismatch(s3: Any) -> None:
    server = meta_server(files.png())
    media = media_of(s3, MetaCloudClient(local_mode=True, transport=server.transport), META)
    with pytest.raises(MediaUnavailable) as refused:
        media.resolve("acme", INSTANCE, "wamid.6", photo(sha256="1" * 64))
    assert refused.value.reason == "mismatch"
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET)


def test_announced_size_over_the_limit_is_too_large_without_a_download(s3: Any) -> None:
    server = meta_server(files.png())
    media = media_of(s3, MetaCloudClient(local_mode=True, transport=server.transport), META)
    with pytest.raises(MediaUnavailable) as refused:
        media.resolve("acme", INSTANCE, "wamid.7", photo(size=6 * 1024 * 1024))
    assert refused.value.reason == "too_large"
    assert server.requests == []


def test_a_media_url_on_another_host_is_never_fetched(s3: Any) -> None:
    server = Server(lambda request: httpx.Response(200, content=files.png()))
    target = ProviderTarget(kind="wuzapi", base_url="https://wuz.example.com", provider_instance_id="i1")
    media = media_of(s3, WuzapiClient(local_mode=True, transport=server.transport), target)
    evil = Media(kind="image", source=MediaSource(via="url", url="https://169.254.169.254/latest/meta-data"))
    with pytest.raises(MediaUnavailable) as refused:
        media.resolve("acme", INSTANCE, "m1", evil)
    assert refused.value.reason == "forbidden_url"
    assert server.requests == []


def test_an_endless_media_body_is_read_no_further_than_the_kinds_limit(s3: Any) -> None:
    chunk = bytes(64 * 1024)
    pulled: list[int] = []

    def endless() -> Iterator[bytes]:
        yield files.png()
        for _ in range(1024):  # 64 MB, far over an image's 5 MB, if it were all read
            pulled.append(len(chunk))
            yield chunk

    server = Server(lambda request: httpx.Response(200, content=endless()))
    target = ProviderTarget(kind="wuzapi", base_url="https://wuz.example.com", provider_instance_id="i1")
    media = media_of(s3, WuzapiClient(local_mode=True, transport=server.transport), target)
    by_url = Media(kind="image", source=MediaSource(via="url", url="https://media.s3.us-east-1.amazonaws.com/u/1.png"))

    with pytest.raises(MediaUnavailable) as refused:
        media.resolve("acme", INSTANCE, "m9", by_url)

    assert refused.value.reason == "too_large"
    assert sum(pulled) <= 5 * 1024 * 1024 + len(chunk)


def test_wuzapi_s3_url_and_download_route(s3: Any) -> None:
    data = files.png()

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.host == "media.s3.us-east-1.amazonaws.com":
            return httpx.Response(200, content=data)
        assert request.url.path == "/chat/downloadimage"
        assert request.headers["token"] == "itok"
        assert json.loads(request.content)["DirectPath"] == "/v/t62.7118-24/1"
        answer = contract("wuzapi_download_image.json")
        answer["data"]["Data"] = "data:image/png;base64," + base64.b64encode(data).decode()
        return httpx.Response(200, json=answer)

    server = Server(handle)
    target = ProviderTarget(
        kind="wuzapi", base_url="https://wuz.example.com", provider_instance_id="i1", instance_token="itok"
    )
    media = media_of(s3, WuzapiClient(local_mode=True, transport=server.transport), target)
    by_url = Media(kind="image", source=MediaSource(via="url", url="https://media.s3.us-east-1.amazonaws.com/u/1.png"))
    by_route = Media(
        kind="sticker",
        source=MediaSource(via="provider_download", fields={"kind": "sticker", "DirectPath": "/v/t62.7118-24/1"}),
    )
    assert media.resolve("acme", INSTANCE, "m2", by_url).sha256 == hashlib.sha256(data).hexdigest()
    assert media.resolve("acme", INSTANCE, "m3", by_route).sha256 == hashlib.sha256(data).hexdigest()


def test_evolution_get_base64_route(s3: Any) -> None:
    data = files.pdf()

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/chat/getBase64FromMediaMessage/line-1"
        assert request.headers["apikey"] == "etok"
        assert set(json.loads(request.content)["message"]) == {"key"}
        return httpx.Response(
            201, json=contract("evolution_get_base64_201.json") | {"base64": base64.b64encode(data).decode()}
        )

    server = Server(handle)
    target = ProviderTarget(
        kind="evolution", base_url="https://evo.example.com", provider_instance_id="line-1", instance_token="etok"
    )
    media = media_of(s3, EvolutionClient(local_mode=True, transport=server.transport), target)
    # As the webhook mapping names the message (the route's own body), and by its key alone.
    for message_id, fields in (("3EB0", {"message": {"key": {"id": "3EB0"}}}), ("3EB1", {"key": {"id": "3EB1"}})):
        document = Media(kind="document", source=MediaSource(via="provider_download", fields=fields))
        ref = media.resolve("acme", INSTANCE, message_id, document)
        assert (ref.mime_type, ref.file_name) == ("application/pdf", "boleto.pdf")
        assert media.read(ref) == data
    assert [json.loads(request.content)["message"]["key"]["id"] for request in server.requests] == ["3EB0", "3EB1"]


def test_a_stored_reference_whose_bytes_changed_is_a_mismatch(s3: Any) -> None:
    media = S3Media(s3, BUCKET)
    stored = media.put_inline(None, INSTANCE, "m4", Media(kind="image"), files.png()).stored
    assert stored is not None
    s3.put_object(Bucket=BUCKET, Key=stored.key, Body=files.png(8, 8))
    with pytest.raises(MediaUnavailable) as refused:
        media.read(stored)
    assert refused.value.reason == "mismatch"


class Trickle(httpx.SyncByteStream):
    """A body a slow server sends steadily, chunk after chunk, each taking `seconds` of `clock`."""

    def __init__(self, data: bytes, clock: list[float], seconds: float, chunk: int = 64) -> None:
        self._parts = [data[i : i + chunk] for i in range(0, len(data), chunk)]
        self._clock = clock
        self._seconds = seconds

    def __iter__(self) -> Iterator[bytes]:
        for part in self._parts:
            self._clock[0] += self._seconds
            yield part


@pytest.mark.parametrize("kind", ["wuzapi", "evolution"])
def test_a_file_still_arriving_at_the_deadline_is_too_slow_and_may_be_tried_again(s3: Any, kind: str) -> None:
    """A steady trickle never times a read out: the body stops between two chunks once the
    fetch's deadline passed, and nothing is stored; a fetch that starts past it sends nothing."""
    data = files.ogg_opus()  # 26 chunks of 64 bytes, a second each
    now = [0.0]
    server = Server(lambda request: httpx.Response(200, stream=Trickle(data, now, seconds=1.0)))
    client = WuzapiClient if kind == "wuzapi" else EvolutionClient
    target = ProviderTarget(kind=kind, base_url="https://media.example.com", provider_instance_id="i1")
    media = media_of(s3, client(local_mode=True, transport=server.transport), target)
    voice = Media(kind="voice", source=MediaSource(via="url", url="https://media.example.com/u/1.ogg"))
    deadline = Deadline(5.0, lambda: now[0])

    with pytest.raises(MediaUnavailable) as slow:
        media.resolve("acme", INSTANCE, "m5", voice, deadline=deadline)
    with pytest.raises(MediaUnavailable) as late:
        media.resolve("acme", INSTANCE, "m5", voice, deadline=deadline)

    assert (slow.value.reason, slow.value.retryable) == ("too_slow", True)
    assert (late.value.reason, late.value.retryable) == ("too_slow", True)
    assert len(server.requests) == 1 and now[0] == 5.0  # not a chunk read past the deadline
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0
    assert media.resolve("acme", INSTANCE, "m5", voice).sha256 == hashlib.sha256(data).hexdigest()  # no deadline
