"""Errors eqsearch raises on purpose: each says what was received, where, and what to do next."""

from __future__ import annotations


class EqsearchError(Exception):
    """Base of every error eqsearch reports to a user.

    Args:
        message: one or two sentences: what happened, where.
        hint: what to do about it (shown on its own line by the CLI).
        exit_code: the process exit code the CLI uses for this error.
    """

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class MissingExtraError(EqsearchError):
    """An optional package is not installed; names the extra that brings it."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"this needs the optional package '{package}', which is not installed",
            hint=f"pip install 'eqsearch[{extra}]'",
        )
