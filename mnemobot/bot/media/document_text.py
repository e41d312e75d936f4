"""The text of a document someone sent: text-like files as they are, PDFs through pypdf.

Runs in a reader process (`document_job`, see `bounded`): a PDF of hundreds of pages takes
seconds, a hostile one minutes and gigabytes. Limits on pages and characters come from
the runtime config; what was left out is said, never silently lost.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from mnemobot.bot.media.reader_process import ReaderRefusal

log = logging.getLogger(__name__)

# Files read as text by their name's ending (source code, data, notes).
TEXT_SUFFIXES = frozenset(
    {
        ".txt", ".md", ".markdown", ".rst", ".csv", ".tsv", ".json", ".jsonl", ".yaml",
        ".yml", ".toml", ".ini", ".cfg", ".conf", ".log", ".xml", ".html", ".htm", ".tex",
        ".py", ".js", ".ts", ".tsx", ".jsx", ".java", ".kt", ".go", ".rs", ".c", ".h",
        ".cpp", ".hpp", ".cs", ".rb", ".php", ".swift", ".sh", ".bash", ".sql", ".r",
        ".lua", ".pl", ".scala", ".css", ".scss", ".vue", ".dart", ".ex", ".exs", ".hs",
    }
)  # fmt: skip


class UnreadableDocument(ReaderRefusal):
    """Why the text could not be read (one line for the user)."""


@dataclass(frozen=True, slots=True)
class DocumentExtract:
    text: str
    # What was left out ("pages 301-412", "the text after 1,000,000 characters"), if anything.
    cut: str | None = None
    pages: int | None = None


def is_readable(file_name: str, mime_type: str | None) -> bool:
    """Whether a document of this name and type is one we read (text-like or PDF)."""
    suffix = PurePath(file_name.lower()).suffix
    mime = (mime_type or "").lower()
    return (
        suffix in TEXT_SUFFIXES
        or suffix == ".pdf"
        or mime == "application/pdf"
        or mime.startswith("text/")
        or mime in {"application/json", "application/xml", "application/x-yaml"}
    )


def document_job(params: dict[str, Any], data: bytes) -> dict[str, Any]:
    """`extract_text` as a reader process's job."""
    extract = extract_text(
        data,
        str(params["name"]),
        params.get("mime_type"),
        max_pages=int(params["max_pages"]),
        max_chars=int(params["max_chars"]),
    )
    return {"text": extract.text, "cut": extract.cut, "pages": extract.pages}


def extract_text(
    data: bytes, file_name: str, mime_type: str | None, *, max_pages: int, max_chars: int
) -> DocumentExtract:
    if PurePath(file_name.lower()).suffix == ".pdf" or (mime_type or "") == "application/pdf":
        extract = _pdf_text(data, max_pages)
    else:
        extract = _plain_text(data)
    if len(extract.text) > max_chars:
        return DocumentExtract(
            extract.text[:max_chars],
            cut=f"the text after {max_chars:,} characters",
            pages=extract.pages,
        )
    return extract


def _plain_text(data: bytes) -> DocumentExtract:
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return DocumentExtract(data.decode("utf-16", errors="replace"))
    if b"\x00" in data[:8192]:
        raise UnreadableDocument("it is not a text file (it holds binary data)")
    return DocumentExtract(data.decode("utf-8-sig", errors="replace"))


def _pdf_text(data: bytes, max_pages: int) -> DocumentExtract:
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnreadableDocument("the PDF is password-protected")
        total = len(reader.pages)
        texts = []
        for page in reader.pages[:max_pages]:
            texts.append(page.extract_text() or "")
    except (UnreadableDocument, MemoryError):
        raise
    except LimitReachedError:
        raise UnreadableDocument("the PDF unpacks to more data than a document may hold") from None
    except RecursionError:
        raise UnreadableDocument("the PDF nests its contents too deeply to read") from None
    except Exception as exc:
        # pypdf raises what the damage leads to: PdfReadError, ValueError, KeyError...
        log.info("unreadable PDF: %s: %s", type(exc).__name__, exc)
        raise UnreadableDocument("the PDF could not be read (it looks damaged)") from None
    text = "\n\n".join(t.strip() for t in texts if t.strip())
    if not text:
        raise UnreadableDocument("the PDF has no text layer (a scan? only its images)")
    cut = f"pages {max_pages + 1}-{total}" if total > max_pages else None
    return DocumentExtract(text, cut=cut, pages=total)
