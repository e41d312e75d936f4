"""Token estimates without a tokenizer download.

tiktoken downloads its encodings at first use and fails offline, so tokens are estimated
from characters instead.
"""

from __future__ import annotations

# Characters of Latin text per estimated token: the estimate's own ratio, and so the most
# characters a token budget can hold (every other script takes fewer).
CHARS_PER_TOKEN = 4


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
        return -(-len(text) // CHARS_PER_TOKEN)
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
    return -(-latin // CHARS_PER_TOKEN) + (dense + 1) // 2 + cjk


def estimate_item_tokens(text: str) -> int:
    """Token cost of one memory item as rendered in a pack."""
    return max(20, estimate_tokens(text) + 8)


def max_chars(budget_tokens: int) -> int:
    """The most characters any text within `budget_tokens` can have (all Latin): how much
    of a file is worth reading for that budget."""
    return max(0, budget_tokens) * CHARS_PER_TOKEN


def cut_to_tokens(text: str, budget_tokens: int) -> str:
    """The longest start of `text` within `budget_tokens`, cut at a line or word end when
    one is near (in the last 30%), else anywhere."""
    if estimate_tokens(text) <= budget_tokens:
        return text
    low, high = 0, min(len(text), max_chars(budget_tokens))
    while low < high:
        middle = (low + high + 1) // 2
        if estimate_tokens(text[:middle]) <= budget_tokens:
            low = middle
        else:
            high = middle - 1
    prefix = text[:low]
    for boundary in ("\n", " "):
        position = prefix.rfind(boundary)
        if position >= len(prefix) * 0.7:
            return prefix[:position].rstrip()
    return prefix
