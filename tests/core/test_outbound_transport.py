"""Outbound connections dial the address the policy checked, and keep the host name for TLS."""

from __future__ import annotations

import datetime
import gzip
import ipaddress
import socket
import ssl
import threading
import typing
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpcore
import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from switchboard.core.errors import DownstreamError, InvalidInput, ProviderTimeout
from switchboard.core.outbound import PinnedTransport
from switchboard.core.urls import LOOPBACK, IPAddress, OutboundPolicy
from switchboard.media.uploads import fetch_under_policy
from switchboard.messages.webhook_http import HttpxPoster
from switchboard.providers.http import ProviderHttp
from switchboard.providers.media_fetch import fetch_url
from switchboard.routing.attachments import FetchRefused, fetch_from_helpdesk
from switchboard.routing.chatwoot import ChatwootClient
from switchboard.routing.domain import DownstreamPost, DownstreamTarget, IncomingMessage

PUBLIC = ipaddress.ip_address("93.184.215.14")
LOCAL = ipaddress.ip_address("127.0.0.1")
POLL = 0.02  # the test servers' serving loop: `shutdown()` waits for its next poll, 0.5 s by default


class Rebinding:
    """A name that answers a public address first and loopback afterwards."""

    def __init__(self) -> None:
        self.lookups: list[str] = []

    def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.lookups.append(host)
        return [PUBLIC] if len(self.lookups) == 1 else [LOCAL]


class RecordingStream(httpcore.MockStream):
    def __init__(self, buffer: list[bytes], tls_names: list[str | None], written: list[bytes]) -> None:
        super().__init__(buffer)
        self._tls_names = tls_names
        self._written = written

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._written.append(buffer)

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        self._tls_names.append(server_hostname)
        return self


class RecordingBackend(httpcore.NetworkBackend):
    """Answers 200 on every connection and records where it was asked to connect."""

    def __init__(self) -> None:
        self.dialled: list[tuple[str, int]] = []
        self.tls_names: list[str | None] = []
        self.written: list[bytes] = []

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        self.dialled.append((host, port))
        answer = [b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n", b"ok"]
        return RecordingStream(answer, self.tls_names, self.written)


def test_given_a_name_that_rebinds_to_loopback_then_the_checked_public_address_is_dialled() -> None:
    resolver, backend = Rebinding(), RecordingBackend()
    client = httpx.Client(transport=PinnedTransport(OutboundPolicy(), resolver=resolver, backend=backend))

    response = client.get("https://provider.example/send")

    assert response.status_code == 200
    assert resolver.lookups == ["provider.example"]  # one resolution per request
    assert backend.dialled == [(str(PUBLIC), 443)]
    assert backend.tls_names == ["provider.example"]  # SNI and certificate check use the name
    assert b"Host: provider.example\r\n" in b"".join(backend.written)


def test_given_the_second_resolution_is_loopback_then_that_request_is_refused_before_dialling() -> None:
    resolver, backend = Rebinding(), RecordingBackend()
    client = httpx.Client(transport=PinnedTransport(OutboundPolicy(), resolver=resolver, backend=backend))
    client.get("https://provider.example/first")

    with pytest.raises(InvalidInput) as refused:
        client.get("https://provider.example:8443/second?token=s3cr3t")

    assert "127.0.0.1" in refused.value.message and "s3cr3t" not in refused.value.message
    assert backend.dialled == [(str(PUBLIC), 443)]


def test_every_resolved_address_is_checked_and_a_refused_one_refuses_the_request() -> None:
    backend = RecordingBackend()
    transport = PinnedTransport(OutboundPolicy(), resolver=lambda host, port: [PUBLIC, LOCAL], backend=backend)

    with pytest.raises(InvalidInput):
        httpx.Client(transport=transport).get("https://provider.example/")
    assert backend.dialled == []


def test_an_unreachable_checked_address_falls_back_to_the_next_checked_one() -> None:
    other = ipaddress.ip_address("93.184.215.15")

    class FirstRefuses(RecordingBackend):
        def connect_tcp(self, host: str, port: int, *args: typing.Any, **kwargs: typing.Any) -> httpcore.NetworkStream:
            if host == str(PUBLIC):
                self.dialled.append((host, port))
                raise httpcore.ConnectError("refused")
            return super().connect_tcp(host, port, *args, **kwargs)

    backend = FirstRefuses()
    transport = PinnedTransport(OutboundPolicy(), resolver=lambda host, port: [PUBLIC, other], backend=backend)

    assert httpx.Client(transport=transport).get("https://provider.example/").status_code == 200
    assert backend.dialled == [(str(PUBLIC), 443), (str(other), 443)]


# --- a real TLS server on loopback, reached by a name -------------------------------------
class _Served:
    def __init__(self, server: ThreadingHTTPServer, sni: list[str | None], hosts: list[str]) -> None:
        self.port = server.server_address[1]
        self.sni = sni
        self.hosts = hosts


def _certificate(name: str, directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / f"{name}.pem", directory / f"{name}.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[_Served, Path]]:
    """An https server on 127.0.0.1 whose certificate names only `provider.example`."""
    cert_path, key_path = _certificate("provider.example", tmp_path)
    sni: list[str | None] = []
    hosts: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hosts.append(self.headers["Host"])
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: typing.Any) -> None:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)

    def record_sni(connection: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        sni.append(name)

    context.sni_callback = record_sni
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL}, daemon=True)
    thread.start()
    yield _Served(server, sni, hosts), cert_path
    server.shutdown()
    server.server_close()


