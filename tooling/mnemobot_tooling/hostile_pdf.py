"""Small PDFs made to hurt a reader, for tests and benches (made here, never committed):

- `shared_stream`: many pages whose content is one Flate stream of text operators; a few
  KB that keep pypdf busy for minutes (it reads the stream again for every page);
- `deeply_nested`: a content stream of arrays nested thousands deep: RecursionError;
- `decompression_bomb`: a stream that inflates to more than pypdf will unpack
  (LimitReachedError).
"""

from __future__ import annotations

import zlib

_CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _pdf(objects: list[bytes]) -> bytes:
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    ).encode()
    return bytes(out)


def _flate_stream(content: bytes, repeat: int = 1) -> bytes:
    """A Flate stream of `content` said `repeat` times (packed piece by piece: a bomb is
    never whole in this process's memory)."""
    packer = zlib.compressobj(9)
    packed = b"".join(packer.compress(content) for _ in range(repeat)) + packer.flush()
    head = f"<< /Length {len(packed)} /Filter /FlateDecode >>\nstream\n".encode()
    return head + packed + b"\nendstream"


def _page(contents: int, font: int) -> bytes:
    return (
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {contents} 0 R "
        f"/Resources << /Font << /F1 {font} 0 R >> >> >>"
    ).encode()


def _one_page(content_stream: bytes) -> bytes:
    return _pdf(
        [
            _CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            _page(4, 5),
            content_stream,
            _FONT,
        ]
    )


def shared_stream(pages: int = 30, content_bytes: int = 6_000_000) -> bytes:
    """`pages` pages sharing one stream of `content_bytes` of text operators (about 6 s of
    pypdf per page and megabyte on a 2-core Xeon)."""
    operator = b"BT /F1 11 Tf 72 720 Td (lorem ipsum) Tj ET\n"
    content = operator * (content_bytes // len(operator))
    kids = " ".join(f"{4 + i} 0 R" for i in range(pages))
    objects = [
        _CATALOG,
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        _flate_stream(content),
    ]
    objects += [_page(3, 4 + pages) for _ in range(pages)]
    objects.append(_FONT)
    return _pdf(objects)


def deeply_nested(depth: int = 5_000) -> bytes:
    """One page whose text is an array nested `depth` deep."""
    content = b"BT /F1 11 Tf " + b"[" * depth + b"]" * depth + b" TJ ET"
    return _one_page(_flate_stream(content))


def decompression_bomb(inflated: int = 80_000_000) -> bytes:
    """One page whose content stream inflates to `inflated` bytes (80 KB packed; pypdf
    stops at 75 MB)."""
    piece = 1_000_000
    return _one_page(_flate_stream(b" " * piece, max(1, inflated // piece)))
