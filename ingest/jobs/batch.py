"""One batch of an ingest job's writes, paper by paper: what goes in, and what became of it.

Before the write, `paper_actions` turns one extracted paper into its bulk actions (its formulas encoded by
`encode_formulas`, one by one when the batch call fails; its paper and equation documents) with the counts and
errors by reason of what it brought. `write_batch` writes them, each paper's own document first. After the write,
`count_written` counts what the bulk and the pruner did with
them (indexed, with vectors, stale deleted or kept, failed), and `stop_on_passing_refusals` stops the job before the
batch's checkpoints when Elasticsearch refused documents for a reason that passes. `job` runs the batches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from eqsearch.engine.index import (
    NODE_VECTORS_FIELD,
    VECTOR_FIELD,
    BulkFailure,
    indexed_inline,
    paper_documents,
    with_context_vectors,
    with_node_vectors,
)
from eqsearch.engine.index.vectors import stored_vector
from eqsearch.engine.model import Encoder, NodeEncoder, TextEncoder
from eqsearch.ingest.displaycheck import NO_DISPLAYS_FOUND
from eqsearch.ingest.jobs.errors import IngestJobError
from eqsearch.ingest.jobs.pruner import PaperWrites, PruneResult
from eqsearch.ingest.jobs.store import now
from eqsearch.ingest.jobs.writer import MigrationAwareWriter
from eqsearch.ingest.records import STATUS_APPROXIMATE, STATUS_DIAGRAM, STATUS_OK, Equation, InlineFormula, Paper


def paper_actions(
    paper: Paper,
    *,
    encoder: Encoder,
    text_encoder: TextEncoder | None,
    inline: bool,
    node_encoder: NodeEncoder | None = None,
    job_id: str,
    papers_index: str,
    equations_index: str,
    warnings: list[str],
) -> tuple[list[dict[str, Any]], Counter[str], Counter[str]]:
    """Bulk actions for one paper (its paper document first), with its counts and errors by reason.

    Args:
        paper: the extracted paper.
        encoder: MathML -> vectors.
        text_encoder: embeds the equations' contexts (None: no context vectors).
        node_encoder: the formulas' node vectors for the MaxSim rerank (None: none stored).
        inline: whether the inline formulas get documents.
        job_id: the job that writes them (recorded in each document).
        papers_index: where the paper document goes (the papers alias).
        equations_index: where the equation documents go (the equations alias).
        warnings: a paper that lost its displays appends its warning here, for the job's summary.
    """
    counts: Counter[str] = Counter(papers=1)
    errors: Counter[str] = Counter()
    for warning in paper.warnings:
        if warning.reason == NO_DISPLAYS_FOUND:  # a paper that lost its displays: never silent
            counts["papers_displays_missing"] += 1
            counts["displays_missing"] += warning.count or 0
            errors[f"warning:{warning.reason}"] += 1
            warnings.append(f"{paper.id}: {warning.message}")
    if paper.status == "failed" or paper.error is not None:
        counts["papers_failed"] += 1
        errors[f"extract:{paper.error.reason if paper.error else 'failed'}"] += 1
        if not paper.sections:
            return [], counts, errors
    equations = paper.equations()
    vectors = encode_formulas(encoder, equations, errors)
    formulas = [formula for _, formula in indexed_inline(paper)] if inline else []
    inline_vectors = encode_formulas(encoder, formulas, errors)
    paper_document, equation_documents = paper_documents(
        paper, job_id=job_id, indexed_at=now(), vectors=vectors, inline_vectors=inline_vectors, inline=inline
    )
    if text_encoder is not None:  # one batch per paper: the encoder's cost is per call more than per text
        equation_documents = with_context_vectors(equation_documents, text_encoder)
    if node_encoder is not None:  # the same formulas the encoder took, one batch per paper
        equation_documents = with_node_vectors(equation_documents, node_encoder)
    if inline:
        counts["inline"] += len(paper.inline_formulas())
        counts["inline_skipped"] += len(paper.inline_formulas()) - len(formulas)
    for formula in formulas:
        if not (formula.status in (STATUS_OK, STATUS_APPROXIMATE) and formula.mathml is not None):
            counts["inline_unconverted"] += 1
            errors[f"convert-inline:{formula.reason or formula.status}"] += 1
    for eq in equations:
        counts["equations"] += 1
        if eq.status == STATUS_DIAGRAM:  # kept with its LaTeX, found by its text: not a failure
            counts["equations_diagrams"] += 1
        elif eq.status in (STATUS_OK, STATUS_APPROXIMATE) and eq.mathml is not None:
            counts["equations_ok" if eq.status == STATUS_OK else "equations_approximate"] += 1
        else:
            counts["equations_unconverted"] += 1
            errors[f"convert:{eq.reason or eq.status}"] += 1
    actions = [{"_index": papers_index, "_id": paper.id, "_source": paper_document}]
    actions += [{"_index": equations_index, "_id": doc["eq_id"], "_source": doc} for doc in equation_documents]
    return actions, counts, errors


def encode_formulas(
    encoder: Encoder, equations: Sequence[Equation | InlineFormula], errors: Counter[str]
) -> dict[int, list[float] | list[int]]:
    """Equation (or inline formula) number -> vector of the converted ones the encoder takes, as the index stores
    it (`engine.index.vectors.stored_vector`: int8 where compared by cosine; errors counted by reason)."""
    todo = [eq for eq in equations if eq.status in (STATUS_OK, STATUS_APPROXIMATE) and eq.mathml]
    if not todo:
        return {}
    try:
        matrix = np.asarray(encoder.encode([eq.mathml for eq in todo]), dtype=np.float32)
        rows = dict(zip((eq.number for eq in todo), matrix, strict=True))
    except Exception:  # one bad equation must not cost its paper: encode one by one to find it
        rows = {}
        for eq in todo:
            try:
                rows[eq.number] = np.asarray(encoder.encode([eq.mathml])[0], dtype=np.float32)
            except Exception as error:
                errors[f"encode:{type(error).__name__}"] += 1
    out = {}
    for number, row in rows.items():
        if not np.all(np.isfinite(row)):
            errors["encode:non-finite"] += 1
            continue
        stored = stored_vector(row, encoder.similarity)
        if stored is None:
            errors["encode:zero-vector"] += 1
            continue
        out[number] = stored
    return out


def count_written(
    item: PaperWrites, failures: list[BulkFailure], pruned: PruneResult, position: int
) -> list[BulkFailure]:
    """Count in ``item``'s counts and errors what the write did with its documents (``failures``: those the bulk
    refused) and what the pruner did with its stale ones (``pruned``, at the paper's ``position`` in the batch).

    Returns:
        Every failure of the paper: its refused documents, then its refused deletes.
    """
    counts, errors = item.counts, item.errors
    failed_ids = {f.doc_id for f in failures}
    equation_actions = [a for a in item.actions[1:] if not a["_source"]["inline"]]
    for action in item.actions[1:]:
        if action["_id"] not in failed_ids:
            kind = "inline" if action["_source"]["inline"] else "equations"
            counts[f"{kind}_indexed"] += 1
            if VECTOR_FIELD in action["_source"]:
                counts[f"{kind}_with_vector"] += 1
            if NODE_VECTORS_FIELD in action["_source"]:
                counts[f"{kind}_with_node_vectors"] += 1
    counts["equations_unencoded"] += sum(
        1 for a in equation_actions if a["_source"]["mathml"] and VECTOR_FIELD not in a["_source"]
    )
    not_deleted = pruned.refused.get(position, [])
    if position in pruned.stale:
        counts["equations_stale_deleted"] += len(pruned.stale[position]) - len(not_deleted)
    if pruned.kept.get(position):
        counts["equations_stale_kept"] += pruned.kept[position]
    counts["documents_failed"] += len(failures) + len(not_deleted)
    for failure in failures:
        errors[f"index:{failure.error_type}"] += 1
    for failure in not_deleted:
        errors[f"prune:{failure.error_type}"] += 1
    return failures + not_deleted


#: Refusals that say nothing about the documents: the cluster will take them later (a full disk, a lost shard, a
#: full queue after the retries).
PASSING_STATUSES = frozenset({429, 503})
PASSING_TYPES = frozenset(
    {"cluster_block_exception", "es_rejected_execution_exception", "unavailable_shards_exception"}
)


def stop_on_passing_refusals(failures: Sequence[BulkFailure]) -> None:
    """Stop the job before its checkpoints when Elasticsearch refused documents for a reason that passes: the
    papers of the flush stay unchecked, so the job run again writes them (a checkpoint would have skipped them)."""
    passing = [f for f in failures if f.status in PASSING_STATUSES or f.error_type in PASSING_TYPES]
    if not passing:
        return
    first = passing[0]
    if "flood-stage" in first.reason or "read_only_allow_delete" in first.reason or "read-only" in first.reason:
        raise IngestJobError(
            f"Elasticsearch refused {len(passing)} documents: a node's disk is past its flood-stage watermark and "
            f"{first.index} is read-only ({first.reason[:200]})",
            hint="free disk space on the cluster's nodes (Elasticsearch lifts the block by itself), then run the job "
            "again: it resumes, and the refused papers are written then",
        )
    raise IngestJobError(
        f"Elasticsearch refused {len(passing)} documents for a reason that passes ({first.status} "
        f"{first.error_type}: {first.reason[:200]})",
        hint="run the job again once the cluster is healthy ('eqsearch es check'): it resumes with these papers",
    )


def write_batch(
    writer: MigrationAwareWriter, batch: Sequence[PaperWrites], *, chunk_size: int
) -> dict[int, list[BulkFailure]]:
    """The batch's documents written, the papers' own first: a paper's equations are sent only once its paper
    document is taken, so that a refused paper leaves its earlier version whole (its title, abstract and citations
    live in that document alone, mapping version 9); each equation of a refused paper is reported failed with the
    paper's reason.

    Returns:
        Batch position -> the paper's refused documents.
    """
    papers = writer.bulk([item.actions[0] for item in batch if item.actions], chunk_size=chunk_size)
    stop_on_passing_refusals(papers.failures)
    refused = {failure.doc_id: failure for failure in papers.failures}
    failed_by_paper: dict[int, list[BulkFailure]] = {}
    owner: dict[str, int] = {}
    equations = []
    for position, item in enumerate(batch):
        paper = refused.get(item.actions[0]["_id"]) if item.actions else None
        if paper is None:
            equations.extend(item.actions[1:])
            owner.update((action["_id"], position) for action in item.actions[1:])
            continue
        reason = f"its paper's document was refused: {paper.reason}"
        failed_by_paper[position] = [
            paper,
            *(replace(paper, doc_id=a["_id"], index=a["_index"], reason=reason) for a in item.actions[1:]),
        ]
    report = writer.bulk(equations, chunk_size=chunk_size)
    stop_on_passing_refusals(report.failures)
    for failure in report.failures:
        failed_by_paper.setdefault(owner.get(failure.doc_id, -1), []).append(failure)
    return failed_by_paper
