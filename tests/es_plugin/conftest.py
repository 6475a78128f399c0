"""The plugin tests' gate: the configured node must have eqsearch's plugin. Without it they are skipped with the
reason; with CI=true they fail instead, unless the node is the managed one and was started before the plugin was
installed into its distribution (it loads the plugin at its next start: `make test` on a running node).

And the collection the rescorers are compared on (`collection`): the shipped labelled equations and the first
formulas of the ARQMath-1 development collection (the excerpt in tests/data/arqmath1-excerpt), some written as before
sizes (`UNSIZED`) or before the forward index (`UNFORWARDED`) existed, with queries made of the development topics
and of every seventh formula."""

from __future__ import annotations

import csv
import itertools
import os
import uuid
from pathlib import Path

import pytest
from eqsearch.engine.es.distribution import PINNED
from eqsearch.engine.es.plugin import plugin_installed_at
from eqsearch.engine.index.admin import IndexAdmin
from eqsearch.engine.index.bulk import bulk_index
from eqsearch.engine.index.documents import structure_fields
from eqsearch.engine.index.mappings import FORWARD_INDEX_FIELD, SIZE_FIELD, IndexOptions, alias_name
from eqsearch.engine.model.layout import parse_layout
from eqsearch.engine.model.structure import QUERY_SPAN_KINDS, structure_of_layout
from eqsearch.engine.search.plugin import PLUGIN_VERSION, detect_plugin
from eqsearch.evaluation.labelled_set import DEFAULT_LABELLED_SET
from formula_collection import ARQMATH_EXCERPT


def _started_before_install(es_client, es_config) -> bool:
    if not es_config.uses_local_node or es_config.local is None:
        return False
    installed = plugin_installed_at(es_config.local.home / "dist" / PINNED.version)
    if installed is None:
        return False
    nodes = es_client.nodes.info(metric="jvm", filter_path="nodes.*.jvm.start_time_in_millis")["nodes"]
    return all(node["jvm"]["start_time_in_millis"] / 1000 < installed for node in nodes.values())


@pytest.fixture(scope="module")
def require_plugin(es_client, es_config):
    """Returns a check: ``require_plugin()`` skips or fails the test when the node lacks the plugin version this
    engine ships (`PLUGIN_VERSION`: one version, every request of it)."""
    on_ci = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

    def check() -> None:
        support = detect_plugin(es_client)
        if support.available:
            return
        wanted = f" {PLUGIN_VERSION}"
        message = f"the node has no eqsearch plugin{wanted}: {support.note}"
        if on_ci and not _started_before_install(es_client, es_config):
            pytest.fail(message + " (CI=true)", pytrace=False)
        pytest.skip(message)

    return check


DEV = ARQMATH_EXCERPT
#: formulas of the development collection indexed (its first ones: the pools of the first topics, near duplicates)
COLLECTION_SIZE = 600
HASHED_DIMS = 8
#: unsized documents (written before sizes existed): a candidate without a size counts as the query's
UNSIZED = 20
#: documents without a forward index (written before it existed), after those: their counts come from the postings
UNFORWARDED = 20


def _dev_rows(path: Path, limit: int | None = None) -> list[tuple[str, str]]:
    with path.open(encoding="utf-8") as handle:
        rows = [(row[0], row[1]) for row in itertools.islice(csv.reader(handle, delimiter="\t"), 1, None)]
    return rows[:limit] if limit else rows


def _labelled_rows() -> list[tuple[str, str]]:
    lines = [line for line in DEFAULT_LABELLED_SET.read_text(encoding="utf-8").splitlines() if line and line[0] != "#"]
    return [(f"labelled-{number}", line.split("\t")[1]) for number, line in enumerate(lines[1:])]


@pytest.fixture(scope="module")
def plugin_client(es_client, require_plugin):
    require_plugin()
    return es_client


@pytest.fixture(scope="module")
def converter():
    from eqsearch.engine.latex.converter import KatexConverter

    with KatexConverter() as katex:
        yield katex


@pytest.fixture(scope="module")
def collection(plugin_client, converter):
    """An equations index of the labelled equations and the development collection's first formulas; yields
    (alias, queries)."""
    prefix = f"eqsearch-test-{uuid.uuid4().hex[:12]}"
    IndexAdmin(plugin_client, prefix).ensure(IndexOptions(dims=HASHED_DIMS, similarity="cosine"))
    alias = alias_name(prefix, "equations")
    rows = _labelled_rows() + _dev_rows(DEV / "collection.tsv", COLLECTION_SIZE)
    converted = converter.convert_many([(latex, "equation") for _, latex in rows])
    mathml = {vid: result.mathml for (vid, _), result in zip(rows, converted, strict=True)}
    actions = []
    for number, (vid, latex) in enumerate(rows):
        if not mathml[vid]:
            continue
        fields = structure_fields(mathml[vid], latex)
        if number < UNSIZED:
            fields.pop(SIZE_FIELD)
        elif number < UNSIZED + UNFORWARDED:
            fields.pop(FORWARD_INDEX_FIELD)
        source = {"eq_id": vid, "paper_id": vid, "latex": latex, **fields}
        actions.append({"_index": alias, "_id": vid, "_source": source})
    assert bulk_index(plugin_client, actions, refresh="wait_for").failed == 0
    topics = [latex for _, latex in _dev_rows(DEV / "topics.tsv")]
    queries = []
    for latex in [*topics, *(latex for _, latex in rows[::7])]:
        result = converter.convert(latex)
        if result.mathml:
            queries.append(structure_of_layout(parse_layout(result.mathml), span_kinds=QUERY_SPAN_KINDS))
    yield alias, queries
    for index in plugin_client.indices.get(index=f"{prefix}*", expand_wildcards="all", ignore_unavailable=True):
        plugin_client.indices.delete(index=index, ignore_unavailable=True)
