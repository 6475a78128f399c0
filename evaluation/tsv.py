"""The tab-separated evaluation files (the labelled set, the keyword queries, formula collections and topics): one
reader of their text and of the versioned files' common frame, so each file type only checks its own fields."""

from __future__ import annotations

from pathlib import Path

from eqsearch.engine.errors import EqsearchError


def read_lines(path: Path, what: str, error: type[EqsearchError]) -> list[str]:
    """The lines of a UTF-8 text file, or ``error`` saying why it cannot be read (``what`` names the file)."""
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except OSError as failure:
        raise error(f"cannot read {what} {path}: {failure.strerror or failure}") from None
    except UnicodeDecodeError as failure:
        raise error(f"{what} {path} is not UTF-8 text (byte {failure.start})") from None


def read_versioned_tsv(
    path: Path,
    *,
    format_line: str,
    header: tuple[str, ...],
    what: str,
    error: type[EqsearchError],
) -> list[tuple[int, list[str]]]:
    """The data rows of a file framed as: ``format_line`` first; ``#`` comments and blank lines anywhere; a header
    row naming ``header`` (its last column optional); then rows of ``len(header) - 1`` or ``len(header)`` fields.

    Args:
        path: the file.
        format_line: its exact first line (names the format and version).
        header: the column names; the last one may be left out of the header row and of any data row.
        what: how messages name the file ("the labelled set").
        error: the exception type to raise.

    Returns:
        ``(line number, fields stripped of surrounding spaces)`` per data row, in file order.

    Raises:
        error: unreadable file, not UTF-8, another first line, a bad header, or a row with a wrong number of fields
            (path and line in the message).
    """
    lines = read_lines(path, what, error)
    if not lines or lines[0].strip() != format_line:
        found = lines[0][:80] if lines else "an empty file"
        raise error(
            f"{path}:1: expected {format_line!r}, found {found!r}",
            hint=f"tab-separated {', '.join(header)}; the format is in the docstring of the module that reads it",
        )
    rows: list[tuple[int, list[str]]] = []
    header_seen = False
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = [field.strip() for field in line.split("\t")]
        if not header_seen:
            if tuple(fields) not in (header, header[:-1]):
                raise error(f"{path}:{number}: expected the header {'<TAB>'.join(header)!r}, got {line!r}")
            header_seen = True
            continue
        if len(fields) not in (len(header) - 1, len(header)):
            expected = "<TAB>".join(header[:-1]) + f"[<TAB>{header[-1]}]"
            raise error(
                f"{path}:{number}: expected {expected}, got {len(fields)} tab-separated fields",
                hint="LaTeX must not contain tabs; use spaces",
            )
        rows.append((number, fields))
    return rows
