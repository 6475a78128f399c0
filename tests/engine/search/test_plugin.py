"""What a ``_nodes/plugins`` answer says about eqsearch's plugin (the shipped version on every node, none, a mixed
cluster, another version), and the plugin's requests: the same sub-expressions, sizes and weight as the plain
request's clauses; the first stage whose shard chooses the rare terms; the version the engine speaks is the one
``es-plugin/`` builds."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from eqsearch.engine.index.mappings import STRUCTURE_FIELD
from eqsearch.engine.model.layout import parse_layout_latex
from eqsearch.engine.model.structure import QUERY_SPAN_KINDS, formula_structure, structure_of_layout
from eqsearch.engine.search.plan import StructureList
from eqsearch.engine.search.plugin import (
    BM25_RESCORER,
    PLUGIN_NAME,
    PLUGIN_VERSION,
    STRUCTURE_RESCORER,
    TERMS_QUERY,
    plugin_support,
    terms_query,
)
from eqsearch.engine.search.structure_query import (
    MAX_RERANK_SPANS,
    MIN_RERANK_SPAN,
    RARE_AT_LEAST,
    RareRule,
    structure_body,
)

RERANK = {"rerank_window": 300, "rerank_weight": 0.5}
#: The structural list where the shard chooses the rare terms (the plugin and the forward index).
SHARD = {**RERANK, "native": True, "forward_index": True, "first_stage": "shard", "first_stage_share": 0.05}


def _nodes(*plugins: list[tuple[str, str]]) -> dict:
    return {
        "nodes": {
            f"n{i}": {"name": f"node-{i}", "plugins": [{"name": n, "version": v} for n, v in node]}
            for i, node in enumerate(plugins)
        }
    }


def test_the_engine_speaks_the_plugin_version_it_ships():
    shipped = (Path(__file__).parents[3] / "es-plugin" / "VERSION").read_text().strip()
    assert shipped == PLUGIN_VERSION


def test_every_node_with_the_shipped_plugin_turns_it_on():
    support = plugin_support(_nodes([(PLUGIN_NAME, PLUGIN_VERSION)], [(PLUGIN_NAME, PLUGIN_VERSION), ("other", "3")]))
    assert support.available and (support.nodes, support.with_plugin) == (2, 2)
    assert "on every node" in support.note


def test_a_mixed_cluster_or_another_version_keeps_the_plain_requests_and_says_so():
    mixed = plugin_support(_nodes([(PLUGIN_NAME, PLUGIN_VERSION)], [], [(PLUGIN_NAME, PLUGIN_VERSION)]))
    assert not mixed.available and (mixed.nodes, mixed.with_plugin) == (3, 2)
    assert mixed.note.startswith(f"2 of 3 nodes have the eqsearch plugin {PLUGIN_VERSION}")
    for other in ("1.6.2", "2.0.1", "3.0.0"):  # older or newer: one version is spoken, no feature matrix
        support = plugin_support(_nodes([(PLUGIN_NAME, other)], [(PLUGIN_NAME, PLUGIN_VERSION)]))
        assert not support.available and f"versions seen: {', '.join(sorted({other, PLUGIN_VERSION}))}" in support.note
        assert "\n" not in support.note


def test_a_cluster_without_the_plugin_or_without_nodes_keeps_the_plain_requests():
    for answer in (_nodes([], [("analysis-icu", "9.2.4")]), {"nodes": {}}, {}):
        support = plugin_support(answer)
        assert not support.available and "no eqsearch plugin" in support.note
        assert "\n" not in support.note  # one line, for es check and the admin page


def _spans_of_plain(body: dict) -> list[tuple[str, float]]:
    rescores = body["rescore"] if isinstance(body["rescore"], list) else [body["rescore"]]
    clauses = []
    for clause in str(rescores).split("'constant_score': ")[1:]:
        span = clause.split("'structure_spans': '")[1].split("'")[0]
        boost = float(clause.split("'boost': ")[1].split("}")[0])
        clauses.append((span, boost))
    return sorted(clauses)


def test_the_plugin_rescore_carries_the_plain_rescores_spans_with_their_sizes():
    latex = r"\sum_{k=0}^{n} \binom{n}{k} x^k y^{n-k} = (x + y)^n"
    structure = structure_of_layout(parse_layout_latex(latex), span_kinds=QUERY_SPAN_KINDS)
    for candidate_sizes in (True, False):
        kwargs = {**RERANK, "candidate_sizes": candidate_sizes}
        plain = structure_body(structure, StructureList(50, **kwargs), [])
        native = structure_body(structure, StructureList(50, native=True, **kwargs), [])
        assert native["query"] == plain["query"]
        rescore = native["rescore"]
        assert rescore["window_size"] == 300
        sent = rescore[STRUCTURE_RESCORER]
        assert sent["query_size"] == structure.size and sent["candidate_sizes"] is candidate_sizes
        pairs = sorted(
            (span, 0.5 * size / structure.size) for span, size in zip(sent["spans"], sent["sizes"], strict=True)
        )
        assert pairs == _spans_of_plain(plain)
        assert all(size >= MIN_RERANK_SPAN for size in sent["sizes"])
        assert {span[0] for span in sent["spans"]} == {"r", "g"}  # the exact kind is not matched by the rerank


def test_a_long_query_sends_the_plugin_its_largest_spans_of_each_kind_as_the_plain_request_does():
    long = "+".join(rf"\frac{{x_{{{i}}}^{{2}}}}{{y_{{{i}}}+1}}" for i in range(700))
    structure = formula_structure(None, long)
    native = structure_body(structure, StructureList(50, native=True, **RERANK), [])
    spans = native["rescore"][STRUCTURE_RESCORER]["spans"]
    plain = structure_body(structure, StructureList(50, **RERANK), [])
    assert sorted(spans) == [span for span, _ in _spans_of_plain(plain)]
    assert max(sum(span.startswith(kind) for span in spans) for kind in ("r", "g")) == MAX_RERANK_SPANS
    assert len(str(native["rescore"])) < len(str(plain["rescore"])) / 3  # a list of hashes, not a clause per span


def test_no_rescore_without_a_window_a_weight_or_spans():
    structure = formula_structure(None, "x")
    assert "rescore" not in structure_body(structure, StructureList(10, native=True, **RERANK), [])
    structure = formula_structure(None, "a^2 + b^2 = c^2")
    for window, weight in ((0, 0.5), (300, 0.0)):
        plan = StructureList(10, rerank_window=window, rerank_weight=weight, native=True)
        assert "rescore" not in structure_body(structure, plan, [])


def _rescores(body: dict) -> list[dict]:
    return body["rescore"] if isinstance(body["rescore"], list) else [body["rescore"]]


def test_the_forward_index_bm25_carries_the_plain_rescores_terms_and_counts():
    """The rare-terms first stage's other terms, added on the window: the same terms with the same boosts as the plain
    request's ``term`` clauses, in the same window."""
    structure = formula_structure(None, "x^2 + x^2 + y = z")
    rare = sorted(set(structure.tokens))[:3]
    kwargs = {**RERANK, "first_stage": "rare-terms", "first_stage_share": 0.05, "native": True}
    plain, native = (
        _rescores(structure_body(structure, StructureList(100, forward_index=f, **kwargs), [], rare))[0]
        for f in (False, True)
    )
    clauses = plain["query"]["rescore_query"]["bool"]["should"]
    boosts = dict(_clause(clause) for clause in clauses)
    sent = native[BM25_RESCORER]
    assert native["window_size"] == plain["window_size"] == 300 and sent["mode"] == "add"
    assert dict(zip(sent["terms"], sent["boosts"], strict=True)) == boosts
    assert not set(rare) & set(sent["terms"]) and max(sent["boosts"]) > 1.0  # repeated terms carry their counts
    # without the plugin, the forward index is not used
    plain_only = StructureList(100, forward_index=True, **{**kwargs, "native": False})
    assert BM25_RESCORER not in str(structure_body(structure, plain_only, [], rare))


