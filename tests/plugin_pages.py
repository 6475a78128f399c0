"""The plugin tests' side-by-side of the search service with one of the plugin's features on and off: the same
pages either way (`same_pages_with_and_without`)."""

from __future__ import annotations

from typing import Any

#: Formulas whose pages `same_pages_with_and_without` compares.
SERVICE_FORMULAS = ["x^2 + y^2 = z^2", r"\frac{a+b}{c} = \sum_{i=1}^{n} a_i b_i", r"\int_0^1 f(x)\,dx"]


def same_pages_with_and_without(
    client: Any, alias: str, converter: Any, turn_off: Any, check_structure: Any, dims: int = 8
) -> dict:
    """Two search services of the default ranker on ``alias`` (candidate depth 100, the index's vectors ``dims``
    wide), the second with a plugin feature turned off by ``turn_off(plugin_use)``; for each of `SERVICE_FORMULAS`
    the first's structural request passes ``check_structure(body)`` and both give the same first page (ids and
    scores). Returns the services, on and off."""
    from eqsearch.engine.model.patterns import read_query_variables
    from eqsearch.engine.search.query import HybridQuery
    from eqsearch.engine.search.rankers import DEFAULT_RANKER, get_ranker
    from eqsearch.engine.search.service import SearchService
    from hashing_encoder import HashingEncoder

    prefix = alias.removesuffix("-equations")
    encoder = HashingEncoder(dim=dims)
    ranking = get_ranker(DEFAULT_RANKER)
    services = {
        on: SearchService(client, encoder, converter, index_prefix=prefix, ranking=ranking, candidate_depth=100)
        for on in (True, False)
    }
    turn_off(services[False].plugin)
    for latex in SERVICE_FORMULAS:
        query = HybridQuery(latex=latex, highlight=False)
        formula = services[True].formulas.get(read_query_variables(latex))
        check_structure(dict(services[True]._searches(query, formula, 100, []))["structure"])
        pages = [[(h.eq_id, h.score) for h in service.search(query).hits] for service in services.values()]
        assert pages[0] == pages[1] and pages[0]
    return services
