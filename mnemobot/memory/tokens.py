"""Token estimates without a tokenizer download.

tiktoken downloads its encodings at first use and fails offline, so tokens are estimated
from characters instead.
"""

from __future__ import annotations


def _is_dense_script(ch: str) -> bool:
    # CJK, kana, hangul: about one token per character; Cyrillic/Greek/Arabic/Hebrew:
    # about two characters per token with common BPE vocabularies.
    code = ord(ch)
    return code >= 0x0370


def estimate_tokens(text: str) -> int:
    """Estimate the tokens of `text`: chars/4 for Latin text, denser for other scripts."""
    if not text:
        return 0
    if text.isascii():
        return (len(text) + 3) // 4
    dense = 0
    cjk = 0
    for ch in text:
        if _is_dense_script(ch):
            code = ord(ch)
            if 0x2E80 <= code <= 0xD7FF or 0xF900 <= code <= 0xFAFF or code >= 0x20000:
                cjk += 1
            else:
                dense += 1
    latin = len(text) - dense - cjk
    return (latin + 3) // 4 + (dense + 1) // 2 + cjk


def estimate_item_tokens(text: str) -> int:
    """Token cost of one memory item as rendered in a pack."""
    return max(20, estimate_tokens(text) + 8)
