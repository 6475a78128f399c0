"""Bulk writing, as every eqsearch writer does it: streaming bulk with retries, one record per refused document.

Free functions that take the client first, like elasticsearch-py's own ``helpers``: `bulk_index` never raises for a
bad document but returns a `BulkReport` with a `BulkFailure` per refused one, so a caller can count and record what
was lost and go on; `bulk_loading_settings` turns refresh and replicas off while an index is loaded and puts the
previous values back afterwards, even on failure. `is_write_block` tells a migration's write block (which a writer
should wait out and send again) from any other refusal.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from elasticsearch import ApiError, Elasticsearch, helpers

#: HTTP statuses of a whole request that the transport retries (with `retrying`).
RETRY_STATUSES = (429, 502, 503, 504)
#: Seconds a node waits for a shard's primary (a node gone, a shard moving) before it refuses a bulk item with a 503
#: of its own (Elasticsearch's default is a minute). The client waits longer for the answer (`BULK_CLIENT_WAIT_S`):
#: otherwise it times out first and sends the whole request again while the node still holds the first one, and the
#: writer ends with a bare timeout instead of the refused documents and their reason.
BULK_SERVER_WAIT_S = 30
BULK_CLIENT_WAIT_S = 60.0


@dataclass(frozen=True)
class BulkFailure:
    """One document Elasticsearch did not take.

    Args:
        doc_id: the document's id.
        index: the index it was for.
        status: the HTTP status of the item (0 when the request itself failed).
        error_type: Elasticsearch's error type (``mapper_parsing_exception``, ...) or the exception name.
        reason: Elasticsearch's reason sentence.
        op: the bulk operation (``index``, ``update``, ...).
    """

    doc_id: str
    index: str
    status: int
    error_type: str
    reason: str
    op: str = "index"

    def to_json(self) -> dict[str, Any]:
        """The failure as a JSON object (the form job records keep; ``BulkFailure(**record)`` reads it back)."""
        return {
            "doc_id": self.doc_id,
            "index": self.index,
            "status": self.status,
            "error_type": self.error_type,
            "reason": self.reason,
            "op": self.op,
        }


@dataclass
class BulkReport:
    """What a bulk run did: counts, and every failed document."""

    ok: int = 0
    failures: list[BulkFailure] = field(default_factory=list)

    @property
    def failed(self) -> int:
        """How many documents failed."""
        return len(self.failures)


def is_write_block(failure: BulkFailure) -> bool:
    """Whether Elasticsearch refused the document because its index carries a block (a migration's, or another)."""
    return failure.status == 403 and failure.error_type == "cluster_block_exception"


def is_write_block_error(error: ApiError) -> bool:
    """`is_write_block` for a single request's error."""
    return error.meta.status == 403 and getattr(error, "error", "") == "cluster_block_exception"


def retrying(client: Elasticsearch, max_retries: int = 5) -> Elasticsearch:
    """The client with transport retries on connection errors, timeouts and 429/50x answers."""
    return client.options(max_retries=max_retries, retry_on_timeout=True, retry_on_status=RETRY_STATUSES)


def bulk_index(
    client: Elasticsearch,
    actions: Iterable[dict[str, Any]],
    *,
    chunk_size: int = 500,
    max_chunk_bytes: int = 20 * 1024 * 1024,
    max_retries: int = 5,
    initial_backoff: float = 1.0,
    max_backoff: float = 60.0,
    refresh: bool | str = False,
    on_item: Callable[[bool, dict[str, Any]], None] | None = None,
) -> BulkReport:
    """Send actions with streaming bulk; never raises for a bad document.

    A 429 item is retried with exponential backoff (`helpers.streaming_bulk`'s ``max_retries``); connection errors
    and 429/50x answers to the whole request are retried by the transport. An item whose primary shard stays
    unavailable for `BULK_SERVER_WAIT_S` comes back as a 503 failure (the node answers before the client gives up).
    Documents that still fail come back as `BulkFailure` records.

    Args:
        client: the client.
        actions: bulk actions (``_index``, ``_id``, ``_source`` or ``_op_type``...).
        chunk_size: documents per request.
        max_chunk_bytes: bytes per request.
        max_retries: retries of 429 items and of failed requests.
        initial_backoff: seconds before the first retry (doubled each time).
        max_backoff: longest wait between retries.
        refresh: passed to each bulk request.
        on_item: called with ``(ok, item)`` for every document, in order.

    Returns:
        Counts and per-document failures.

    Raises:
        elasticsearch.ApiError, elasticsearch.ConnectionError: the cluster kept refusing whole requests after the
            retries (nothing about one document).
    """
    report = BulkReport()
    kwargs: dict[str, Any] = {} if refresh is False else {"refresh": refresh}
    for ok, item in helpers.streaming_bulk(
        retrying(client, max_retries).options(request_timeout=BULK_CLIENT_WAIT_S),
        actions,
        chunk_size=chunk_size,
        max_chunk_bytes=max_chunk_bytes,
        raise_on_error=False,
        raise_on_exception=True,
        max_retries=max_retries,
        initial_backoff=initial_backoff,
        max_backoff=max_backoff,
        timeout=f"{BULK_SERVER_WAIT_S}s",
        **kwargs,
    ):
        if ok:
            report.ok += 1
        else:
            report.failures.append(bulk_failure(item))
        if on_item is not None:
            on_item(ok, item)
    return report


def bulk_failure(item: Mapping[str, Any]) -> BulkFailure:
    """A `BulkFailure` from one failed ``streaming_bulk`` item."""
    op, result = next(iter(item.items()))
    error = result.get("error") or {}
    if isinstance(error, str):
        error_type, reason = "error", error
    else:
        error_type = str(error.get("type", "error"))
        reason = str(error.get("reason", ""))
        caused = error.get("caused_by")
        if isinstance(caused, dict) and caused.get("reason"):
            reason = f"{reason}: {caused['reason']}"
    return BulkFailure(
        doc_id=str(result.get("_id", "")),
        index=str(result.get("_index", "")),
        status=int(result.get("status", 0) or 0),
        error_type=error_type,
        reason=reason,
        op=op,
    )


@contextlib.contextmanager
def bulk_loading_settings(
    client: Elasticsearch, index: str, restore_to: Mapping[str, Any] | None = None, *, drop_replicas: bool = False
) -> Iterator[dict[str, Any]]:
    """Refresh off (and, for an index nobody searches yet, zero replicas) on ``index`` while the block runs; the
    previous values come back afterwards.

    Replicas are kept by default: on a cluster, an index that serves searches while it loads would otherwise lose
    every document of a node that dies during the load (its shards would have no other copy).

    Args:
        client: the client.
        index: the concrete index (or alias) being loaded.
        restore_to: the settings to restore (``refresh_interval``, ``number_of_replicas``); by default the ones in
            force on entry. A resumed job passes the values its first run recorded, since a killed run left the
            bulk settings in place.
        drop_replicas: also set zero replicas while loading (a new index that no search reads yet: a migration's
            target).

    Yields:
        The settings that will be restored.
    """
    if restore_to is None:
        restore_to = current_load_settings(client, index)
    loading: dict[str, Any] = {"refresh_interval": "-1", **({"number_of_replicas": 0} if drop_replicas else {})}
    client.indices.put_settings(index=index, settings={"index": loading})
    try:
        yield dict(restore_to)
    finally:
        retrying(client).indices.put_settings(index=index, settings={"index": dict(restore_to)})
        retrying(client).indices.refresh(index=index)


def current_load_settings(client: Elasticsearch, index: str) -> dict[str, Any]:
    """The index's ``refresh_interval`` (None = the default) and ``number_of_replicas``."""
    settings = client.indices.get_settings(index=index, flat_settings=True)
    values = next(iter(settings.values()))["settings"]
    refresh = values.get("index.refresh_interval")
    return {
        "refresh_interval": None if refresh in (None, "-1") else refresh,
        "number_of_replicas": int(values.get("index.number_of_replicas", 0)),
    }
