"""Versioned indices behind aliases: the lifecycle of one deployment's indices (create, list, describe, delete).

Every index kind lives in concrete versions (``<prefix>-equations-v3``) reached through an alias
(``<prefix>-equations``); `IndexAdmin` creates the next version, finds the current one, lists and describes them,
reads an index's options back from its ``_meta``, scans its documents, and deletes the versions nobody reads.
Moving a kind to a new version is a migration (`eqsearch.engine.index.migration`): `IndexAdmin.migrate` and the
lock readers delegate there, bulk writing is in `eqsearch.engine.index.bulk`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from elasticsearch import ApiError, BadRequestError, Elasticsearch, NotFoundError
from elasticsearch import ConnectionError as EsConnectionError
from eqsearch.engine.index import migration, migration_records
from eqsearch.engine.index.bulk import current_load_settings
from eqsearch.engine.index.errors import IndexOperationError
from eqsearch.engine.index.mappings import (
    INDEX_KINDS,
    MAPPING_VERSIONS,
    IndexOptions,
    alias_name,
    default_element_type,
    index_definition,
    parse_version,
    versioned_name,
)
from eqsearch.engine.index.migration import MigrationReport, Rewrite
from eqsearch.engine.index.migration_records import MigrationLock, MigrationOutcome


@dataclass(frozen=True)
class IndexInfo:
    """One concrete eqsearch index."""

    name: str
    kind: str
    version: int
    aliased: bool
    docs: int
    size_bytes: int
    mapping_version: int | None
    analyzer: str | None


def recommended_layout(data_nodes: int) -> tuple[int, int]:
    """Primary shards of the equations index and replicas of every index for a cluster of ``data_nodes`` data nodes.

    One primary per data node (each node then searches its share of a query in parallel) and one replica as soon as a
    second node can hold it (losing one node then loses no document and no search: ``tests/cluster/``). Past ~30 GB
    per shard (about 4.8M equations) more primaries are needed: pass them explicitly (``--shards``). The reasons and
    their figures: ``docs/decisions/shard-layout.md``; the table by cluster size: ``benchmarks/scale.md``, "Shards and
    replicas by cluster size".
    """
    nodes = max(1, data_nodes)
    return nodes, min(1, nodes - 1)


def data_node_count(client: Elasticsearch) -> int | None:
    """The cluster's data nodes now (``_cluster/health``), or None when the credentials may not ask."""
    try:
        return int(client.cluster.health()["number_of_data_nodes"])
    except ApiError as error:
        if error.meta.status in (401, 403):
            return None
        raise


def probe_text_analyzer(client: Elasticsearch) -> str:
    """``english`` when the cluster has it (module analysis-common), else ``standard``."""
    try:
        client.indices.analyze(analyzer="english", text="equations")
    except BadRequestError:
        return "standard"
    return "english"


