"""Migrations: move an index kind to a new version (copy, verify, atomic alias swap) while searches and writers run.

Searches keep going to the old index until the alias moves in one atomic ``_aliases`` call. Writers (ingest jobs)
live with a migration through a lock protocol: the migration takes a lock record in the jobs index
(`MigrationLock`), which writers read before each write and wait on, and puts a write block on the old index, which
refuses the writes of those that looked just before the lock was taken (`is_write_block` tells them to wait and send
again). The lock and the record of how each kind's last migration ended (`MigrationOutcome`) live in
`migration_records`; this module runs the migration and cleans up after one that did not swap. `reencode_vectors` is
the rewrite that re-embeds the equations with a new model on their way across. Every migration of the equations
index also leaves out the paper's own fields (the papers index holds them), makes each equation's structural fields
anew (the code's tokenizer), its context vector (the pinned text encoder) and its node vectors for the MaxSim rerank
(the bundle's node-states sidecar) when asked or when the index holds them already, so that moving to a new mapping
is all it takes to get them.

The functions take the deployment's `IndexAdmin` first; `IndexAdmin.migrate` and its siblings delegate here.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from elasticsearch import ApiError
from elasticsearch import ConnectionError as EsConnectionError
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.index.bulk import bulk_index, bulk_loading_settings, current_load_settings
from eqsearch.engine.index.documents import with_context_vectors, with_node_vectors, with_structure, with_vector
from eqsearch.engine.index.errors import IndexOperationError, MigrationError
from eqsearch.engine.index.mappings import NODE_VECTORS_FIELD, PAPER_ONLY_FIELDS, VECTOR_FIELD, IndexOptions
from eqsearch.engine.index.migration_records import (
    MigrationLock,
    drop_lock,
    migration_finished,
    migration_lock,
    now,
    record_outcome,
    record_progress,
    take_lock,
)
from eqsearch.engine.index.vectors import stored_vector
from eqsearch.engine.model.text import TextEncoder, load_text_encoder

if TYPE_CHECKING:
    from eqsearch.engine.index.admin import IndexAdmin
    from eqsearch.engine.model.nodes import NodeEncoder

#: The least time between two progress updates of a running migration's lock record.
PROGRESS_SECONDS = 1.0

#: A page of document sources in, the same page changed out (same order, same length).
Rewrite = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


@dataclass(frozen=True)
class MigrationReport:
    """The outcome of a migration."""

    kind: str
    source: str
    target: str
    copied: int
    source_count: int
    target_count: int
    seconds: float
    old_deleted: bool


def reencode_vectors(encoder: Any) -> Rewrite:
    """A `migrate` rewrite that replaces each equation's vector with ``encoder``'s vector of its MathML.

    An equation without MathML, or whose MathML the encoder refuses, loses its vector (as the ingest job leaves it):
    it stays findable by text, never by a vector of another model.
    """
    from eqsearch.engine.model import MathMLError

    def encode_one(mathml: str) -> list[float] | None:
        try:
            return [float(x) for x in encoder.encode([mathml])[0]]
        except MathMLError:
            return None

    def rewrite(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rows = [i for i, body in enumerate(bodies) if body.get("mathml")]
        try:
            vectors: list[list[float] | None] = (
                [[float(x) for x in v] for v in encoder.encode([bodies[i]["mathml"] for i in rows])] if rows else []
            )
        except MathMLError:  # one bad equation in the page: encode the page one by one
            vectors = [encode_one(bodies[i]["mathml"]) for i in rows]
        by_row = dict(zip(rows, vectors, strict=True))
        return [with_vector(body, by_row.get(i)) for i, body in enumerate(bodies)]

    return rewrite


def _restructured(
    rewrite: Rewrite | None,
    text_encoder: TextEncoder | None,
    node_encoder: NodeEncoder | None = None,
    similarity: str = "cosine",
) -> Rewrite:
    """``rewrite`` after making each equation's structural fields anew from its MathML and LaTeX, with a text
    encoder its context vector anew from its words, and with a node encoder its node vectors anew from its MathML
    (without one, any stored node vectors are left out: the new index does not map them), and, last, each formula
    vector as the new index's ``similarity`` stores it (`vectors.stored_vector`: int8 for cosine): every migration
    of the equations index brings them up to the code's tokenizer and encoders (and gives them to documents written
    before)."""

    def rewritten(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # the paper's own fields of an earlier mapping go: the papers index holds them (mapping version 9)
        bodies = [with_structure({k: v for k, v in body.items() if k not in PAPER_ONLY_FIELDS}) for body in bodies]
        if text_encoder is not None:
            bodies = with_context_vectors(bodies, text_encoder)
        if node_encoder is not None:
            bodies = with_node_vectors(bodies, node_encoder)
        else:
            bodies = [{k: v for k, v in body.items() if k != NODE_VECTORS_FIELD} for body in bodies]
        bodies = rewrite(bodies) if rewrite is not None else bodies
        return [_with_stored_vector(body, similarity) for body in bodies]

    return rewritten


def _with_stored_vector(body: dict[str, Any], similarity: str) -> dict[str, Any]:
    vector = body.get(VECTOR_FIELD)
    return body if vector is None else with_vector(body, stored_vector(vector, similarity))


def settle_node_encoder(
    options: IndexOptions, node_encoder: NodeEncoder | None
) -> tuple[IndexOptions, NodeEncoder | None]:
    """The options of an equations index and the node encoder that writes its node vectors: ``node_encoder``'s when
    given (its identity and width recorded in the options), else, where the options name node vectors (the index
    holds them), the shipped bundle's sidecar of the recorded output, which must be the one recorded.

    Raises:
        MigrationError: the index holds node vectors of another bundle than the shipped one (or of no known
            output), whose sidecar cannot be loaded here.
    """
    if node_encoder is not None:
        return replace(options, node_vectors=node_encoder.identity, node_dims=node_encoder.dim), node_encoder
    if options.node_vectors is None:
        return options, None
    from eqsearch.engine.model.bundle import BundleError
    from eqsearch.engine.model.nodes import load_node_encoder, node_output_of

    hint = (
        "migrate with the bundle that wrote them ('eqsearch index migrate equations --reencode --bundle DIR' gives "
        "every equation that bundle's vectors and node vectors), or drop them with --no-node-vectors"
    )
    try:
        output = node_output_of(options.node_vectors)
    except ValueError:
        raise MigrationError(
            f"the index holds node vectors of an unknown kind ({options.node_vectors})", hint=hint
        ) from None
    try:
        loaded = load_node_encoder(None, output=output)
    except BundleError as error:
        raise MigrationError(f"the index holds node vectors, and {error.message}", hint=hint) from None
    if loaded.identity != options.node_vectors:
        raise MigrationError(
            f"the index holds node vectors of {options.node_vectors}, but the shipped bundle's are {loaded.identity}",
            hint=hint,
        )
    return options, loaded


def _rewritten(
    documents: Iterator[tuple[str, dict[str, Any]]], rewrite: Rewrite | None, page: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The documents, each page of ``page`` passed through ``rewrite`` (when given)."""
    if rewrite is None:
        yield from documents
        return
    while chunk := list(itertools.islice(documents, page)):
        bodies = rewrite([body for _, body in chunk])
        if len(bodies) != len(chunk):
            raise MigrationError(f"the rewrite returned {len(bodies)} documents for a page of {len(chunk)}")
        yield from ((doc_id, body) for (doc_id, _), body in zip(chunk, bodies, strict=True))


