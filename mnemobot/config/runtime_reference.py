"""The runtime config reference (every key, its default, allowed values and meaning),
generated from the models so it cannot drift from them: `mnemobot config docs` prints it
and docs/configuration.md carries a copy that a test keeps in sync.

Keys come grouped, the groups a person changes most first (the model, then the assistant,
memory, Telegram...); a section no group names (a plugin's, a new channel's) comes last
under its own name, so every key is always listed.
"""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
import typing
from itertools import pairwise

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from mnemobot.config.runtime import RuntimeConfig

_BOUNDS = (
    (annotated_types.Ge, "ge", "≥"),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "≤"),
    (annotated_types.Lt, "lt", "<"),
)


def _bounds(metadata: list[object]) -> list[str]:
    bounds = []
    for constraint in metadata:
        for kind, attr, sign in _BOUNDS:
            if isinstance(constraint, kind):
                bounds.append(f"{sign} {getattr(constraint, attr):,}".replace(",", " "))
    return bounds


def _allowed(field: FieldInfo) -> str:
    literal_args = typing.get_args(field.annotation)
    if typing.get_origin(field.annotation) is typing.Literal:
        return " or ".join(json.dumps(arg) for arg in literal_args)
    words = [
        " or ".join(json.dumps(value) for value in typing.get_args(arg))
        for arg in literal_args
        if typing.get_origin(arg) is typing.Literal
    ]
    kinds = {typing.get_origin(arg) for arg in literal_args if arg is not type(None)}
    if words and kinds <= {typing.Literal, typing.Annotated}:
        # A word or a bounded number ("auto" or a count): each part as it allows.
        numbers = [
            ", ".join(_bounds(info.metadata))
            for arg in literal_args
            if typing.get_origin(arg) is typing.Annotated
            for info in arg.__metadata__
            if isinstance(info, FieldInfo)
        ]
        null = ["null"] if type(None) in literal_args else []
        return " or ".join([*words, *(f"a number {n}" for n in numbers if n), *null])
    bounds = _bounds(field.metadata)
    nullable = type(None) in literal_args
    text = ", ".join(bounds)
    return f"{text}, or null" if nullable and text else ("null allowed" if nullable else text)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def field_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """Field name -> the docstring under it in the class body (a base's, if not redefined).

    What pydantic's `use_attribute_docstrings` would put in `description`, read only when
    asked (see `ConfigSection`). Classes without source (`create_model`) add none.
    """
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not issubclass(cls, BaseModel) or cls is BaseModel:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _named_entries(annotation: object) -> type[BaseModel] | None:
    """The model of each value of a `dict[str, Model]` field, else None."""
    if typing.get_origin(annotation) is not dict:
        return None
    value = typing.get_args(annotation)[1]
    return value if isinstance(value, type) and issubclass(value, BaseModel) else None


def _rows(model: type[BaseModel], defaults: dict[str, object], prefix: str) -> list[str]:
    rows = []
    docs = field_docstrings(model)
    for name, field in model.model_fields.items():
        key = field.alias or name
        default = defaults.get(key)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            section = default if isinstance(default, dict) else {}
            rows += _rows(annotation, section, f"{prefix}{key}.")
            continue
        rows.append(
            f"| `{prefix}{key}` | `{json.dumps(default)}` | {_cell(_allowed(field))} "
            f"| {_cell(field.description or docs.get(name, ''))} |"
        )
        entry = _named_entries(annotation)
        if entry is not None:
            # Each entry of an object keyed by name (a server...) has these keys.
            # The defaults of an entry, without its checks (one may need a key set).
            defaults_of_entry = entry.model_construct().model_dump(by_alias=True, mode="json")
            rows += _rows(entry, defaults_of_entry, f"{prefix}{key}.<name>.")
    return rows


# (key prefix, heading), most changed first; a key goes to the longest prefix it has.
GROUPS: tuple[tuple[str, str], ...] = (
    ("llm.", "The model"),
    ("assistant.", "The assistant"),
    ("memory.", "Memory"),
    ("telegram.", "Telegram"),
    ("compaction.", "Compaction of long conversations"),
    ("media.", "Voice notes, photos and documents"),
    ("memory.embeddings.", "Recall by meaning (embeddings)"),
    ("mcp.", "MCP servers (more in docs/mcp.md)"),
    ("permissions.", "Who may do what in a group"),
    ("schedule.", "Reminders and scheduled tasks"),
    ("toolLoop.", "Tools"),
    ("files.", "Files"),
)
_HEADER = ["| key | default | allowed | meaning |", "|---|---|---|---|"]


def _group_of(key: str) -> str:
    matching = [(len(prefix), heading) for prefix, heading in GROUPS if key.startswith(prefix)]
    return max(matching)[1] if matching else f"`{key.split('.', 1)[0]}`"


def reference_markdown(model: type[BaseModel] = RuntimeConfig) -> str:
    """Markdown tables of every leaf key of `model` (dotted camelCase) with its default,
    one per group (`GROUPS`), most changed first."""
    defaults = model().model_dump(by_alias=True, mode="json")
    grouped: dict[str, list[str]] = {heading: [] for _, heading in GROUPS}
    for row in _rows(model, defaults, ""):
        key = row.split("`", 2)[1]
        grouped.setdefault(_group_of(key), []).append(row)
    parts = [
        "\n".join([f"### {heading}", "", *_HEADER, *rows])
        for heading, rows in grouped.items()
        if rows
    ]
    return "\n\n".join(parts) + "\n"


def count_keys(model: type[BaseModel] = RuntimeConfig) -> int:
    """How many keys a person can write in the file: every leaf of `reference_markdown`
    (the keys of a named entry, an MCP server's, once), the entries' container not."""
    defaults = model().model_dump(by_alias=True, mode="json")
    rows = [row.split("`", 2)[1] for row in _rows(model, defaults, "")]
    containers = {key.rsplit(".<name>.", 1)[0] for key in rows if ".<name>." in key}
    return len([key for key in rows if key not in containers])
