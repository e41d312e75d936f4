"""The value thread (`memory.pack.value_thread`) where it meets the pack's
other rules: what must never become a person's current value, and what must be found in
any language. Each test failed before its fix."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mnemobot.memory.pack.build import MemoryPack
from mnemobot.memory.pack.value_thread import value_thread
from mnemobot.memory.store.bm25 import BM25Index
from mnemobot.memory.store.item_store import indexed_text
from mnemobot.memory.store.items import DocumentText, ItemType, MemoryItem
from mnemobot.memory.text.terms import terms
from mnemobot.memory.write.documents import document_items
from mnemobot.memory.write.fact_items import new_fact
from tests.pack_turns import DAY, START, pack_over
from tests.test_pack_value_thread import FIRST, QUESTION, UPDATE, advice, spoken, turn


def pack_of(items: list[MemoryItem], question: str, soft: int = 400) -> MemoryPack:
    return pack_over(items, question, soft)


def test_the_models_note_is_not_a_group_members_later_value() -> None:
    # A compaction flush's note names no speaker ("noted", never "said"): in a group
    # it is not Alice's word on her budget, yet the thread takes it for hers.
    note = new_fact(
        "Bob's photography budget has been adjusted to $350 monthly starting March 2024.",
        item_type=ItemType.PROJECT_FACT,
        scope="s",
        at=START + 2 * DAY,
        source="compaction",
        tags=["flush"],
        id_factory=lambda: "note",
    )
    items = [spoken(1, "Alice", FIRST, 1), *advice(2), note]
    pack = pack_of(items, QUESTION)
    assert pack.items[0].item.id != "note"
    assert "(earlier: updated" not in pack.rendered


@pytest.mark.parametrize(
    "unusable",
    [{"ttl_days": 1.0}, {"scope": "another"}],
    ids=["expired", "another-scope"],
)
def test_an_update_the_pack_leaves_out_marks_nothing_earlier(unusable: dict) -> None:
    # The update never reaches the pack (expired, another scope's), so the $300 is the
    # only value shown: it must not say it was updated.
    update = replace(turn(500, UPDATE, 2), **unusable)
    pack = pack_of([turn(1, FIRST, 1), *advice(2), update], QUESTION)
    assert "t500" not in [p.item.id for p in pack.items]
    assert "(earlier: updated" not in pack.rendered


def test_a_spanish_update_is_found_as_an_english_one_is() -> None:
    # The anchor's weight counts its words in the other reading too ("presupuesto" as
    # English), which the update, read as Spanish alone, can never say: the anchor
    # itself holds 0.55 of its own words, and an update saying most of them is missed.
    first = "Mi presupuesto mensual para la fotografía es de 300 euros desde marzo."
    update = "Ahora el presupuesto mensual es de 350 euros."
    short = ["Presupuesto?", "Fotografía y marzo", "euro", "Lentes baratos"]
    items = [
        turn(1, first, 1),
        turn(2, update, 2),
        *(turn(10 + n, text, 1.5) for n, text in enumerate(short)),
    ]
    index = BM25Index()
    for item in items:
        index.add(item.id, terms(indexed_text(item)))
    question = "¿Cuál es mi presupuesto mensual para la fotografía?"
    weights = {term: index.idf(term) for term in terms(question)}
    by_id = {item.id: item for item in items}
    found = value_thread([by_id["t001"]], by_id, index, weights).items
    assert [item.id for item in found] == ["t002"]


def test_a_document_the_person_sent_is_not_their_later_value() -> None:
    # A file Alice sent is tagged with her name, but its text is not hers ("a document
    # is data"): a price list saying "adjusted to $35 monthly" is no update of her budget.
    sheet = document_items(
        DocumentText(
            "pricing.txt",
            "Photography gear and software budget plans have been adjusted to $35 monthly "
            "starting March 2024 for every beginner.",
        ),
        scope="s",
        at=START + 2 * DAY,
        id_factory=lambda: "sheet",
        speaker="Alice",
    )
    items = [spoken(1, "Alice", FIRST, 1), *advice(2), *sheet]
    pack = pack_of(items, QUESTION)
    assert pack.items[0].item.id != "sheet"
    assert "(earlier: updated" not in pack.rendered
