"""What reading a file in a reader process costs over reading it in the bot's own thread
(`mnemobot.bot.media.bounded`): `python -m mnemobot_tooling.bench.reader_overhead`.

Times a reader's start (pypdf and PyAV imported), then the median of `--rounds` reads of a
2 KB text file and of a 4-page PDF, both through a warm reader and by calling the reader's
own function in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from mnemobot.bot.media.bounded import Budget, ReaderPool
from mnemobot.bot.media.document_text import document_job
from mnemobot_tooling.sample_pdf import pdf_with_pages

BUDGET = Budget(seconds=60, memory_bytes=1_000_000_000)


async def _median_ms(rounds: int, read: Callable[[], Awaitable[object]]) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await read()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def measure(rounds: int) -> dict[str, float]:
    pool = ReaderPool("document", lambda: 1, ("pypdf", "av"))
    started = time.perf_counter()
    pool.prewarm()
    await pool.run("document", _params("a.txt"), b"warm", BUDGET)
    figures = {"reader start, s": time.perf_counter() - started}
    files = {
        "text, 2 KB": ("a.txt", b"hello world\n" * 170),
        "PDF, 4 pages": ("a.pdf", pdf_with_pages(["Residential lease\nline two"] * 4)),
    }
    try:
        for label, (name, data) in files.items():

            async def in_reader(name: str = name, data: bytes = data) -> object:
                return await pool.run("document", _params(name), data, BUDGET)

            async def in_process(name: str = name, data: bytes = data) -> object:
                return document_job(_params(name), data)

            figures[f"{label}: reader, ms"] = await _median_ms(rounds, in_reader)
            figures[f"{label}: in process, ms"] = await _median_ms(rounds, in_process)
    finally:
        await pool.close()
    return figures


def _params(name: str) -> dict[str, object]:
    return {"name": name, "mime_type": None, "max_pages": 300, "max_chars": 1_000_000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    for label, value in asyncio.run(measure(args.rounds)).items():
        print(f"{label:32} {value:8.2f}")


if __name__ == "__main__":
    main()
