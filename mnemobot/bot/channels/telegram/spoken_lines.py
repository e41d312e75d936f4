"""What the bot itself tells the sender about how a voice note (audio file, video note)
was heard: the line for a note that could not be decoded, the line for a note heard as no
words, and the note after the answer for one whose transcript may not be what was said.
Pure: the speech model's facts come in as arguments.

A local English-only model (`tiny.en`, the bundled one) hears any other language as
nothing, or as English words nobody said; the sender is told so, since recording the
note again would only fail again.
"""

from __future__ import annotations

from mnemobot.bot.i18n import N_, Words

# A doubtful transcript is only judged on notes at least this long.
DOUBTFUL_MIN_SECONDS = 10.0
# A note transcribed as fewer words a minute than this (people say about 150) is
# doubtful: the reply says what was heard. Not measured; well below slow speech, above a
# model that heard one word of a minute.
DOUBTFUL_WORDS_PER_MINUTE = 20.0
# An English-only model sure of what it heard at least this much (mean log probability
# per token) heard English: the sender whose app is in another language is not told it
# may have misheard. Measured with tiny.en on espeak-ng notes at 160 and 190 words a
# minute: English (en, en-us, en-gb-scotland; 23 notes) -0.28 to -0.75, other languages
# heard as English words nobody said (de, ru, es, it, pt, nl, fr; 20 notes) -0.97 to
# -1.51. Whisper itself takes a decoding below -1.0 as failed.
SURE_OF_ENGLISH_LOG_PROB = -0.85


def speaks_english(language_code: str | None) -> bool:
    """Whether the sender's app is in English ("en", "en-GB"), or says no language: a
    sender whose language is unknown is not told about other languages."""
    if not language_code:
        return True
    return language_code.strip().lower().replace("_", "-").split("-")[0] in ("", "en")


def undecodable_line(words: Words, kind: str) -> str:
    """The one line for a note no decoder reads (a damaged upload): plain words, never the
    decoder's error, which is the operator's (the log's). `kind`: its name (marked with
    N_)."""
    return words.gettext(
        N_(
            "I could not decode your {kind}; the recording may be damaged. Please send it "
            "again or type it."
        ),
        kind=words.gettext(kind),
    )


def no_words_line(words: Words, kind: str, length: str, shown: str, *, english_only: bool) -> str:
    """The one line for a note heard as no words. `kind`: its name (marked with N_);
    `length`: " 0:42" or ""; `shown`: where the recording is kept."""
    said = f" ({length.strip()})" if length else ""
    if english_only:
        message = N_(
            "I could not make out any words in your {kind}{length}: the speech model here "
            "understands only English, so please type it instead. It is kept as {shown}."
        )
    else:
        message = N_(
            "I could not make out any words in your {kind}{length}. It is kept as "
            "{shown}; send it again or type it."
        )
    return words.gettext(message, kind=words.gettext(kind), length=said, shown=shown)


def heard_note(
    words: Words,
    kind: str,
    length: str,
    seconds: float | None,
    text: str,
    *,
    english_only: bool,
    sender_language: str | None,
    log_prob: float | None = None,
) -> str | None:
    """A note after the answer saying what was heard, or None: when the model hears English
    only, the sender's app is in another language (`sender_language`: Telegram's
    `language_code`) and the model was not sure of the words (`log_prob`: its mean log
    probability per token; None: not known), or when the transcript is doubtfully short
    for the note's `seconds`. `text`: the transcript, at least one word."""
    unsure = log_prob is None or log_prob < SURE_OF_ENGLISH_LOG_PROB
    if english_only and not speaks_english(sender_language) and unsure:
        return words.gettext(
            N_(
                "(The speech model here understands only English: from your{length} {kind} "
                'I heard "{text}". If you spoke another language, please type it instead.)'
            ),
            kind=words.gettext(kind),
            length=length,
            text=text,
        )
    if (
        seconds is not None
        and seconds >= DOUBTFUL_MIN_SECONDS
        and len(text.split()) / (seconds / 60) < DOUBTFUL_WORDS_PER_MINUTE
    ):
        return words.gettext(
            N_(
                '(From your{length} {kind} I only heard: "{text}". If that is not all '
                "you said, please send it again or type it.)"
            ),
            kind=words.gettext(kind),
            length=length,
            text=text,
        )
    return None
