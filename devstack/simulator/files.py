"""Small real files the simulator's customers send: every byte built here, nothing shipped.

- a PNG (signature, IHDR, IDAT, IEND, each chunk with its CRC-32);
- an Ogg Opus voice note: three Ogg pages (RFC 3533), the first holding `OpusHead`, the
  second `OpusTags` (RFC 7845), the last one silent 20 ms Opus frame, each page with the Ogg
  CRC (polynomial 0x04C11DB7, no reflection);
- a one-page PDF whose cross-reference table points at each object's own offset.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from functools import lru_cache


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _png(header: bytes, raw_rows: bytes) -> bytes:
    chunks = _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw_rows)) + _chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + chunks


def png(width: int = 4, height: int = 4, rgb: tuple[int, int, int] = (37, 211, 102)) -> bytes:
    row = b"\x00" + bytes(rgb) * width  # filter type 0, then the pixels
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return _png(header, row * height)


@lru_cache(maxsize=64)
def code_png(text: str, modules: int = 29, scale: int = 6) -> bytes:
    """A black and white PNG drawn from `text` (a square of `modules` cells, each `scale` pixels,
    in a white border): it stands for a pairing code's QR image. Not a scannable QR code."""
    bits = hashlib.sha256(text.encode()).digest()
    size = (modules + 8) * scale  # a quiet zone of 4 cells around it

    def finder(cx: int, cy: int) -> bool | None:
        """The three corner squares a QR code has (dark ring, light ring, dark centre), else None."""
        for ox, oy in ((0, 0), (modules - 7, 0), (0, modules - 7)):
            dx, dy = cx - ox, cy - oy
            if -1 <= dx <= 7 and -1 <= dy <= 7:
                ring = max(abs(dx - 3), abs(dy - 3))
                return ring != 2 and ring <= 3
        return None

    def dark(x: int, y: int) -> bool:
        cx, cy = x // scale - 4, y // scale - 4
        if not (0 <= cx < modules and 0 <= cy < modules):
            return False
        corner = finder(cx, cy)
        if corner is not None:
            return corner
        index = (cy * modules + cx) * 7
        return bool(bits[index // 8 % len(bits)] >> (index % 8) & 1)

    rows = []
    for y in range(size):
        row = bytearray([0])  # filter type 0
        for x in range(0, size, 8):
            byte = 0
            for bit in range(8):
                lit = x + bit < size and not dark(x + bit, y)
                byte |= lit << (7 - bit)
            row.append(byte)
        rows.append(bytes(row))
    return _png(struct.pack(">IIBBBBB", size, size, 1, 0, 0, 0, 0), b"".join(rows))  # 1-bit greyscale


def _ogg_crc(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) if crc & 0x80000000 else crc << 1
            crc &= 0xFFFFFFFF
    return crc


def _ogg_page(packet: bytes, *, serial: int, sequence: int, granule: int, flags: int) -> bytes:
    lacing = [255] * (len(packet) // 255) + [len(packet) % 255]
    header = b"OggS" + struct.pack("<BBqIIIB", 0, flags, granule, serial, sequence, 0, len(lacing)) + bytes(lacing)
    page = header + packet
    crc = _ogg_crc(page)
    return page[:22] + struct.pack("<I", crc) + page[26:]


SILENT_OPUS_FRAME = b"\xf8\xff\xfe"  # TOC: CELT fullband 20 ms, mono, one frame; then silence


def ogg_opus(frames: int = 50, serial: int = 0x5357) -> bytes:
    """A mono 48 kHz Opus voice note of `frames` x 20 ms of silence (one frame per page)."""
    head = b"OpusHead" + struct.pack("<BBHIhB", 1, 1, 312, 48000, 0, 0)
    vendor = b"switchboard simulator"
    tags = b"OpusTags" + struct.pack("<I", len(vendor)) + vendor + struct.pack("<I", 0)
    pages = [
        _ogg_page(head, serial=serial, sequence=0, granule=0, flags=0x02),
        _ogg_page(tags, serial=serial, sequence=1, granule=0, flags=0x00),
    ]
    for index in range(frames):
        last = index == frames - 1
        granule = 312 + 960 * (index + 1)  # pre-skip plus 960 samples per 20 ms frame
        pages.append(
            _ogg_page(SILENT_OPUS_FRAME, serial=serial, sequence=2 + index, granule=granule, flags=0x04 if last else 0)
        )
    return b"".join(pages)


def pdf(text: str = "switchboard") -> bytes:
    safe = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    stream = f"BT /F1 18 Tf 36 96 Td ({safe}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 288 144] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def sized(kind_bytes: bytes, size: int) -> bytes:
    """`kind_bytes` padded to `size` bytes (a large file of the same type: the padding follows
    the file's own end, which every reader of these formats ignores)."""
    return kind_bytes + b"\x00" * max(0, size - len(kind_bytes))
