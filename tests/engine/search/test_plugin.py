"""What a ``_nodes/plugins`` answer says about eqsearch's plugin (every node, none, a mixed cluster, another major
version), and the plugin's rescore: the same sub-expressions, sizes and weight as the plain request's clauses; the
first stage whose shard chooses the rare terms (plugin 1.3)."""

from __future__ import annotations

from collections import Counter

from eqsearch.engine.index.mappings import STRUCTURE_FIELD
from eqsearch.engine.model.layout import parse_layout_latex
from eqsearch.engine.model.structure import QUERY_SPAN_KINDS, formula_structure, structure_of_layout
from eqsearch.engine.search.plugin import (
    BM25_RESCORER,
    PLUGIN_NAME,
    STRUCTURE_RESCORER,
    TERMS_QUERY,
    plugin_support,
    terms_query,
)
from eqsearch.engine.search.structure_query import MAX_RERANK_SPANS, MIN_RERANK_SPAN, structure_body
from eqsearch.engine.search.termstats import RARE_AT_LEAST, RareRule


def _nodes(*plugins: list[tuple[str, str]]) -> dict:
    return {
        "nodes": {
            f"n{i}": {"name": f"node-{i}", "plugins": [{"name": n, "version": v} for n, v in node]}
            for i, node in enumerate(plugins)
        }
    }


def test_every_node_with_a_compatible_plugin_turns_it_on():
    support = plugin_support(_nodes([(PLUGIN_NAME, "1.0.0")], [(PLUGIN_NAME, "1.2.0"), ("other", "3")]))
    assert support.available and (support.nodes, support.with_plugin) == (2, 2)
    assert "on every node" in support.note


def test_a_mixed_cluster_or_another_major_version_keeps_the_plain_requests_and_says_so():
    mixed = plugin_support(_nodes([(PLUGIN_NAME, "1.0.0")], [], [(PLUGIN_NAME, "1.0.0")]))
    assert not mixed.available and (mixed.nodes, mixed.with_plugin) == (3, 2)
    assert mixed.note.startswith("mixed cluster: 2 of 3 nodes")
    newer = plugin_support(_nodes([(PLUGIN_NAME, "2.0.0")]))
    assert not newer.available and "versions seen: 2.0.0" in newer.note


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
        kwargs = {"rerank_window": 300, "rerank_weight": 0.5, "candidate_sizes": candidate_sizes}
        plain = structure_body(structure, 50, [], **kwargs)
        native = structure_body(structure, 50, [], plugin=True, **kwargs)
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
    native = structure_body(structure, 50, [], rerank_window=300, rerank_weight=0.5, plugin=True)
    spans = native["rescore"][STRUCTURE_RESCORER]["spans"]
    plain = structure_body(structure, 50, [], rerank_window=300, rerank_weight=0.5)
    assert sorted(spans) == [span for span, _ in _spans_of_plain(plain)]
    assert max(sum(span.startswith(kind) for span in spans) for kind in ("r", "g")) == MAX_RERANK_SPANS
    assert len(str(native["rescore"])) < len(str(plain["rescore"])) / 3  # a list of hashes, not a clause per span


def test_no_rescore_without_a_window_a_weight_or_spans():
    structure = formula_structure(None, "x")
    assert "rescore" not in structure_body(structure, 10, [], rerank_window=300, rerank_weight=0.5, plugin=True)
    structure = formula_structure(None, "a^2 + b^2 = c^2")
    assert "rescore" not in structure_body(structure, 10, [], rerank_window=0, rerank_weight=0.5, plugin=True)
    assert "rescore" not in structure_body(structure, 10, [], rerank_window=300, rerank_weight=0.0, plugin=True)


def test_the_bm25_rescorer_needs_version_1_2_on_every_node():
    assert plugin_support(_nodes([(PLUGIN_NAME, "1.2.0")], [(PLUGIN_NAME, "1.2.1")])).bm25
    older = plugin_support(_nodes([(PLUGIN_NAME, "1.2.0")], [(PLUGIN_NAME, "1.1.0")]))
    assert older.available and older.maxsim and not older.bm25


def _rescores(body: dict) -> list[dict]:
    return body["rescore"] if isinstance(body["rescore"], list) else [body["rescore"]]


def test_the_forward_index_bm25_carries_the_plain_rescores_terms_and_counts():
    """The default's rest terms (added) and the kNN window's every term (in place of the cosine): the same terms
    with the same boosts as the plain request's ``term`` clauses, in the same window."""
    structure = formula_structure(None, "x^2 + x^2 + y = z")
    rare = sorted(set(structure.tokens))[:3]
    kwargs = {"rerank_window": 300, "rerank_weight": 0.5, "first_stage": rare, "plugin": True}
    plain, native = (_rescores(structure_body(structure, 100, [], forward_index=f, **kwargs))[0] for f in (0, 1))
    clauses = plain["query"]["rescore_query"]["bool"]["should"]
    boosts = dict(_clause(clause) for clause in clauses)
    sent = native[BM25_RESCORER]
    assert native["window_size"] == plain["window_size"] == 300 and sent["mode"] == "add"
    assert dict(zip(sent["terms"], sent["boosts"], strict=True)) == boosts
    assert not set(rare) & set(sent["terms"]) and max(sent["boosts"]) > 1.0  # repeated terms carry their counts
    knn = {"structure_vector": [1.0] * 4, "knn_window": 500, "rerank_window": 300, "rerank_weight": 0.5}
    every = _rescores(structure_body(structure, 100, [], plugin=True, forward_index=True, **knn))[0]
    assert every["window_size"] == 500 and every[BM25_RESCORER]["mode"] == "replace"
    assert sorted(every[BM25_RESCORER]["terms"]) == sorted(set(structure.tokens))
    # without the plugin, the forward index is not used
    assert BM25_RESCORER not in str(
        structure_body(structure, 100, [], forward_index=True, **{**kwargs, "plugin": False})
    )