def _clause(clause: dict) -> tuple[str, float]:
    value = clause["term"][STRUCTURE_FIELD]
    return (value["value"], value["boost"]) if isinstance(value, dict) else (value, 1.0)


def test_a_rare_rule_sends_every_term_once_to_the_query_and_to_the_bm25_rescorer_in_the_querys_order():
    """The shard chooses: the first stage is the plugin's query of every distinct term with its count, the rescore
    the BM25 of the same terms with the same rule, in the same (the query's) order, since the rule breaks its ties by
    it; the sub-expression rescore after it as before. Without the plugin or its forward index, the rule is not
    sent."""
    structure = formula_structure(None, "x^2 + x^2 + y = z")
    body = structure_body(structure, StructureList(100, **SHARD), [])
    query = body["query"]["bool"]["must"][0][TERMS_QUERY]
    counts = dict(Counter(structure.tokens))
    assert query["terms"] == list(counts) and query["boosts"] == [float(c) for c in counts.values()]
    assert query["rare"] == {"max_share": 0.05, "min_matches": 300, "at_least": RARE_AT_LEAST}
    bm25, sub = _rescores(body)
    assert bm25["window_size"] == 300 and bm25[BM25_RESCORER]["mode"] == "add"
    assert bm25[BM25_RESCORER]["terms"] == list(counts) and bm25[BM25_RESCORER]["except_rare"] == query["rare"]
    assert STRUCTURE_RESCORER in sub
    assert terms_query(counts) == {TERMS_QUERY: {k: v for k, v in query.items() if k != "rare"}}
    for off in ({"forward_index": False}, {"native": False}):
        assert TERMS_QUERY not in str(structure_body(structure, StructureList(100, **{**SHARD, **off}), []))


def test_term_at_a_time_asks_for_the_deepest_hit_read_among_the_filtered_documents():
    """``top`` covers what the search reads of the first stage, the page and the rescore window, whichever is
    deeper (the plan's, `test_plan`); the search's filters go into the query too (and stay beside it), so that its
    top hits pass them."""
    structure = formula_structure(None, "x^2 + x^2 + y = z")

    def first_stage(k: int, filters: list, top: int) -> dict:
        body = structure_body(structure, StructureList(k, **SHARD, top=top), filters)
        return body["query"]["bool"]["must"][0][TERMS_QUERY]

    assert first_stage(100, [], 300)["top"] == 300
    assert "top" not in first_stage(100, [], 0)
    inline = {"term": {"inline": False}}
    filtered = structure_body(structure, StructureList(100, **SHARD, top=300), [inline])["query"]["bool"]
    assert filtered["must"][0][TERMS_QUERY]["filter"] == {"bool": {"filter": [inline]}}
    assert filtered["filter"] == [inline]
    assert "filter" not in first_stage(100, [], 300)
    assert "top" not in terms_query({"V:x": 1}, RareRule(0.05, 300), filters=[inline])
