"""The labelled equation set's file: equations by category, each written the way some field writes it (KDD'20 §6.1).

`read_labelled_set` reads and checks it; its evaluation (KaTeX, the bundle's encoder, the figures) is
`eqsearch.evaluation.labelled`.

File format, version 1 (the shipped set is ``evaluation/data/labelled-equations.tsv``, `DEFAULT_LABELLED_SET`):

- UTF-8 text; the first line is ``# eqsearch labelled equation set, format version 1``;
- lines starting with ``#`` and blank lines are comments; the first other line is the header
  ``category<TAB>latex<TAB>note``;
- then one equation per line: ``category<TAB>latex[<TAB>note]``. ``category`` is a slug (lower-case letters,
  digits and ``-``); ``latex`` is the body of a display equation without delimiters (converted as an ``equation``
  environment, no document macros); ``note`` (optional) says which field or convention the variant follows;
- equation ids are ``<category>-<n>`` with n counting that category's lines from 1 in file order (they name the
  topics and documents of the TREC files): append new variants at the end of their category to keep ids stable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from eqsearch.engine.errors import EqsearchError
from eqsearch.evaluation.tsv import read_versioned_tsv

__all__ = [
    "DEFAULT_LABELLED_SET",
    "FORMAT_LINE",
    "HEADER",
    "LabelledEquation",
    "LabelledSetError",
    "read_labelled_set",
]

FORMAT_LINE = "# eqsearch labelled equation set, format version 1"
HEADER = ("category", "latex", "note")
DEFAULT_LABELLED_SET = Path(__file__).resolve().parent / "data" / "labelled-equations.tsv"

_CATEGORY = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class LabelledSetError(EqsearchError):
    """A labelled equation file that cannot be read or does not follow the format."""


@dataclass(frozen=True)
class LabelledEquation:
    """One line of a labelled set.

    Attributes:
        id: ``<category>-<n>``.
        category: the label.
        latex: the display-math body.
        note: the field or convention (may be empty).
        line: the line number in the file.
    """

    id: str
    category: str
    latex: str
    note: str
    line: int


def read_labelled_set(path: str | Path = DEFAULT_LABELLED_SET) -> list[LabelledEquation]:
    """Read a labelled equation file (format in the module docstring).

    Raises:
        LabelledSetError: unreadable file, another format or version, a bad header, a line without 2-3 fields, an
            empty LaTeX field, a category that is not a slug, a repeated equation, or fewer than two categories
            (path and line in the message).
    """
    path = Path(path)
    rows = read_versioned_tsv(
        path, format_line=FORMAT_LINE, header=HEADER, what="the labelled set", error=LabelledSetError
    )
    equations: list[LabelledEquation] = []
    counts: dict[str, int] = {}
    first_line: dict[tuple[str, str], int] = {}
    for number, fields in rows:
        category, latex = fields[0], fields[1]
        note = fields[2] if len(fields) == 3 else ""
        if not _CATEGORY.fullmatch(category):
            raise LabelledSetError(
                f"{path}:{number}: the category {category!r} is not a slug (lower-case letters, digits, '-')"
            )
        if not latex:
            raise LabelledSetError(f"{path}:{number}: the LaTeX field is empty")
        if (category, latex) in first_line:
            raise LabelledSetError(
                f"{path}:{number}: repeats line {first_line[category, latex]} ({category}: {latex[:60]!r})"
            )
        first_line[category, latex] = number
        counts[category] = counts.get(category, 0) + 1
        equations.append(LabelledEquation(f"{category}-{counts[category]}", category, latex, note, number))
    if len(counts) < 2:
        raise LabelledSetError(
            f"{path}: {len(equations)} equations in {len(counts)} categories; the figures need at least two categories"
        )
    return equations
