"""The structural list's body, checked without a node: BM25 over the formula's terms with the filters, the
sub-expression rerank and its cap on a long query (the plugin's forms: `test_plugin.py`; the first stage:
`test_rare_terms.py`)."""

from __future__ import annotations


def test_the_structural_search_is_bm25_over_the_formulas_terms_with_the_filters():
    from eqsearch.engine.model import formula_structure
    from eqsearch.engine.search.plan import StructureList
    from eqsearch.engine.search.structure_query import structure_body

    structure = formula_structure(None, "x^2")
    filters = [{"term": {"paper_id": "p"}}]
    body = structure_body(structure, StructureList(40), filters)
    terms = {"bool": {"should": [{"term": {"structure": token}} for token in structure.tokens]}}
    assert body["query"] == {"bool": {"must": [terms], "filter": filters}}
    repeated = structure_body(formula_structure(None, "x + x"), StructureList(40), [])["query"]["bool"]["must"][0][
        "bool"
    ]["should"]
    assert {"term": {"structure": {"value": "V:x", "boost": 2.0}}} in repeated  # once, weighing twice
    assert body["size"] == 40 and "rescore" not in body


def test_the_rerank_multiplies_bm25_by_one_plus_the_largest_shared_subexpressions():
    from eqsearch.engine.model import formula_structure
    from eqsearch.engine.search.plan import StructureList
    from eqsearch.engine.search.structure_query import structure_body

    structure = formula_structure(None, "x^2")  # size 2: spans of size 2 (x^2) and 1 (2)
    body = structure_body(structure, StructureList(40, rerank_window=300, rerank_weight=0.5), [])
    rescore = body["rescore"]
    assert rescore["window_size"] == 300 and rescore["query"]["score_mode"] == "multiply"
    should = rescore["query"]["rescore_query"]["bool"]["should"]
    assert should[0] == {"match_all": {"boost": 1.0}}  # every candidate keeps at least its BM25 score
    exact, general = should[1]["dis_max"]["queries"], should[2]["dis_max"]["queries"]
    boosts = sorted(q["constant_score"]["boost"] for q in exact)
    assert boosts == [0.5]  # weight x span size / query size: 0.5 x 2/2 (one-symbol spans are not looked for)
    assert all(q["constant_score"]["filter"]["term"]["structure_spans"].startswith("g") for q in general)
    assert "rescore" not in structure_body(structure, StructureList(40, rerank_window=300, rerank_weight=0.0), [])


def test_a_long_query_sends_the_rerank_its_largest_sub_expressions_only():
    from eqsearch.engine.model import formula_structure
    from eqsearch.engine.search.plan import StructureList
    from eqsearch.engine.search.structure_query import MAX_RERANK_SPANS, structure_body

    long = "+".join(rf"\frac{{x_{{{i}}}^{{2}}}}{{y_{{{i}}}+1}}" for i in range(300))  # 600 baseline symbols
    structure = formula_structure(None, long)
    renamed = [size for span, size in structure.spans.items() if span.startswith("r") and size >= 2]
    assert len(renamed) > MAX_RERANK_SPANS  # thousands of runs: past what a query may hold
    body = structure_body(structure, StructureList(40, rerank_window=300, rerank_weight=0.5), [])
    sent = body["rescore"]["query"]["rescore_query"]["bool"]["should"][1]["dis_max"]["queries"]
    assert len(sent) == MAX_RERANK_SPANS
    kept = sorted((q["constant_score"]["boost"] * structure.size / 0.5 for q in sent), reverse=True)
    assert [round(size) for size in kept] == sorted(renamed, reverse=True)[:MAX_RERANK_SPANS]  # the largest


def test_the_rerank_asks_for_spans_as_the_index_writes_them():
    from eqsearch.engine.index.documents import structure_fields
    from eqsearch.engine.index.mappings import SPANS_FIELD
    from eqsearch.engine.model import formula_structure
    from eqsearch.engine.search.plan import StructureList
    from eqsearch.engine.search.structure_query import structure_body

    structure = formula_structure(None, r"\frac{a+b}{c}")
    written = set(structure_fields(None, r"\frac{a+b}{c}")[SPANS_FIELD])

    def sent(plan: StructureList) -> set[str]:
        should = structure_body(structure, plan, [])["rescore"]["query"]["rescore_query"]["bool"]["should"]
        return {q["constant_score"]["filter"]["term"][SPANS_FIELD] for m in should[1:] for q in m["dis_max"]["queries"]}

    short = sent(StructureList(40, rerank_window=300, rerank_weight=0.5))
    assert short and short <= written and all(len(term) == 9 for term in short)  # what the writer indexed
    long = sent(StructureList(40, rerank_window=300, rerank_weight=0.5, short_spans=False))  # an index before v11
    assert long <= set(structure.spans) and all(len(span) == 17 for span in long) and len(long) == len(short)
