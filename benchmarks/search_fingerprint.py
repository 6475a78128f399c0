"""Benchmark tool: a fingerprint of what the search service returns, to check that a change of the search path keeps
its behaviour identical.

``record`` runs a fixed set of searches through the production `SearchService` on a kept index (an ``eqsearch
evaluate formulas --keep`` prefix): the development topics as formula-only queries, the dev rows of the second hybrid
set as combined and keyword-only queries, the three fusions, paging past the candidate depth, the inline filters,
grouping by paper, formulas with query variables and a LaTeX error; for each ranker asked, with the plugin as the
cluster offers it and with the plain requests. Every page is written down: ids, scores, what matched, the channels,
the highlights, the totals, the warnings. ``compare`` says which searches differ between two fingerprints (none, for a
change that keeps the behaviour). Record before and after the change on the same index::

    python benchmarks/search_fingerprint.py record --prefix P --dev DIR --out before.json
    python benchmarks/search_fingerprint.py compare before.json after.json
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

from devset import add_dev_argument, dev_dir
from eqsearch.engine.es import EsConfig, connect
from eqsearch.engine.latex import KatexConverter
from eqsearch.engine.model import load_encoder
from eqsearch.engine.search.query import HybridQuery
from eqsearch.engine.search.rankers import get_ranker
from eqsearch.engine.search.service import SearchService

RANKERS = (
    "structure+embedding+rerank",
    "embedding",
    "structure",
    "structure+embedding+rerank+context",
    "maxsim",
    "structure+embedding+rerank+maxsim",
)
HYBRID = Path(__file__).resolve().parent.parent / "evaluation" / "data" / "hybrid-dev2.tsv"
PATTERNS = (r"?a^2 + ?b^2 = ?c^2", r"\frac{?x}{?y}", r"\sum_{?k=0}^{n} ?f", r"\int ?f \, dx", r"e^{?x}")


def queries(dev: Path) -> list[dict[str, Any]]:
    """The searches of a fingerprint, as `HybridQuery` arguments."""
    with (dev / "topics.tsv").open(encoding="utf-8") as handle:
        topics = [row["latex"] for row in csv.DictReader(handle, delimiter="\t")]
    with HYBRID.open(encoding="utf-8") as handle:
        rows = csv.DictReader((line for line in handle if not line.startswith("#")), delimiter="\t")
        hybrid = [row for row in rows if row["split"] == "dev"][:20]
    out: list[dict[str, Any]] = [{"latex": latex} for latex in topics]
    for i, row in enumerate(hybrid):
        out += [{"latex": row["latex"], "keywords": row["keywords"]}, {"keywords": row["keywords"]}]
        if i < 5:
            both = {"latex": row["latex"], "keywords": row["keywords"]}
            out += [
                {**both, "fusion": "rrf", "formula_weight": 0.3},
                {**both, "fusion": "linear", "group_by_paper": True},
                {**both, "inline": "only", "page": 2},
            ]
    for latex in topics[:6]:
        out += [
            {"latex": latex, "page": 3, "size": 20},
            {"latex": latex, "inline": "exclude", "formula_weight": 1.0},
            {"latex": latex, "page": 11},
        ]
    out += [{"latex": pattern} for pattern in PATTERNS]
    out += [{"latex": r"\frac{1}{"}, {"latex": "x^2", "keywords": "integral", "group_by_paper": True}]
    return out


def page(results: Any) -> dict[str, Any]:
    """Everything a page says."""
    hits = [
        [
            hit.eq_id,
            repr(hit.score),
            list(hit.channels),
            repr(hit.formula_highlight),
            repr(hit.formula_score),
            repr(hit.text_score),
            hit.matched,
            repr(hit.highlights),
        ]
        for hit in results.hits
    ]
    groups = [[group.paper_id, [hit.eq_id for hit in group.hits]] for group in results.groups]
    return {
        "hits": hits,
        "groups": groups,
        "total": results.total,
        "warnings": list(results.warnings),
        "latex_error": results.latex_error,
    }


def record(args: argparse.Namespace) -> None:
    client, _ = connect(EsConfig.from_env())
    asked = queries(dev_dir(args.dev))
    fingerprint: dict[str, list[Any]] = {}
    with KatexConverter() as converter:
        encoder = load_encoder(None)
        for name in args.rankers:
            for plugin in (None, False):
                service = SearchService(
                    client, encoder, converter, index_prefix=args.prefix, ranking=get_ranker(name), plugin=plugin
                )
                key = f"{name} plugin={'detected' if plugin is None else 'off'}"
                fingerprint[key] = []
                for arguments in asked:
                    try:
                        answer = page(service.search(HybridQuery(**arguments)))
                    except Exception as error:  # an error is part of the behaviour
                        answer = {"error": f"{type(error).__name__}: {error}"}
                    fingerprint[key].append([arguments, answer])
                print(f"{key}: {len(asked)} searches", flush=True)
    Path(args.out).write_text(json.dumps(fingerprint, indent=0), encoding="utf-8")


def compare(args: argparse.Namespace) -> None:
    before, after = (json.loads(Path(path).read_text(encoding="utf-8")) for path in (args.before, args.after))
    searches = differ = 0
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key, []), after.get(key, [])
        changed = [old[k][0] for k in range(min(len(old), len(new))) if old[k] != new[k]]
        searches += max(len(old), len(new))
        differ += len(changed) + abs(len(old) - len(new))
        for arguments in changed[:3]:
            print(f"{key}: differs for {arguments}")
    print(json.dumps({"searches": searches, "differ": differ, "configurations": len(set(before) | set(after))}))
    if differ:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    recording = commands.add_parser("record", help="run the searches and write their pages")
    recording.add_argument("--prefix", required=True, help="the kept index's prefix")
    recording.add_argument("--out", required=True, help="the fingerprint's JSON file")
    recording.add_argument("--rankers", nargs="+", default=list(RANKERS))
    add_dev_argument(recording)
    comparing = commands.add_parser("compare", help="which searches differ between two fingerprints")
    comparing.add_argument("before")
    comparing.add_argument("after")
    args = parser.parse_args()
    {"record": record, "compare": compare}[args.command](args)


if __name__ == "__main__":
    main()