class IndexAdmin:
    """Versioned indices of one deployment (an index prefix on one cluster).

    Args:
        client: a connected client.
        prefix: the deployment's index prefix (``EsConfig.index_prefix``).
        shards: primary shards of an equations index this admin creates (``EsConfig.shards``); None: one per data
            node (`recommended_layout`).
        replicas: replicas of every index it creates (``EsConfig.replicas``); None: one when the cluster has a second
            data node, else none.
    """

    def __init__(
        self, client: Elasticsearch, prefix: str = "eqsearch", *, shards: int | None = None, replicas: int | None = None
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.shards = shards
        self.replicas = replicas

    # -- names -------------------------------------------------------------------------------------------------
    def alias(self, kind: str) -> str:
        """The alias of ``kind`` that searches and writers use."""
        return alias_name(self.prefix, kind)

    def versions(self, kind: str) -> list[int]:
        """Versions of ``kind`` that exist, ascending."""
        pattern = f"{self.prefix}-{kind}-v*"
        names = self.client.indices.get(index=pattern, expand_wildcards="open,closed", ignore_unavailable=True)
        found = (parse_version(self.prefix, kind, name) for name in names)
        return sorted(v for v in found if v is not None)

    def current(self, kind: str) -> str | None:
        """The concrete index the alias points at, or None."""
        try:
            aliases = self.client.indices.get_alias(name=self.alias(kind))
        except NotFoundError:
            return None
        names = sorted(aliases)
        return names[-1] if names else None

    def next_version_name(self, kind: str) -> str:
        """The concrete name the next version of ``kind`` gets (one past the highest that exists)."""
        versions = self.versions(kind)
        return versioned_name(self.prefix, kind, (versions[-1] + 1) if versions else 1)

    def default_options(
        self, dims: int = 64, similarity: str = "max_inner_product", encoder: str | None = None
    ) -> IndexOptions:
        """Options for this cluster: its best text analyzer, the given vector shape and encoder identity, and the
        shard and replica counts it was given or, where not, those its size calls for (`recommended_layout`; a
        cluster whose credentials may not read its health gets Elasticsearch's own defaults, 1 and 1)."""
        shards, replicas = self.shards, self.replicas
        if shards is None or replicas is None:
            nodes = data_node_count(self.client)
            recommended = recommended_layout(nodes) if nodes is not None else (1, 1)
            shards = recommended[0] if shards is None else shards
            replicas = recommended[1] if replicas is None else replicas
        return IndexOptions(
            dims=dims,
            similarity=similarity,
            element_type=default_element_type(similarity),
            analyzer=probe_text_analyzer(self.client),
            encoder=encoder,
            shards=shards,
            replicas=replicas,
        )

    # -- create --------------------------------------------------------------------------------------------------
    def create(self, kind: str, options: IndexOptions, *, point_alias: bool = True) -> str:
        """Create the next version of ``kind``; point the alias at it when no alias exists yet.

        Returns:
            The concrete index name.

        Raises:
            IndexOperationError: the alias already points at an index (use `migrate`) and ``point_alias`` is set.
        """
        current = self.current(kind)
        if point_alias and current is not None:
            raise IndexOperationError(
                f"{self.alias(kind)} already points at {current}",
                hint=f"use 'eqsearch index migrate {kind}' to move to a new mapping",
            )
        name = self.next_version_name(kind)
        aliases = {self.alias(kind): {"is_write_index": True}} if point_alias else None
        self.create_index(kind, name, options, aliases=aliases)
        return name

    def create_index(
        self, kind: str, name: str, options: IndexOptions, *, aliases: dict[str, Any] | None = None
    ) -> None:
        """Create the concrete index ``name`` with the definition of ``kind``, behind ``aliases`` (none by default)."""
        body = index_definition(kind, options)
        self.client.indices.create(index=name, settings=body["settings"], mappings=body["mappings"], aliases=aliases)

    def ensure(self, options: IndexOptions, kinds: Iterable[str] = INDEX_KINDS) -> dict[str, str]:
        """Every kind's alias, creating the first version where none exists. Returns kind -> concrete index."""
        out = {}
        for kind in kinds:
            current = self.current(kind)
            if current is None:
                try:
                    current = self.create(kind, options)
                except BadRequestError as error:  # another process created it meanwhile
                    if "resource_already_exists_exception" not in str(error):
                        raise
                    current = self.current(kind) or versioned_name(self.prefix, kind, 1)
            out[kind] = current
        return out

    # -- inspect -------------------------------------------------------------------------------------------------
    def list(self) -> list[IndexInfo]:
        """Every versioned index of this prefix, by kind and version."""
        names = self.client.indices.get(index=f"{self.prefix}-*-v*", expand_wildcards="open", ignore_unavailable=True)
        if not names:
            return []
        stats = self.client.indices.stats(index=list(names), metric="docs,store")["indices"]
        infos = []
        for name, body in names.items():
            kind, version = self._kind_version(name)
            if kind is None or version is None:
                continue
            meta = body.get("mappings", {}).get("_meta", {})
            primaries = stats.get(name, {}).get("primaries", {})
            infos.append(
                IndexInfo(
                    name=name,
                    kind=kind,
                    version=version,
                    aliased=self.alias(kind) in body.get("aliases", {}),
                    docs=int(primaries.get("docs", {}).get("count", 0)),
                    size_bytes=int(primaries.get("store", {}).get("size_in_bytes", 0)),
                    mapping_version=meta.get("mapping_version"),
                    analyzer=meta.get("analyzer"),
                )
            )
        return sorted(infos, key=lambda info: (INDEX_KINDS.index(info.kind), info.version))  # type: ignore[arg-type]

    def _kind_version(self, name: str) -> tuple[str | None, int | None]:
        for kind in INDEX_KINDS:
            version = parse_version(self.prefix, kind, name)
            if version is not None:
                return kind, version
        return None, None

    def describe(self, kind: str) -> dict[str, Any]:
        """Alias, concrete index, mapping meta (analyzer, vector options), settings and counts of ``kind`` (the
        counts are None while no primary shard of it has started, as when a cluster is restarting).

        Raises:
            IndexOperationError: no alias for ``kind`` exists.
        """
        current = self.current(kind)
        if current is None:
            raise IndexOperationError(
                f"no {self.alias(kind)} alias", hint=f"create it with 'eqsearch index create {kind}'"
            )
        mapping = self.client.indices.get_mapping(index=current)[current]["mappings"]
        meta = mapping.get("_meta", {})
        settings = current_load_settings(self.client, current)
        # no primary started yet (a cluster restarting, shards recovering): the counts are not known, not zero
        stats = self.client.indices.stats(index=current, metric="docs,store")["indices"].get(current, {})
        stats = stats.get("primaries", {})
        docs, store = stats.get("docs", {}).get("count"), stats.get("store", {}).get("size_in_bytes")
        vector = mapping.get("properties", {}).get("vector")
        return {
            "alias": self.alias(kind),
            "index": current,
            "versions": self.versions(kind),
            "mapping_version": meta.get("mapping_version"),
            "code_mapping_version": MAPPING_VERSIONS[kind],
            "stale": meta.get("mapping_version") != MAPPING_VERSIONS[kind],
            "analyzer": meta.get("analyzer"),
            "cluster_analyzer": probe_text_analyzer(self.client),
            "vector": vector,
            **({"node_vectors": meta.get("node_vectors")} if kind == "equations" else {}),
            "docs": None if docs is None else int(docs),
            "size_bytes": None if store is None else int(store),
            **settings,
        }

    def options_of(self, kind: str) -> IndexOptions | None:
        """The `IndexOptions` of the current index of ``kind``: the vector, text and node-vector choices from its
        ``_meta``, its primary shards and replicas from its settings (so that a migration keeps them)."""
        current = self.current(kind)
        if current is None:
            return None
        meta = self.client.indices.get_mapping(index=current)[current]["mappings"].get("_meta", {})
        settings = next(iter(self.client.indices.get_settings(index=current, flat_settings=True).values()))
        values = settings["settings"]
        similarity, index_type = str(meta.get("similarity", "max_inner_product")), str(meta.get("index_type", "hnsw"))
        return IndexOptions(
            dims=int(meta.get("dims", 64)),
            similarity=similarity,
            index_type=index_type,
            # an index made before the element type was recorded (version 9 and older) moves to the default
            element_type=str(meta.get("element_type") or default_element_type(similarity, index_type)),
            oversample=float(meta.get("oversample", 0.0)),
            # an index made before the graph's shape was recorded (version 11 and older) moves to today's
            **({"hnsw_m": int(meta["hnsw_m"])} if meta.get("hnsw_m") else {}),
            **({"ef_construction": int(meta["ef_construction"])} if meta.get("ef_construction") else {}),
            analyzer=str(meta.get("analyzer", "standard")),
            encoder=meta.get("encoder"),
            shards=int(values.get("index.number_of_shards", 1)),
            replicas=int(values.get("index.number_of_replicas", 0)),
            **({"context_dims": int(meta["context_dims"])} if meta.get("context_dims") else {}),
            text_encoder=meta.get("text_encoder"),
            node_vectors=meta.get("node_vectors") if meta.get("node_dims") else None,
            node_dims=int(meta["node_dims"]) if meta.get("node_vectors") and meta.get("node_dims") else None,
        )

    # -- migrate (eqsearch.engine.index.migration) ----------------------------------------------------------------
    def migrate(
        self,
        kind: str,
        options: IndexOptions | None = None,
        *,
        batch_size: int = 1000,
        delete_old: bool = False,
        on_progress: Callable[[int, int], None] | None = None,
        take_over: bool = False,
        rewrite: Rewrite | None = None,
        text_encoder: Any | None = None,
        node_encoder: Any | None = None,
    ) -> MigrationReport:
        """Move ``kind`` to a new version: create it, copy every document, verify, swap (see `migration.migrate`,
        which says how searches and ingest jobs carry on meanwhile and what each argument does)."""
        return migration.migrate(
            self,
            kind,
            options,
            batch_size=batch_size,
            delete_old=delete_old,
            on_progress=on_progress,
            take_over=take_over,
            rewrite=rewrite,
            text_encoder=text_encoder,
            node_encoder=node_encoder,
        )

    def migration_lock(self) -> MigrationLock | None:
        """The lock of the migration in progress (or of one that died), or None (`migration_records.migration_lock`)."""
        return migration_records.migration_lock(self)

    def migration_finished(self, lock: MigrationLock) -> bool:
        """Whether the lock's alias already points at its target (only the lock's removal was left to do)."""
        return migration_records.migration_finished(self, lock)

    def last_migrations(self) -> dict[str, MigrationOutcome]:
        """How the last migration of each index kind ended (kinds never migrated are absent)."""
        return migration_records.last_migrations(self)

    # -- documents and blocks ------------------------------------------------------------------------------------
    def write_blocked(self, index: str) -> bool:
        """Whether ``index`` (a concrete index or an alias) carries a write block."""
        try:
            settings = self.client.indices.get_settings(index=index, name="index.blocks.*", flat_settings=True)
        except NotFoundError:
            return False
        return any(
            str(body.get("settings", {}).get("index.blocks.write", "false")) == "true" for body in settings.values()
        )

    def scan(
        self,
        index: str,
        batch_size: int = 1000,
        *,
        query: Mapping[str, Any] | None = None,
        source: bool | list[str] = True,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Documents of ``index`` as ``(id, source)``, through a point in time (vectors included in full sources).

        Args:
            index: a concrete index or an alias.
            batch_size: documents per page.
            query: only the documents it matches (default: all).
            source: ``True`` for whole sources, a list of fields for only those, ``False`` for none (``{}``).
        """
        pit = self.client.open_point_in_time(index=index, keep_alive="2m")["id"]
        try:
            search_after = None
            while True:
                body: dict[str, Any] = {
                    "size": batch_size,
                    "pit": {"id": pit, "keep_alive": "2m"},
                    "sort": [{"_shard_doc": "asc"}],
                    # 9.2+ leave vectors out of _source by default; a copy must carry them
                    "_source": {"exclude_vectors": False} if source is True else source,
                    "track_total_hits": False,
                }
                if query is not None:
                    body["query"] = dict(query)
                if search_after is not None:
                    body["search_after"] = search_after
                response = self.client.search(body=body)
                pit = response.get("pit_id", pit)
                hits = response["hits"]["hits"]
                if not hits:
                    return
                for hit in hits:
                    yield hit["_id"], hit.get("_source") or {}
                search_after = hits[-1]["sort"]
        finally:
            with contextlib.suppress(ApiError, EsConnectionError):
                self.client.close_point_in_time(id=pit)

    # -- delete --------------------------------------------------------------------------------------------------
    def delete(self, index: str, *, force: bool = False) -> None:
        """Delete one concrete index of this prefix.

        Raises:
            IndexOperationError: the name is not one of this prefix's versioned indices, or the alias points at it and
                ``force`` is not set.
        """
        kind, version = self._kind_version(index)
        if kind is None or version is None:
            raise IndexOperationError(
                f"{index!r} is not a versioned index of prefix {self.prefix!r}",
                hint="see 'eqsearch index list' for the names",
            )
        if self.current(kind) == index and not force:
            raise IndexOperationError(
                f"{self.alias(kind)} points at {index}; deleting it would stop {kind} search",
                hint="migrate first, or pass --force to delete it anyway",
            )
        lock = self.migration_lock()
        copying = lock is not None and lock.target == index and lock.holder_alive() is not False
        if copying and lock is not None and not self.migration_finished(lock) and not force:
            raise IndexOperationError(
                f"{lock.describe()} is copying into {index}",
                hint="wait for the migration to finish (or fail); --force deletes it anyway and fails the migration",
            )
        try:
            self.client.indices.delete(index=index)
        except NotFoundError:
            raise IndexOperationError(f"no index {index}", hint="see 'eqsearch index list'") from None
