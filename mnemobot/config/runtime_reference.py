"""The runtime config reference (every key, its default, allowed values and meaning),
generated from the models so it cannot drift from them: `mnemobot config docs` prints it
and the README carries a copy that a test keeps in sync."""

from __future__ import annotations

import json
import typing

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


def _allowed(field: FieldInfo) -> str:
    literal_args = typing.get_args(field.annotation)
    if typing.get_origin(field.annotation) is typing.Literal:
        return " or ".join(json.dumps(arg) for arg in literal_args)
    bounds = []
    for constraint in field.metadata:
        for kind, attr, sign in _BOUNDS:
            if isinstance(constraint, kind):
                bounds.append(f"{sign} {getattr(constraint, attr):,}".replace(",", " "))
    nullable = type(None) in literal_args
    text = ", ".join(bounds)
    return f"{text}, or null" if nullable and text else ("null allowed" if nullable else text)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _rows(model: type[BaseModel], defaults: dict[str, object], prefix: str) -> list[str]:
    rows = []
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
            f"| {_cell(field.description or '')} |"
        )
    return rows


def reference_markdown(model: type[BaseModel] = RuntimeConfig) -> str:
    """A Markdown table of every leaf key of `model` (dotted camelCase) with its default."""
    defaults = model().model_dump(by_alias=True, mode="json")
    lines = ["| key | default | allowed | meaning |", "|---|---|---|---|"]
    return "\n".join(lines + _rows(model, defaults, "")) + "\n"