def migrate(
    admin: IndexAdmin,
    kind: str,
    options: IndexOptions | None = None,
    *,
    batch_size: int = 1000,
    delete_old: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
    take_over: bool = False,
    rewrite: Rewrite | None = None,
    text_encoder: TextEncoder | None = None,
    node_encoder: NodeEncoder | None = None,
) -> MigrationReport:
    """Move ``kind`` to a new version: create it, copy every document (vectors included), verify, swap.

    Equations get their structural fields made anew (`documents.with_structure`) and, with ``text_encoder`` or when
    the index holds context vectors already, their context vectors (`documents.with_context_vectors`; the new
    index's ``_meta`` records the text encoder), and likewise their node vectors (`documents.with_node_vectors`,
    `settle_node_encoder`). With ``rewrite``, each
    page of documents is also changed on its way (``eqsearch index migrate equations --reencode`` puts vectors of a
    new model bundle into them): a model upgrade without stopping search.

    Searches keep going to the old index until the alias moves in one atomic ``_aliases`` call, so they never
    stop and never see a document twice (the alias always names one index). Ingest jobs may run meanwhile:

    1. The migration takes a lock record in the jobs index (`MigrationLock`); jobs look for it before each
       write and wait while it stands, so they pause between bulk requests instead of failing.
    2. It puts a write block on the old index. Elasticsearch answers that call only once every write already
       in flight on the index has finished, and refuses every later one (403 ``cluster_block_exception``): a
       job that looked for the lock just before it was taken has its bulk refused, waits, and sends it again.
    3. The old index is therefore frozen while it is copied, and the counts must match exactly.
    4. The alias moves; the lock goes; waiting jobs send their writes through the alias, to the new index.
       The old index keeps its write block, so a writer that still resolved it is refused and retries.

    Why a pause and not writes routed to the new index during the copy: ingest also updates documents
    (``cited_by_count``) and deletes them (equations of an earlier version of a paper). An update or delete
    that reaches the new index before the copy brings that document over would be lost or undone by the
    copy, and every writer would have to learn of the migration at the very instant it starts. The write
    block is a barrier Elasticsearch itself enforces; its price is that ingest writes wait for the copy.

    A migration that dies (``kill -9``) leaves its lock and the block; jobs on the same machine then stop
    with an error that says to run the migration again, which cleans up (deletes the half-made index, lifts
    the block) and starts afresh. A lock taken on another machine cannot be checked from here: ``take_over``
    clears it, for when that process is known to be gone.

    Args:
        admin: the deployment's indices.
        kind: ``equations``, ``papers`` or ``jobs``.
        options: the new index's options (default: the current index's, with the code's current mapping).
        batch_size: documents per scroll page and bulk request.
        delete_old: delete the old index after the swap.
        on_progress: called with ``(copied, total)``.
        take_over: clear the lock of another migration whose process is known to be gone.
        rewrite: called with each page of document sources (at most ``batch_size``), returns them changed, in
            the same order (ids stay).
        text_encoder: embeds the equations' contexts, turning the context channel on (None: only if the index
            holds context vectors already, with the shipped encoder, `engine.model.text`).
        node_encoder: writes every equation's node vectors for the MaxSim rerank (`settle_node_encoder`; None: only
            if ``options`` name node vectors, as those of an index that holds them do, with the shipped bundle's
            sidecar; options with ``node_vectors`` None drop them).

    Returns:
        What was copied from where to where, with both counts.

    Raises:
        MigrationError: another migration is running, or the copy failed or the counts differ; the new index is
            deleted, the block lifted, the alias unchanged.
    """
    client = admin.client
    began = time.perf_counter()
    source = admin.current(kind)
    if source is None:
        raise IndexOperationError(f"no {admin.alias(kind)} alias to migrate", hint=f"eqsearch index create {kind}")
    options = options or admin.options_of(kind) or IndexOptions()
    if kind == "equations":
        if text_encoder is None and options.text_encoder:
            text_encoder = load_text_encoder()  # the index holds context vectors: the new one gets them too
        if text_encoder is not None:
            options = replace(options, context_dims=text_encoder.dim, text_encoder=text_encoder.identity)
        options, node_encoder = settle_node_encoder(options, node_encoder)
        rewrite = _restructured(rewrite, text_encoder, node_encoder, options.similarity)
    _clear_finished_or_dead_lock(admin, take_over=take_over)
    target = admin.next_version_name(kind)
    lock = MigrationLock(kind, source, target, os.getpid(), socket.gethostname(), now(), admin.write_blocked(source))
    copied = 0
    take_lock(admin, lock)
    try:
        admin.create_index(kind, target, options)
        # The barrier: answered once the writes in flight on `source` are done; later ones are refused.
        client.indices.add_block(index=source, block="write")
        client.indices.refresh(index=source)
        total = int(client.count(index=source)["count"])
        recorded_at = 0.0
        record_progress(admin, lock, copied, total)

        def progress(ok: bool, item: dict[str, Any]) -> None:
            nonlocal copied, recorded_at
            copied += 1
            if copied % batch_size == 0:
                if on_progress is not None:
                    on_progress(copied, total)
                if time.monotonic() - recorded_at >= PROGRESS_SECONDS:
                    record_progress(admin, lock, copied, total)
                    recorded_at = time.monotonic()

        with bulk_loading_settings(
            client, target, restore_to=current_load_settings(client, target), drop_replicas=True
        ):
            report = bulk_index(
                client,
                (
                    {"_index": target, "_id": doc_id, "_source": body}
                    for doc_id, body in _rewritten(admin.scan(source, batch_size), rewrite, batch_size)
                ),
                chunk_size=batch_size,
                on_item=progress,
            )
        if report.failures:
            first = report.failures[0]
            raise MigrationError(
                f"{report.failed} documents failed to copy from {source} to {target}; first: {first.doc_id}: "
                f"{first.error_type}: {first.reason}",
                hint="fix the mapping so it accepts the existing documents, then migrate again",
            )
        client.indices.refresh(index=target)
        source_count = int(client.count(index=source)["count"])
        target_count = int(client.count(index=target)["count"])
        if source_count != target_count:  # nothing writes to either while the block stands: a real fault
            raise MigrationError(
                f"{target} holds {target_count} documents but {source} holds {source_count}",
                hint="run the migration again; if it happens again, check the cluster's health and logs",
            )
        client.indices.update_aliases(
            actions=[
                {"remove": {"index": source, "alias": admin.alias(kind)}},
                {"add": {"index": target, "alias": admin.alias(kind), "is_write_index": True}},
            ]
        )
    except BaseException as error:
        with contextlib.suppress(ApiError, EsConnectionError):
            _undo(admin, lock)
            if isinstance(error, Exception):  # not for Ctrl-C: the user saw it stop
                why = error.message if isinstance(error, EqsearchError) else str(error)
                record_outcome(admin, lock, "failed", copied, began, f"failed, nothing changed: {why}")
        raise
    # A lock left here (connection lost) is harmless: its target is behind the alias, so it reads as finished.
    with contextlib.suppress(ApiError, EsConnectionError):
        drop_lock(admin)
        message = f"{copied:,} documents copied; {admin.alias(kind)} now reads {target}"
        record_outcome(admin, lock, "finished", copied, began, message)
    if on_progress is not None:
        on_progress(copied, total)
    if delete_old:
        client.indices.delete(index=source)
    return MigrationReport(
        kind, source, target, copied, source_count, target_count, time.perf_counter() - began, delete_old
    )


def _clear_finished_or_dead_lock(admin: IndexAdmin, *, take_over: bool) -> None:
    lock = migration_lock(admin)
    if lock is None:
        return
    if migration_finished(admin, lock):
        drop_lock(admin)
        return
    if lock.holder_alive() is False or take_over:
        _undo(admin, lock)
        return
    where = "it runs on another machine" if lock.holder_alive() is None else "its process is alive"
    raise MigrationError(
        f"{lock.describe()} is still in progress ({where})",
        hint=(
            "wait for it to finish; if its process is gone, run "
            f"'eqsearch index migrate {lock.kind} --take-over' to clean up after it and migrate"
        ),
    )


def _undo(admin: IndexAdmin, lock: MigrationLock) -> None:
    """Clean up after a migration that did not swap: delete its target, lift its block, drop its lock."""
    if not migration_finished(admin, lock):
        admin.client.indices.delete(index=lock.target, ignore_unavailable=True)
        if not lock.source_was_blocked:
            # before the lock goes: when the jobs index is migrated, the lock lives in the blocked source
            admin.client.indices.put_settings(index=lock.source, settings={"index.blocks.write": None})
    drop_lock(admin)
