"""`eqsearch search`: hybrid search on the command line, through the same `SearchService` as the web app.

Nothing heavy is imported at module level: `eqsearch --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `search` command."""
    search = subparsers.add_parser(
        "search",
        help="hybrid search: a LaTeX formula and/or keywords",
        description="A formula is found by its structure (BM25 over the symbols and symbol pairs of its layout tree,\n"
        "the top 300 reranked by the sub-expressions they share with it, letters renamed) and by the model's\n"
        "vector (kNN), blended; keywords by BM25 over the papers' text; the two sides fused (--fusion,\n"
        "--formula-weight). ?a, ?b in a formula stand for any sub-expression, a repeated one for the same one.\n"
        "Each hit says which channels found it. Prints the hits.",
        epilog="examples:\n"
        "  eqsearch search 'P(A|B)=\\frac{P(B|A)P(A)}{P(B)}' --inline exclude\n"
        "  eqsearch search '?a^2+?b^2=?c^2' --size 20\n"
        "  eqsearch search -k 'Ising model' --group --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    search.add_argument("latex", nargs="?", help="a formula in LaTeX (quote it)")
    search.add_argument("-k", "--keywords", help="keywords matched against titles, abstracts and context")
    search.add_argument("--category", action="append", default=[], help="keep this arXiv category (repeatable)")
    search.add_argument("--year-from", type=int)
    search.add_argument("--year-to", type=int)
    search.add_argument("--paper", help="only this paper's equations")
    search.add_argument("--formula-weight", type=float, default=0.5, help="formula <-> keywords balance (0.5)")
    search.add_argument(
        "--fusion",
        choices=("evidence", "rrf", "linear"),
        default="evidence",
        help="evidence (default): the formula ranks equations, the words re-weigh them by their paper and context",
    )
    search.add_argument("--page", type=int, default=1)
    search.add_argument("--size", type=int, default=10)
    search.add_argument("--group", action="store_true", help="one result per paper")
    search.add_argument(
        "--inline", choices=("include", "exclude", "only"), default="include",
        help="inline formulas of the running text: searched with the displays (include, default), left out "
        "(exclude: display equations only) or alone (only)",
    )  # fmt: skip
    search.add_argument("--like", metavar="EQ_ID", help="equations like this stored equation instead")
    search.add_argument("--bundle", help="model bundle directory (default: the installed one)")
    search.add_argument("--json", action="store_true", help="print JSON")
    search.set_defaults(handler=_search, parser=search)


def _search(args: argparse.Namespace) -> int:
    from eqsearch.engine.es.client import connect
    from eqsearch.engine.latex.converter import KatexConverter
    from eqsearch.engine.model.encoder import load_encoder, onnx_provider_setting
    from eqsearch.engine.search.query import HybridQuery
    from eqsearch.engine.search.service import SearchService

    if not args.latex and not args.keywords and not args.like:
        args.parser.error("give a LaTeX formula, --keywords, or --like EQ_ID")
    try:
        query = HybridQuery(
            latex=args.latex,
            keywords=args.keywords,
            categories=tuple(args.category),
            year_from=args.year_from,
            year_to=args.year_to,
            paper_id=args.paper,
            formula_weight=args.formula_weight,
            fusion=args.fusion,
            page=args.page,
            size=args.size,
            group_by_paper=args.group,
            inline=args.inline,
        )
    except ValueError as error:
        args.parser.error(str(error))
    from eqsearch.engine.es.config import EsConfig

    encoder = load_encoder(args.bundle, provider=onnx_provider_setting(os.environ))  # a bad setting fails first
    config = EsConfig.from_env()
    client, _ = connect(config)
    with KatexConverter() as converter:
        service = SearchService(client, encoder, converter, index_prefix=config.index_prefix)
        results = service.more_like_equation(args.like, args.size) if args.like else service.search(query)
    if args.json:
        print(json.dumps(_jsonable(results), indent=2, ensure_ascii=False))
        return 0
    if results.latex_error:
        print(f"LaTeX error: {results.latex_error}", file=sys.stderr)
    for warning in results.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    first = (results.page - 1) * results.size
    for rank, hit in enumerate(results.hits, start=first + 1):
        year = f" ({hit.year})" if hit.year else ""
        found_by = "+".join(hit.channels) or hit.matched
        inline = " inline" if hit.inline else ""
        print(f"{rank:3}. [{found_by}] {hit.score:.4f}  {hit.eq_id}{inline}  {hit.title}{year}")
        print(f"      {' '.join(hit.latex.split())[:150]}")  # on one line, whatever the source's layout
        if hit.section_title:
            print(f"      section: {hit.section_title}")
    print(f"{results.total:,} matches, page {results.page}, {results.took_ms:.0f} ms, analyzer {results.analyzer}",
          file=sys.stderr)  # fmt: skip
    return 0 if results.hits or not results.latex_error else 2


def _jsonable(value: Any) -> Any:
    from dataclasses import asdict, is_dataclass

    return asdict(value) if is_dataclass(value) else value
