"""Export the papers of a real-paper set file from local git copies of their repositories, into a folder per paper.

::

    python benchmarks/realpapers_export.py benchmarks/realpapers5_counts.json --mirrors MIRRORS \\
        --out /work/realpapers5/heldout [--split held-out-8] [--only NAME ...]

A set file (``benchmarks/realpapers*_counts.json``) records, per paper, the repository, the commit, the main file
and the files exported beside it (paths relative to the paper's folder). The repository of ``owner/name`` is read
from ``MIRRORS/owner+name/repo`` (a git directory, as the search tools' ``fetch`` leaves it). The paper's folder
inside the repository is the set file's ``folder`` where it names one, else the folder holding the main file where
the most of the listed files are, the shallowest between equals (a listed file found only from the
repository's root is taken from there); each listed file is written from the recorded commit to
``OUT/<paper>/<file>``. Papers whose repository or commit is missing
are named, never skipped in silence. Nothing of eqsearch is imported: the sets are rebuilt as they were exported.
"""

from __future__ import annotations

import argparse
import json
import posixpath
import subprocess
import sys
from pathlib import Path


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def repo_files(repo: Path, commit: str) -> list[str]:
    """Every file path of the repository at ``commit``."""
    return _git(repo, "ls-tree", "-r", "--name-only", commit).decode("utf-8", "surrogateescape").splitlines()


def paper_folder(tree: list[str], main: str, files: list[str]) -> str | None:
    """The folder of the repository (``""`` for its root) holding ``main`` (a path that may name folders) with the
    most of ``files`` (paths relative to that folder) under it; between equals, the shallowest met first."""
    present = set(tree)
    best: tuple[int, int, str] | None = None
    for path in tree:
        if not (path == main or path.endswith("/" + main)):
            continue
        folder = posixpath.dirname(path)  # a main file named with its folder ("paper/ms.tex") is in that folder
        found = sum(posixpath.join(folder, f) in present if folder else f in present for f in files)
        key = (found, -folder.count("/"), folder)
        if best is None or key[:2] > best[:2]:
            best = key
    return None if best is None else best[2]


def export_paper(
    repo: Path, commit: str, main: str, files: list[str], target: Path, folder: str | None = None
) -> list[str]:
    """Write ``files`` of the paper at ``commit`` into ``target`` (from ``folder`` of the repository, else the one
    `paper_folder` finds); the files that could not be read."""
    paths = repo_files(repo, commit)
    folder = paper_folder(paths, main, files) if folder is None else folder
    if folder is None:
        return files
    present = set(paths)
    missing = []
    for name in files:
        path = posixpath.join(folder, name) if folder else name
        if path not in present and name in present:  # a file the main file reaches outside its folder (../Figures)
            path = name
        try:
            data = _git(repo, "show", f"{commit}:{path}")
        except subprocess.CalledProcessError:
            missing.append(name)
            continue
        out = target / name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("setfile", type=Path)
    parser.add_argument(
        "--mirrors", type=Path, required=True, help="bare git copies, OWNER+NAME/repo, of the papers' repositories"
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--split", action="append", help="export only these splits (repeatable)")
    parser.add_argument("--only", nargs="*", help="export only these papers")
    args = parser.parse_args(argv)
    papers = json.loads(args.setfile.read_text(encoding="utf-8"))["papers"]
    problems = 0
    for name, paper in sorted(papers.items()):
        if args.split and paper.get("split") not in args.split:
            continue
        if args.only and name not in args.only:
            continue
        repo = args.mirrors / paper["repo"].replace("/", "+") / "repo"
        if not repo.exists():
            print(f"{name}: no local copy of {paper['repo']} ({repo})")
            problems += 1
            continue
        try:
            missing = export_paper(
                repo, paper["commit"], paper["main"], paper["files"], args.out / name, paper.get("folder")
            )
        except subprocess.CalledProcessError as error:
            print(f"{name}: {paper['repo']} @ {paper['commit']}: {error.stderr.decode(errors='replace').strip()}")
            problems += 1
            continue
        if missing:
            print(f"{name}: {len(missing)} of {len(paper['files'])} files not found: {', '.join(missing[:5])}")
            problems += 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