def _clause(clause: dict) -> tuple[str, float]:
    value = clause["term"][STRUCTURE_FIELD]
    return (value["value"], value["boost"]) if isinstance(value, dict) else (value, 1.0)


def test_the_shards_choice_of_rare_terms_needs_version_1_3_on_every_node():
    assert plugin_support(_nodes([(PLUGIN_NAME, "1.3.0")], [(PLUGIN_NAME, "1.3.2")])).terms
    older = plugin_support(_nodes([(PLUGIN_NAME, "1.3.0")], [(PLUGIN_NAME, "1.2.1")]))
    assert older.available and older.bm25 and not older.terms


def test_a_rare_rule_sends_every_term_once_to_the_query_and_to_the_bm25_rescorer_in_the_querys_order():
    """The shard chooses: the first stage is the plugin's query of every distinct term with its count, the rescore
    the BM25 of the same terms with the same rule, in the same (the query's) order, since the rule breaks its ties by
    it; the sub-expression rescore after it as before. Without the plugin's forward index, or with a structural kNN
    first stage, the rule is not sent."""
    structure = formula_structure(None, "x^2 + x^2 + y = z")
    rule = RareRule(0.05, 300)
    kwargs = {"rerank_window": 300, "rerank_weight": 0.5, "plugin": True, "forward_index": True}
    body = structure_body(structure, 100, [], rare_rule=rule, **kwargs)
    query = body["query"]["bool"]["must"][0][TERMS_QUERY]
    counts = dict(Counter(structure.tokens))
    assert query["terms"] == list(counts) and query["boosts"] == [float(c) for c in counts.values()]
    assert query["rare"] == {"max_share": 0.05, "min_matches": 300, "at_least": RARE_AT_LEAST}
    bm25, sub = _rescores(body)
    assert bm25["window_size"] == 300 and bm25[BM25_RESCORER]["mode"] == "add"
    assert bm25[BM25_RESCORER]["terms"] == list(counts) and bm25[BM25_RESCORER]["except_rare"] == query["rare"]
    assert STRUCTURE_RESCORER in sub
    assert terms_query(counts) == {TERMS_QUERY: {k: v for k, v in query.items() if k != "rare"}}
    for off in ({"forward_index": False}, {"plugin": False}, {"structure_vector": [1.0] * 4, "knn_window": 300}):
        assert TERMS_QUERY not in str(structure_body(structure, 100, [], rare_rule=rule, **{**kwargs, **off}))


def test_the_term_at_a_time_first_stage_needs_version_1_6_on_every_node():
    assert plugin_support(_nodes([(PLUGIN_NAME, "1.6.0")], [(PLUGIN_NAME, "1.6.1")])).terms_top
    older = plugin_support(_nodes([(PLUGIN_NAME, "1.6.0")], [(PLUGIN_NAME, "1.5.0")]))
    assert older.available and older.terms and not older.terms_top


def test_term_at_a_time_asks_for_the_deepest_hit_read_among_the_filtered_documents():
    """``top`` covers what the search reads of the first stage, the page and the rescore window, whichever is
    deeper; the search's filters go into the query too (and stay beside it), so that its top hits pass them."""
    structure = formula_structure(None, "x^2 + x^2 + y = z")
    kwargs = {"rerank_window": 300, "rerank_weight": 0.5, "plugin": True, "forward_index": True}
    kwargs["rare_rule"] = RareRule(0.05, 300)

    def first_stage(k: int, filters: list, **extra) -> dict:
        return structure_body(structure, k, filters, **{**kwargs, **extra})["query"]["bool"]["must"][0][TERMS_QUERY]

    assert first_stage(100, [], term_at_a_time=True)["top"] == 300
    assert first_stage(1000, [], term_at_a_time=True)["top"] == 1000
    assert "top" not in first_stage(100, [])
    inline = {"term": {"inline": False}}
    filtered = structure_body(structure, 100, [inline], term_at_a_time=True, **kwargs)["query"]["bool"]
    assert filtered["must"][0][TERMS_QUERY]["filter"] == {"bool": {"filter": [inline]}}
    assert filtered["filter"] == [inline]
    assert "filter" not in first_stage(100, [], term_at_a_time=True)
    assert "top" not in terms_query({"V:x": 1}, RareRule(0.05, 300), filters=[inline])
