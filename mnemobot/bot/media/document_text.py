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

from mnemobot.bot.i18n import N_
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
    """Why the text could not be read (one line for the user, see `ReaderRefusal`)."""

    @classmethod
    def of(cls, refusal: ReaderRefusal) -> UnreadableDocument:
        """The reader process's refusal, as the bot raises it."""
        return cls(refusal.message, permanent=refusal.permanent, **refusal.values)


@dataclass(frozen=True, slots=True)
class DocumentExtract:
    text: str
    # What was left out ("pages 301-412", "the text after 1,000,000 characters"), if anything.
    cut: str | None = None
    pages: int | None = None
    # Where it was cut, for the user's line in their language: pages read (of `pages`), or
    # characters kept.
    read_pages: int | None = None
    read_chars: int | None = None


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
    return {
        "text": extract.text,
        "cut": extract.cut,
        "pages": extract.pages,
        "readPages": extract.read_pages,
        "readChars": extract.read_chars,
    }


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
            read_pages=extract.read_pages,
            read_chars=max_chars,
        )
    return extract


def _plain_text(data: bytes) -> DocumentExtract:
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return DocumentExtract(data.decode("utf-16", errors="replace"))
    if b"\x00" in data[:8192]:
        raise UnreadableDocument(N_("it is not a text file (it holds binary data)"), permanent=True)
    return DocumentExtract(data.decode("utf-8-sig", errors="replace"))


def _pdf_text(data: bytes, max_pages: int) -> DocumentExtract:
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnreadableDocument(N_("the PDF is password-protected"), permanent=True)
        total = len(reader.pages)
        texts = []
        for page in reader.pages[:max_pages]:
            texts.append(page.extract_text() or "")
    except (UnreadableDocument, MemoryError):
        raise
    except LimitReachedError:
        raise UnreadableDocument(
            N_("the PDF unpacks to more data than a document may hold"), permanent=True
        ) from None
    except RecursionError:
        raise UnreadableDocument(
            N_("the PDF nests its contents too deeply to read"), permanent=True
        ) from None
    except Exception as exc:
        # pypdf raises what the damage leads to: PdfReadError, ValueError, KeyError...
        log.info("unreadable PDF: %s: %s", type(exc).__name__, exc)
        raise UnreadableDocument(
            N_("the PDF could not be read (it looks damaged)"), permanent=True
        ) from None
    text = "\n\n".join(t.strip() for t in texts if t.strip())
    if not text:
        raise UnreadableDocument(
            N_("the PDF has no text layer (a scan? only its images)"), permanent=True
        )
    cut = f"pages {max_pages + 1}-{total}" if total > max_pages else None
    return DocumentExtract(
        text, cut=cut, pages=total, read_pages=max_pages if total > max_pages else None
    )