def test_given_a_pinned_address_then_tls_verifies_the_certificate_of_the_host_name(
    tls_server: tuple[_Served, Path],
) -> None:
    served, cert_path = tls_server
    trust = ssl.create_default_context(cafile=str(cert_path))
    transport = PinnedTransport(OutboundPolicy(LOOPBACK), resolver=lambda host, port: [LOCAL], verify=trust)

    response = httpx.Client(transport=transport).get(f"https://provider.example:{served.port}/")

    assert response.text == "ok"
    assert served.sni == ["provider.example"]
    assert served.hosts == [f"provider.example:{served.port}"]


def test_given_a_name_the_certificate_does_not_cover_then_tls_fails(tls_server: tuple[_Served, Path]) -> None:
    served, cert_path = tls_server
    trust = ssl.create_default_context(cafile=str(cert_path))
    transport = PinnedTransport(OutboundPolicy(LOOPBACK), resolver=lambda host, port: [LOCAL], verify=trust)

    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.Client(transport=transport).get(f"https://other.example:{served.port}/")


# --- every outbound client connects through the pinned transport ---------------------------
@pytest.fixture
def loopback_server() -> Iterator[tuple[int, list[str]]]:
    """A plain http server on 127.0.0.1 that records every request path it receives."""
    paths: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            paths.append(self.path)
            if self.path.startswith("/redirect"):
                self.send_response(302)
                self.send_header("Location", "/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = b'{"payload": []}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: typing.Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL}, daemon=True).start()
    yield server.server_address[1], paths
    server.shutdown()
    server.server_close()


@pytest.fixture
def name_resolving_to_loopback(monkeypatch: pytest.MonkeyPatch) -> str:
    """`rebind.example` resolves, through the system resolver, to 127.0.0.1."""
    real = socket.getaddrinfo

    def getaddrinfo(host: str, port: typing.Any, *args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        return real("127.0.0.1" if host == "rebind.example" else host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return "rebind.example"


def _calls(port: int, host: str) -> dict[str, typing.Callable[[], object]]:
    provider = ProviderHttp("wuzapi", local_mode=False)
    downstream = ChatwootClient(local_mode=False)
    poster = HttpxPoster(local_mode=False)
    target = DownstreamTarget(
        base_url=f"https://{host}:{port}", account_id=1, inbox_id=1, api_token="t0ken", source="tenant"
    )
    message = IncomingMessage(
        event_id="e1", instance="i1", owner_tag=None, provider_message_id="m1", sender="5511999999999", text="hi"
    )
    return {
        "provider": lambda: provider.request(
            "GET", f"https://{host}:{port}", "/session/status", route="/session/status", headers={}
        ),
        "downstream": lambda: downstream.post_incoming(target, message, DownstreamPost(content="hi")),
        "client webhook": lambda: poster.post(f"https://{host}:{port}/hooks", b"{}", {}),
    }


@pytest.mark.parametrize("client", ["provider", "downstream", "client webhook"])
def test_given_a_name_resolving_to_loopback_then_each_outbound_client_refuses_without_connecting(
    loopback_server: tuple[int, list[str]], name_resolving_to_loopback: str, client: str
) -> None:
    port, paths = loopback_server

    with pytest.raises(InvalidInput):
        _calls(port, name_resolving_to_loopback)[client]()
    assert paths == []


def test_given_loopback_allowed_then_a_client_webhook_redirect_is_not_followed(
    loopback_server: tuple[int, list[str]],
) -> None:
    port, paths = loopback_server

    status = HttpxPoster(local_mode=True).post(f"http://127.0.0.1:{port}/redirect", b"{}", {})

    assert status == 302
    assert paths == ["/redirect"]


def test_given_a_client_webhook_answering_an_endless_body_then_only_its_status_is_read() -> None:
    pulled: list[int] = []

    def endless() -> Iterator[bytes]:
        for _ in range(4096):  # 256 MB if it were all read
            pulled.append(1)
            yield bytes(64 * 1024)

    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=endless()))

    status = HttpxPoster(local_mode=True, transport=transport).post("https://hooks.example.com/in", b"{}", {})

    assert status == 200
    assert len(pulled) <= 2  # the first chunk of 64 KB, and the one that goes past it


def _compressing(asked: list[str]) -> httpx.MockTransport:
    """A server that records the encoding asked for and answers gzip whatever it was."""

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(request.headers.get("accept-encoding", ""))
        body = gzip.compress(b"%PDF-1.7\n" + bytes(4 * 1024 * 1024))  # 4 MB in a few KB
        return httpx.Response(200, content=body, headers={"content-encoding": "gzip"})

    return httpx.MockTransport(handle)


def _fetch_helpdesk(transport: httpx.MockTransport) -> object:
    return fetch_from_helpdesk(transport=transport)("https://chat.example.com/f", "https://chat.example.com", 1024)


def _fetch_client_url(transport: httpx.MockTransport) -> object:
    return fetch_under_policy(transport=transport)("https://files.example.com/f.pdf", 1024)


def _fetch_provider_media(transport: httpx.MockTransport) -> object:
    http = ProviderHttp("wuzapi", local_mode=False, transport=transport)
    return fetch_url(
        http, "https://wuz.example.com/f", hosts=frozenset({"wuz.example.com"}), headers={}, max_bytes=1024
    )


@pytest.mark.parametrize(
    ("fetch", "words"),
    [
        (_fetch_helpdesk, "did not hand it over (DecodingError)"),
        (_fetch_client_url, "could not be fetched"),
        (_fetch_provider_media, "unreadable answer"),
    ],
)
def test_given_a_file_sent_compressed_then_it_was_asked_as_stored_and_is_never_inflated(
    fetch: typing.Callable[[httpx.MockTransport], object], words: str
) -> None:
    asked: list[str] = []

    with pytest.raises((FetchRefused, InvalidInput, ProviderTimeout)) as refused:
        fetch(_compressing(asked))

    assert asked == ["identity"]
    assert words in str(refused.value)


def _bomb(asked: list[str]) -> httpx.MockTransport:
    """A server of a tenant's that answers every call with an endless body, or a compressed one
    that inflates far past anything an answer holds, whatever encoding it was asked for."""

    def endless() -> typing.Iterator[bytes]:
        for _ in range(4096):  # 256 MB if it were all read
            asked.append("chunk")
            yield b" " * (64 * 1024)

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(request.headers.get("accept-encoding", ""))
        if request.url.path.endswith("/gzip"):
            body = gzip.compress(b"{" + b" " * (64 * 1024 * 1024) + b"}")
            return httpx.Response(200, content=body, headers={"content-encoding": "gzip"})
        return httpx.Response(200, content=endless())

    return httpx.MockTransport(handle)


@pytest.mark.parametrize("path", ["/endless", "/gzip"])
def test_given_a_provider_answering_an_endless_or_inflating_body_then_the_answer_is_refused_unread(path: str) -> None:
    asked: list[str] = []
    http = ProviderHttp("wuzapi", local_mode=False, transport=_bomb(asked))

    with pytest.raises(ProviderTimeout, match="unreadable answer"):
        http.request("POST", "https://wuz.example.com", path, route="/chat/send/text", headers={}, body={})

    assert asked[0] == "identity"
    assert asked.count("chunk") <= 70  # 4 MB read at most, in 64 KB chunks


@pytest.mark.parametrize("path", ["/endless", "/gzip"])
def test_given_a_helpdesk_answering_an_endless_or_inflating_body_then_the_answer_is_refused_unread(path: str) -> None:
    asked: list[str] = []
    downstream = ChatwootClient(local_mode=False, transport=_bomb(asked))
    target = DownstreamTarget(
        base_url=f"https://chat.example.com{path}", account_id=1, inbox_id=1, api_token="t0ken", source="tenant"
    )
    message = IncomingMessage(
        event_id="e1", instance="i1", owner_tag=None, provider_message_id="m1", sender="5511999999999", text="hi"
    )

    with pytest.raises(DownstreamError, match="unreadable answer"):
        downstream.post_incoming(target, message, DownstreamPost(content="hi"))

    assert asked[0] == "identity"
    assert asked.count("chunk") <= 520  # 32 MB read at most, in 64 KB chunks
