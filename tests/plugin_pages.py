"""The plugin tests' side-by-side of the search service with its plan as made and a variant of it (one of the plugin's
requests left out): the same pages either way (`same_pages_with_and_without`)."""

from __future__ import annotations

from typing import Any

#: Formulas whose pages `same_pages_with_and_without` compares.
SERVICE_FORMULAS = ["x^2 + y^2 = z^2", r"\frac{a+b}{c} = \sum_{i=1}^{n} a_i b_i", r"\int_0^1 f(x)\,dx"]


def same_pages_with_and_without(
    client: Any, alias: str, converter: Any, variant: Any, check_structure: Any, dims: int = 8
) -> dict:
    """Two search services of the default ranker on ``alias`` (candidate depth 100, the index's vectors ``dims``
    wide), the second with each plan made ``variant(plan)`` (`SearchService.plan_variant`); for each of
    `SERVICE_FORMULAS` the first's structural request passes ``check_structure(body)`` and both give the same first
    page (ids and scores). Returns the services, as planned (True) and the variant (False)."""
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
    services[False].plan_variant = variant
    for latex in SERVICE_FORMULAS:
        query = HybridQuery(latex=latex, highlight=False)
        check_structure(dict(services[True].requests(query))["structure"])
        pages = [[(h.eq_id, h.score) for h in service.search(query).hits] for service in services.values()]
        assert pages[0] == pages[1] and pages[0]
    return services
