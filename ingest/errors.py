"""Errors of the ingest package: each is a recorded, specific reason for one document, never a crash of a run."""

from __future__ import annotations

from eqsearch.engine.errors import EqsearchError


class IngestError(EqsearchError):
    """A document (or one of its parts) could not be read or extracted.

    Args:
        message: what happened and where (file, member, offset).
        reason: a short stable code for statistics, e.g. ``"corrupt_archive"`` (listed in ingest/FORMAT.md).
        hint: what to do about it.
    """

    reason = "ingest_error"

    def __init__(self, message: str, *, reason: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        if reason is not None:
            self.reason = reason


class CorruptArchiveError(IngestError):
    """The archive is truncated, not an archive at all, or its compression stream is broken."""

    reason = "corrupt_archive"


class ArchiveLimitError(IngestError):
    """The archive exceeds a limit: total uncompressed bytes, member count or compression ratio (a bomb)."""

    reason = "archive_too_large"


class NoMainFileError(IngestError):
    """No LaTeX main file was found among a source's files."""

    reason = "no_main_file"


class DocumentTooLargeError(IngestError):
    """The document, with its inputs expanded, is larger than the configured limit."""

    reason = "document_too_large"


class TimeBudgetError(IngestError):
    """A document took longer than its time budget."""

    reason = "timeout"


class SourceNotFoundError(IngestError):
    """A path given on the command line does not exist or is of a kind that cannot be ingested."""

    reason = "source_not_found"
