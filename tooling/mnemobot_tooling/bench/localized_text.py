"""Synthetic chat text in other scripts for `mnemobot bench memory --lang`.

The memory bench draws English turns from word lists; `localize` turns each one into the
same turn in Russian-like or Chinese-like text, deterministically, so that a Cyrillic or
Han scope has the shape that costs time: the script, word lengths, a Zipf vocabulary, and
(for Russian) inflected forms of each word that the stemmer must bring together. Function
words become real ones ("я", "и", "в"...; "我", "的", "在"...), so stopwords are dropped as
in a real chat; other words are transliterated (Russian, with a case ending picked by the
word's position) or mapped to two or three common Han characters (Chinese, no spaces).
Only what the bench measures (speed, memory) is realistic; the sentences are not.
"""

from __future__ import annotations

import re
import zlib

LANGUAGES = ("en", "ru", "zh")

_RUSSIAN_FUNCTION_WORDS = {
    "i": "я", "my": "мой", "me": "мне", "we": "мы", "you": "ты", "your": "твой",
    "he": "он", "she": "она", "it": "это", "they": "они", "and": "и", "or": "или",
    "with": "с", "to": "в", "in": "в", "at": "на", "on": "на", "for": "для", "of": "из",
    "about": "про", "over": "над", "before": "до", "after": "после", "the": "", "a": "",
    "is": "", "are": "", "was": "был", "were": "были", "did": "", "do": "", "does": "",
    "what": "что", "when": "когда", "who": "кто", "how": "как", "that": "что",
    "this": "этот", "these": "эти", "some": "немного", "last": "прошлый", "so": "так",
    "much": "много", "not": "не", "no": "нет", "will": "буду", "then": "потом",
    "again": "снова", "keeps": "всё", "must": "надо", "always": "всегда", "said": "сказал",
}  # fmt: skip
_CHINESE_FUNCTION_WORDS = {
    "i": "我", "my": "我的", "me": "我", "we": "我们", "you": "你", "your": "你的",
    "he": "他", "she": "她", "it": "它", "they": "他们", "and": "和", "or": "或",
    "with": "跟", "to": "去", "in": "在", "at": "在", "on": "在", "for": "为", "of": "的",
    "about": "关于", "the": "", "a": "一个", "is": "是", "are": "是", "was": "是",
    "were": "是", "did": "", "do": "", "does": "", "what": "什么", "when": "什么时候",
    "who": "谁", "how": "怎么", "that": "那", "this": "这", "some": "一些", "not": "不",
    "no": "没有", "will": "会", "last": "上", "so": "所以", "much": "很多",
}  # fmt: skip
_CYRILLIC = dict(
    zip(
        "abcdefghijklmnopqrstuvwxyz",
        "абцдефгхийклмнопкрстувввиз",
        strict=True,
    )
)
_CASE_ENDINGS = ("", "а", "ы", "у", "е", "ой", "ами", "ов", "ом", "ах")
# Common characters, so a word's characters recur across words as real Chinese ones do.
_HAN = (
    "天地人日月水火山木金土家车路书茶饭菜花草鸟鱼狗猫马牛羊米面肉蛋果红黄蓝绿白黑"
    "大小长短新旧高低快慢早晚春夏秋冬东西南北中外上下前后左右手足头心口耳目学生工作"
    "电脑手机音乐电影朋友公司城市医院学校商店公园海河湖桥船飞机火车汽雨雪风云星光"
)
_WORD = re.compile(r"[A-Za-z']+|[0-9]+|[^\sA-Za-z0-9']")
_CHINESE_PUNCTUATION = {",": "，", ".": "。", "?": "？", "!": "！", ":": "：", ";": "；"}


def _russian(word: str, position: int) -> str:
    lower = word.lower()
    if lower in _RUSSIAN_FUNCTION_WORDS:
        return _RUSSIAN_FUNCTION_WORDS[lower]
    stem = "".join(_CYRILLIC.get(char, "") for char in lower)
    ending = _CASE_ENDINGS[(zlib.crc32(lower.encode()) + position) % len(_CASE_ENDINGS)]
    out = stem + ending
    return out.capitalize() if word[:1].isupper() else out


def _chinese(word: str) -> str:
    lower = word.lower()
    if lower in _CHINESE_FUNCTION_WORDS:
        return _CHINESE_FUNCTION_WORDS[lower]
    code = zlib.crc32(lower.encode())
    size = 2 + code % 2
    return "".join(_HAN[(code >> (8 * i)) % len(_HAN)] for i in range(size))


def localize(text: str, lang: str) -> str:
    """`text` (English, from the bench's word lists) as synthetic `lang` text."""
    if lang == "en":
        return text
    tokens = _WORD.findall(text)
    if lang == "ru":
        words = [
            _russian(token, position) if token[:1].isalpha() else token
            for position, token in enumerate(tokens)
        ]
        out = " ".join(word for word in words if word)
        return re.sub(r" (?=[.,!?:;])", "", out)
    if lang == "zh":
        return "".join(
            _chinese(token)
            if token[:1].isalpha()
            else _CHINESE_PUNCTUATION.get(token, token if token.isdigit() else "")
            for token in tokens
        )
    raise ValueError(f"unknown bench language {lang!r}: use one of {', '.join(LANGUAGES)}")
