"""Display equations found and converted on a set of real papers, against a careful count (benchmarks/ingest.md).

::

    .venv/bin/eqsearch ingest extract PAPERS/* --kind arxiv --out OUT --workers 2 --quiet
    .venv/bin/python benchmarks/ingest_realpapers.py OUT/papers.jsonl --counts COUNTS.json [--before BEFORE.jsonl]

COUNTS.json maps each paper's folder name to its display equations counted carefully (``{"toec": 56, ...}``), or
is a set file (``benchmarks/realpapers2_counts.json``: ``{"papers": {name: {"careful", "area", "split", ...}}}``).
The script prints, per paper and in total: found against the count, the status of what was found (exact = ``ok``,
approximate, failed, diagram), failures and approximations by reason, documents per paper, and inline formulas
per paper. With ``--before`` the same figures of an earlier run come first, and every equation that was ``ok``
before and is anything else after is listed (matched by paper and position; a paper whose count changed is named).
With a set file, ``--split dev`` (or ``held-out-1``, ``dev-3``, ``held-out-4``...: the set file's parts) keeps one
part (papers marked ``excluded`` are never counted), and the figures also come per area, with the papers' titles
checked (a record and a title for every paper; placeholders counted).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any


def _name(record: dict[str, Any]) -> str:
    return str(record["source"]).rstrip("/").rsplit("/", 1)[-1]


def summarize(path: Path, counts: dict[str, int]) -> dict[str, Any]:
    """Per-paper rows and totals of one run."""
    rows: list[dict[str, Any]] = []
    reasons: Counter[str] = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        name = _name(record)
        if name not in counts:
            continue
        equations = [eq for section in record["sections"] for eq in section["equations"]]
        status = Counter(eq["status"] for eq in equations)
        for eq in equations:
            if eq["status"] in ("failed", "approximate"):
                reasons[f"{eq['status']}:{eq['reason']}"] += 1
        rows.append(
            {
                "paper": name,
                "careful": counts[name],
                "found": len(equations),
                "ok": status["ok"],
                "approximate": status["approximate"],
                "failed": status["failed"],
                "diagram": status["diagram"],
                "documents": len(record.get("documents") or []) or 1,
                "title": record.get("title") or "",
                "inline": sum(len(section.get("inline") or []) for section in record["sections"]),
            }
        )
    totals = {
        key: sum(row[key] for row in rows) for key in ("careful", "found", "ok", "approximate", "failed", "diagram")
    }
    totals["found_capped"] = sum(min(row["found"], row["careful"]) for row in rows)
    totals["untitled"] = sorted(row["paper"] for row in rows if not row["title"] or row["title"].startswith("Untitled"))
    totals["papers"] = len(rows)
    totals["missing_papers"] = sorted(set(counts) - {row["paper"] for row in rows})
    return {"rows": sorted(rows, key=lambda r: r["paper"]), "totals": totals, "reasons": dict(reasons.most_common())}


def _statuses(path: Path, names: set[str]) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if _name(record) in names:
            out[_name(record)] = [(eq["status"], eq["latex"]) for s in record["sections"] for eq in s["equations"]]
    return out


def ok_lost(before: Path, after: Path, names: set[str]) -> list[str]:
    """Equations ``ok`` in ``before`` and anything else in ``after`` (paper, position, status, start of the LaTeX);
    papers whose number of equations changed are named instead, since positions no longer match."""
    old, new = _statuses(before, names), _statuses(after, names)
    lost: list[str] = []
    for name in sorted(old):
        if len(old[name]) != len(new.get(name, [])):
            lost.append(f"{name}: {len(old[name])} equations before, {len(new.get(name, []))} after")
            continue
        for k, ((was, _), (now, latex)) in enumerate(zip(old[name], new[name], strict=True)):
            if was == "ok" and now != "ok":
                lost.append(f"{name} #{k}: {now} {' '.join(latex.split())[:80]}")
    return lost


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def report(title: str, summary: dict[str, Any], per_paper: bool) -> None:
    totals = summary["totals"]
    print(f"## {title}: {totals['papers']} papers")
    if per_paper:
        print("| paper | careful | found | ok | approx. | failed | diagram | documents | inline |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in summary["rows"]:
            print(
                f"| {r['paper']} | {r['careful']} | {r['found']} | {r['ok']} | {r['approximate']} | {r['failed']} "
                f"| {r['diagram']} | {r['documents']} | {r['inline']} |"
            )
    careful, found = totals["careful"], totals["found"]
    if "areas" in summary:
        print("| area | papers | careful | found | exact (non-diagram) | approx. | failed | diagram |")
        print("|---|---|---|---|---|---|---|---|")
        for area, a in summary["areas"].items():
            non_diagram = a["found"] - a["diagram"]
            print(
                f"| {area} | {a['papers']} | {a['careful']} | {a['found_capped']} "
                f"({_percent(a['found_capped'], a['careful'])}) | {a['ok']} of {non_diagram} "
                f"({_percent(a['ok'], non_diagram)}) | {a['approximate']} | {a['failed']} | {a['diagram']} |"
            )
        print(f"titles: placeholder for {totals['untitled'] or 'none'}")
    equations = found - totals["diagram"]
    print(
        f"found {totals['found_capped']} of {careful} counted ({_percent(totals['found_capped'], careful)}; "
        f"{found} in all); of the found: "
        f"ok {totals['ok']} ({_percent(totals['ok'], found)}), approximate {totals['approximate']}, "
        f"failed {totals['failed']}, diagram {totals['diagram']}; exact among the non-diagrams "
        f"{_percent(totals['ok'], equations)}"
    )
    print(f"by reason: {summary['reasons'] or 'none'}")
    inline = [r["inline"] for r in summary["rows"]]
    if inline:
        print(
            f"inline formulas per paper: total {sum(inline)}, median {statistics.median(inline):g}, "
            f"mean {statistics.mean(inline):.0f}, max {max(inline)}"
        )
    if totals["missing_papers"]:
        print(f"papers not in the run: {totals['missing_papers']}")
    print()


def by_area(summary: dict[str, Any], areas: dict[str, str]) -> dict[str, Any]:
    """The summary with its rows added up per area (``summary["areas"]``)."""
    out: dict[str, dict[str, int]] = {}
    for row in summary["rows"]:
        a = out.setdefault(areas[row["paper"]], Counter())
        a["papers"] += 1
        for key in ("careful", "found", "ok", "approximate", "failed", "diagram"):
            a[key] += row[key]
        a["found_capped"] += min(row["found"], row["careful"])
    summary["areas"] = {area: dict(out[area]) for area in sorted(out)}
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("papers", type=Path, help="papers.jsonl of the run to report")
    parser.add_argument("--counts", type=Path, required=True, help="JSON: name -> careful count, or a set file")
    parser.add_argument("--before", type=Path, help="papers.jsonl of an earlier run, reported first")
    parser.add_argument(
        "--split", default="all", help="a set file's part (dev, held-out-1, dev-3, held-out-5...) or all"
    )
    args = parser.parse_args()
    raw = json.loads(args.counts.read_text(encoding="utf-8"))
    areas: dict[str, str] = {}
    if "papers" in raw:  # a set file
        entries = {
            k: v for k, v in raw["papers"].items() if v["split"] != "excluded" and args.split in ("all", v["split"])
        }
        counts = {k: int(v["careful"]) for k, v in entries.items()}
        areas = {k: v["area"] for k, v in entries.items()}
    else:
        counts = {str(k): int(v) for k, v in raw.items()}

    def summary_of(path: Path) -> dict[str, Any]:
        found = summarize(path, counts)
        return by_area(found, areas) if areas else found

    if args.before is not None:
        report(f"before ({args.split})", summary_of(args.before), per_paper=False)
    report(f"after ({args.split})", summary_of(args.papers), per_paper=True)
    if args.before is not None:
        lost = ok_lost(args.before, args.papers, set(counts))
        print(f"ok before, not ok after: {len(lost)}")
        for line in lost:
            print(f"  {line}")


if __name__ == "__main__":
    main()
