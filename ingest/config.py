"""Limits and switches of an extraction run, built once at the edge (CLI) and passed down."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExtractConfig:
    """How documents are read and extracted.

    Args:
        max_archive_bytes: total uncompressed bytes one document's archive may unpack to (bomb guard).
        max_archive_members: files one document's archive may contain.
        max_compression_ratio: uncompressed/compressed ratio above which an archive counts as a bomb
            (checked once more than 1 MiB has been unpacked).
        max_file_bytes: largest single source file that is read as text.
        max_document_chars: size of the document after inputs are expanded.
        max_include_depth: nesting depth of ``\\input``/``\\include``/``\\subfile``/``\\import``.
        max_equation_chars: longer display bodies are recorded as failed (``equation_too_long``).
        context_chars: characters of plain text kept before and after each equation.
        time_budget_s: seconds one document may take (extraction and conversion); the worker is killed after.
        convert: whether the MathML conversion stage runs.
        inline: whether it converts the inline formulas that get indexed too (off: ``--no-inline``, displays only).
        katex_dir: the folder holding KaTeX for the conversion stage; None for the one installed with eqsearch.
    """

    max_archive_bytes: int = 256 * 1024 * 1024
    max_archive_members: int = 5000
    max_compression_ratio: float = 200.0
    max_file_bytes: int = 16 * 1024 * 1024
    max_document_chars: int = 32 * 1024 * 1024
    max_include_depth: int = 10
    max_equation_chars: int = 20_000
    context_chars: int = 400
    time_budget_s: float = 120.0
    convert: bool = True
    inline: bool = True
    katex_dir: str | None = None

    def __post_init__(self) -> None:
        for name in ("max_archive_bytes", "max_archive_members", "max_file_bytes", "max_document_chars"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.max_include_depth < 0 or self.context_chars < 0:
            raise ValueError("max_include_depth and context_chars must be >= 0")
        if self.time_budget_s <= 0:
            raise ValueError(f"time_budget_s must be positive, got {self.time_budget_s}")
