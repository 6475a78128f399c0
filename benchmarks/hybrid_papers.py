"""Export the papers of the combined-query sets (benchmarks/hybrid.md) from local git copies of their repositories.

::

    python benchmarks/hybrid_papers.py --mirrors MIRRORS --out PAPERS [--set hybrid-dev] [--set hybrid-dev2]

The sets, their papers and the commits are in ``benchmarks/hybrid_papers.json``. hybrid-dev's papers are each
repository's ``.tex``, ``.sty``, ``.bbl`` and ``.cls`` files at the commit, at their paths, less the files a paper
``exclude``s; hybrid-dev2's are exported as their set file (``benchmarks/realpapers3_counts.json``) lists them, after
checking that it names the same repository and commit. Both go through ``realpapers_export.export_paper``, from
``MIRRORS/owner+name/repo``, into ``PAPERS/<set>/<paper>`` (a paper's folder is emptied first). Every query of a
set's query file must name one of its papers. Then::

    .venv/bin/eqsearch evaluate hybrid --prefix hybdev --papers PAPERS/hybrid-dev/* ...
    .venv/bin/eqsearch evaluate hybrid --queries evaluation/data/hybrid-dev2.tsv --prefix hybdev2 \\
        --papers PAPERS/hybrid-dev/* PAPERS/hybrid-dev2/* ...

(the hybdev2 index holds both sets' 37 papers). Nothing of eqsearch is imported.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from realpapers_export import export_paper, repo_files  # the one exporter of real papers

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().with_suffix(".json")


def query_papers(path: Path) -> set[str]:
    """The ``paper`` column of a query file (comment lines start with ``#``, then a header line)."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    column = lines[0].split("\t").index("paper")
    return {line.split("\t")[column] for line in lines[1:]}


def check_queries(name: str, spec: dict) -> list[str]:
    """The problems of a set: queries naming a paper the set does not hold."""
    missing = sorted(query_papers(ROOT / spec["queries"]) - set(spec["papers"]))
    return [f"{name}: {spec['queries']} names papers the set lacks: {', '.join(missing)}"] if missing else []


def export_set(name: str, spec: dict, extensions: tuple[str, ...], mirrors: Path, out: Path) -> list[str]:
    """Export one set's papers into ``out/<name>``; the problems met (a paper with a problem is named, never skipped
    in silence)."""
    listed = json.loads((ROOT / spec["setfile"]).read_text(encoding="utf-8"))["papers"] if "setfile" in spec else {}
    problems = []
    for paper, entry in spec["papers"].items():
        repo = mirrors / entry["repo"].replace("/", "+") / "repo"
        if not repo.exists():
            problems.append(f"{paper}: no local copy of {entry['repo']} ({repo})")
            continue
        target = out / name / paper
        shutil.rmtree(target, ignore_errors=True)
        try:
            if "setfile" in spec:
                source = listed.get(paper)
                if source is None or (source["repo"], source["commit"]) != (entry["repo"], entry["commit"]):
                    problems.append(f"{paper}: {spec['setfile']} does not record {entry['repo']} @ {entry['commit']}")
                    continue
                files = source["files"]
                missing = export_paper(repo, entry["commit"], source["main"], files, target, source.get("folder"))
            else:
                exclude = set(entry.get("exclude", ()))
                files = [
                    path
                    for path in repo_files(repo, entry["commit"])
                    if path.endswith(extensions) and path not in exclude
                ]
                missing = export_paper(repo, entry["commit"], "", files, target, folder="")
        except subprocess.CalledProcessError as error:
            problems.append(f"{paper}: {entry['repo']} @ {entry['commit']}: {error.stderr.decode(errors='replace')}")
            continue
        if missing or not files:
            problems.append(f"{paper}: {len(missing)} of {len(files)} files not found: {', '.join(missing[:5])}")
        print(f"{name}/{paper}: {len(files) - len(missing)} files ({entry['repo']} @ {entry['commit']})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--mirrors", type=Path, required=True, help="bare git copies, OWNER+NAME/repo, of the papers' repositories"
    )
    parser.add_argument("--out", type=Path, required=True, help="the papers go to OUT/<set>/<paper>")
    parser.add_argument("--set", action="append", dest="sets", help="export only these sets (repeatable)")
    parser.add_argument("--data", type=Path, default=DATA, help="the sets' file (%(default)s)")
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    unknown = set(args.sets or ()) - set(data["sets"])
    if unknown:
        parser.error(f"unknown sets {sorted(unknown)}; the file has {sorted(data['sets'])}")
    problems = []
    for name, spec in data["sets"].items():
        if args.sets and name not in args.sets:
            continue
        problems += check_queries(name, spec)
        problems += export_set(name, spec, tuple(data["extensions"]), args.mirrors, args.out)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
