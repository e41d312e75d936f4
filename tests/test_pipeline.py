"""Pipeline order and failure isolation."""

from __future__ import annotations

from mnemobot.systems.core.context import TurnContext
from mnemobot.systems.core.pipeline import Pipeline
from tests.conftest import turn_context


class Recording:
    def __init__(
        self, name: str, order: int, log: list[str], *, fail: bool = False, on: bool = True
    ) -> None:
        self.name, self.order, self.log, self.fail, self.on = name, order, log, fail, on

    def enabled(self, ctx: TurnContext) -> bool:
        return self.on

    async def process(self, ctx: TurnContext) -> None:
        self.log.append(self.name)
        if self.fail:
            raise RuntimeError(f"{self.name} broke")


async def test_systems_run_sorted_by_order_then_name() -> None:
    log: list[str] = []
    pipeline = Pipeline(
        [
            Recording("MemoryPersist", 50, log),
            Recording("b-plugin", 20, log),
            Recording("ContextBuilding", 20, log),
            Recording("AutoCompaction", 18, log),
            Recording("ToolLoop", 30, log),
        ]
    )
    await pipeline.run(turn_context())
    assert log == ["AutoCompaction", "ContextBuilding", "b-plugin", "ToolLoop", "MemoryPersist"]


async def test_a_failing_system_is_recorded_and_the_rest_still_run() -> None:
    log: list[str] = []
    pipeline = Pipeline([Recording("first", 10, log, fail=True), Recording("second", 20, log)])
    ctx = await pipeline.run(turn_context())
    assert log == ["first", "second"]
    assert [f.system for f in ctx.failures] == ["first"]
    assert "first broke" in ctx.failures[0].error


async def test_disabled_systems_are_skipped() -> None:
    log: list[str] = []
    pipeline = Pipeline([Recording("off", 10, log, on=False), Recording("on", 20, log)])
    await pipeline.run(turn_context())
    assert log == ["on"]
