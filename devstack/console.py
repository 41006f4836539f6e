"""The web console's static files at `/console/`, on the API's own origin.

Production serves the same files from CloudFront with the same security headers (template.yaml,
`ConsoleHeadersPolicy`), so a page that works here under the Content-Security-Policy works there.
Sharing the origin is what lets the page call `/api/...` with relative URLs and no CORS.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

from devstack.apigw import HttpResponse

ROOT = Path(__file__).resolve().parent.parent / "console"
PREFIX = "/console"
INDEX = "index.html"


def content_security_policy(media_origin: str | None) -> str:
    """The console's Content-Security-Policy. Images may come from the media bucket's origin
    alone (an image message's thumbnail, a presigned GET valid a few minutes), nothing else."""
    images = f"img-src 'self' data: {media_origin}" if media_origin else "img-src 'self' data:"
    return (
        "default-src 'self'; connect-src 'self' ws: wss:; script-src 'self'; style-src 'self'; "
        f"{images}; frame-ancestors 'none'"
    )


# The media bucket's origin in production: its regional domain, the host the functions' presigned
# URLs use (virtual-hosted, regional endpoint); locally, the embedded AWS endpoint's URL.
PRODUCTION_MEDIA_ORIGIN = "https://${MediaBucket.RegionalDomainName}"
# The headers CloudFront's response headers policy adds in production (keep the two equal): the
# template's `!Sub` of this policy.
CONTENT_SECURITY_POLICY = content_security_policy(PRODUCTION_MEDIA_ORIGIN)
OTHER_SECURITY_HEADERS = {"x-content-type-options": "nosniff", "referrer-policy": "no-referrer"}
SECURITY_HEADERS = {"content-security-policy": CONTENT_SECURITY_POLICY, **OTHER_SECURITY_HEADERS}
# Browsers refuse an ES module served with a type they do not take for JavaScript, and nosniff
# makes them refuse a stylesheet that is not text/css: the types are fixed here rather than
# left to the machine's mime.types.
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".webmanifest": "application/manifest+json",
    ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
}
NOT_FOUND = b"Not Found\n"


def content_type(name: str) -> str:
    suffix = PurePosixPath(name).suffix.lower()
    return CONTENT_TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"


def is_console_path(raw_path: str) -> bool:
    return raw_path == PREFIX or raw_path.startswith(PREFIX + "/")


class ConsoleFiles:
    """Answers GET/HEAD for the files under `root`; `None` for a path that is not the console's.
    `media_origin`: where the media bucket's presigned URLs point (the local AWS endpoint)."""

    def __init__(self, root: Path = ROOT, media_origin: str | None = None) -> None:
        self.root = root.resolve()
        self.headers = {"content-security-policy": content_security_policy(media_origin), **OTHER_SECURITY_HEADERS}

    def handle(self, method: str, raw_path: str, query: str = "") -> HttpResponse | None:
        if not is_console_path(raw_path):
            return None
        if method not in {"GET", "HEAD"}:
            return self._answer(405, {"allow": "GET, HEAD", "content-type": "text/plain; charset=utf-8"}, b"")
        if raw_path == PREFIX:
            # Relative URLs in the page (./app.js) resolve against the directory only with the slash.
            location = PREFIX + "/" + (f"?{query}" if query else "")
            return self._answer(301, {"location": location, "content-type": "text/plain; charset=utf-8"}, b"")
        found = self._file(raw_path[len(PREFIX) + 1 :])
        if found is None:
            return self._answer(404, {"content-type": "text/plain; charset=utf-8"}, NOT_FOUND)
        body = found.read_bytes()
        return self._answer(
            200, {"content-type": content_type(found.name)}, b"" if method == "HEAD" else body, len(body)
        )

    def _file(self, relative: str) -> Path | None:
        """The file a request names, or None: missing, a directory, hidden, or outside the root
        (`..` in any spelling, percent-encoded or not, and backslashes are refused outright)."""
        decoded = unquote(relative or INDEX)
        if decoded.endswith("/"):
            decoded += INDEX
        parts = decoded.split("/")
        if "\\" in decoded or "\x00" in decoded or any(not part or part.startswith(".") for part in parts):
            return None
        candidate = self.root.joinpath(*parts).resolve()
        if not candidate.is_relative_to(self.root) or not candidate.is_file():
            return None
        return candidate

    def _answer(self, status: int, headers: dict[str, str], body: bytes, length: int | None = None) -> HttpResponse:
        # The page changes with every merge and is small: the browser revalidates each load.
        all_headers = {**headers, "cache-control": "no-cache", **self.headers}
        if length is not None:
            all_headers["content-length"] = str(length)
        return HttpResponse(status, all_headers, body)
