"""Two runs of the same real-paper folders compared equation by equation: what changed status, and what did not.

::

    python benchmarks/realpapers_compare.py BEFORE/papers.jsonl AFTER/papers.jsonl [--show 20]

Displays are matched by paper (the source folder's name) and position, inline formulas by paper and their LaTeX (in
order, as a multiset, so that an extra or missing formula does not shift the others). Prints, for displays and
inline formulas apart: the status transitions (``approximate -> ok: 12``), the formulas ``ok`` before and anything
else after (each named: a regression), the ``ok`` formulas whose MathML changed, and the papers whose number of
displays changed. Exit status 1 when an ``ok`` was lost. Nothing of eqsearch is imported.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any


def _name(record: dict[str, Any]) -> str:
    return str(record["source"]).rstrip("/").rsplit("/", 1)[-1]


def load(path: Path) -> dict[str, dict[str, list[tuple[str, str, str | None]]]]:
    """paper -> {"display": [(status, latex, mathml)...], "inline": [...]}, in document order."""
    papers: dict[str, dict[str, list[tuple[str, str, str | None]]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        entry = papers.setdefault(_name(record), {"display": [], "inline": []})
        for section in record.get("sections") or []:
            for eq in section.get("equations") or []:
                entry["display"].append((eq["status"], eq["latex"], eq.get("mathml")))
            for formula in section.get("inline") or []:
                entry["inline"].append((formula["status"], formula["latex"], formula.get("mathml")))
    return papers


def _pairs(kind: str, before: list, after: list) -> list[tuple[tuple, tuple]]:
    if kind == "display" and len(before) == len(after):
        return list(zip(before, after, strict=True))
    # inline formulas (and displays of a paper whose count changed): matched by their LaTeX, in order
    waiting: dict[str, list[tuple]] = defaultdict(list)
    for item in after:
        waiting[item[1]].append(item)
    pairs = []
    for item in before:
        if waiting[item[1]]:
            pairs.append((item, waiting[item[1]].pop(0)))
    return pairs


def compare(before: Path, after: Path, show: int) -> int:
    old, new = load(before), load(after)
    lost_total = 0
    for kind in ("display", "inline"):
        transitions: Counter[str] = Counter()
        lost: list[str] = []
        changed_mathml: list[str] = []
        counts_changed: list[str] = []
        for paper in sorted(old.keys() & new.keys()):
            a, b = old[paper][kind], new[paper][kind]
            if len(a) != len(b):
                counts_changed.append(f"{paper}: {len(a)} -> {len(b)}")
            for (s1, latex, m1), (s2, _, m2) in _pairs(kind, a, b):
                transitions[f"{s1} -> {s2}"] += 1
                if s1 == "ok" and s2 != "ok":
                    lost.append(f"{paper}: {s1} -> {s2}: {' '.join(latex.split())[:120]}")
                elif s1 == s2 == "ok" and m1 != m2:
                    changed_mathml.append(f"{paper}: {' '.join(latex.split())[:120]}")
        same = sum(v for k, v in transitions.items() if k.split(" -> ")[0] == k.split(" -> ")[1])
        print(f"== {kind}: {sum(transitions.values())} matched, {same} with the same status")
        for transition, count in sorted(transitions.items(), key=lambda kv: -kv[1]):
            a_status, b_status = transition.split(" -> ")
            if a_status != b_status:
                print(f"  {transition}: {count}")
        print(f"  ok lost: {len(lost)}; ok with other MathML: {len(changed_mathml)}")
        for line in lost[:show]:
            print(f"    LOST {line}")
        for line in changed_mathml[:show]:
            print(f"    MATHML {line}")
        for line in counts_changed[:show]:
            print(f"    COUNT {line}")
        lost_total += len(lost)
    missing = sorted(old.keys() ^ new.keys())
    if missing:
        print(f"papers in only one run: {', '.join(missing)}")
    return 1 if lost_total else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--show", type=int, default=20, help="how many changed formulas to list per kind")
    args = parser.parse_args(argv)
    return compare(args.before, args.after, args.show)


if __name__ == "__main__":
    sys.exit(main())
