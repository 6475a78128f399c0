"""A document's user macros, as extraction finds them and conversion consumes them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MacroDef:
    """One user macro from a document's preamble or body.

    Args:
        name: the control sequence with its backslash, e.g. ``"\\R"``.
        body: the replacement text with ``#1``..``#9`` placeholders.
        nargs: number of arguments, optional one included (0-9).
        default: the default of an optional first argument (``\\newcommand{\\x}[2][0]{...}``), else None.
        source: which command defined it: "newcommand", "renewcommand", "providecommand", "def", "let",
            "DeclareMathOperator", "DeclareMathOperator*".
    """

    name: str
    body: str
    nargs: int = 0
    default: str | None = None
    source: str = "newcommand"

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "body": self.body,
            "nargs": self.nargs,
            "default": self.default,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> MacroDef:
        return cls(
            name=str(data["name"]),
            body=str(data["body"]),
            nargs=int(data.get("nargs", 0)),  # type: ignore[arg-type]
            default=None if data.get("default") is None else str(data["default"]),
            source=str(data.get("source", "newcommand")),
        )
