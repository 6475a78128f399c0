"""Set-file entries for new real papers: from a paper's repository, main file and area, the files an arXiv tarball of
it would hold, at the repository's newest commit.

::

    python benchmarks/realpapers_pick.py PICKS.tsv --mirrors MIRRORS --out SET.json [--description TEXT]

``PICKS.tsv`` holds one paper a line: ``name<TAB>owner/repo<TAB>path/of/main.tex<TAB>area``, and optionally a fifth
field of glob patterns (comma separated) naming files the main file reaches through a command of its class, which
this reader does not follow (``\\includechapter{x}`` of a thesis class). For each, the repository
is read from ``MIRRORS/owner+repo/repo`` (a git directory, as the search tools' ``fetch`` leaves it) at ``HEAD``,
and the files are: the main file; what it inputs, recursively (``\\input``, ``\\include``, ``\\subfile``,
``\\import``/``\\subimport``, ``\\input file`` without braces; ``.tex`` added where the name has no extension);
the ``.sty`` files of its folder that it or they load, recursively (one named by a path of the author's machine,
found by its name); the class file of its folder that
``\\documentclass`` names; the ``.bbl`` of the main file. Figures and ``.bib`` files are left out, as in the earlier
sets. The entries carry ``repo``, ``commit``, ``folder`` (the main file's folder, or the one above it that holds
every file), ``main`` and ``files`` (relative to that folder) and ``area``; ``benchmarks/realpapers_export.py``
writes them out, ``benchmarks/realpapers_count.py`` counts them. Nothing of eqsearch is imported.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import posixpath
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

_COMMENT = re.compile(r"(?<!\\)%[^\n]*")
_INPUT = re.compile(r"\\(?:input|include|subfile)\s*\{\{?([^{}]+)\}?\}|\\input\s+([^\s{}\\%]+)")
_IMPORT = re.compile(r"\\(?:sub)?import\*?\s*\{([^{}]*)\}\s*\{([^{}]+)\}")
_PACKAGE = re.compile(r"\\(?:usepackage|RequirePackage)\s*(?:\[[^\]]*\])?\s*\{([^{}]+)\}")
_TEXT_MACRO = re.compile(
    r"\\(?:(?:re)?newcommand\*?\s*\{?\s*\\([A-Za-z@]+)\s*\}?|[gex]?def\s*\\([A-Za-z@]+))\s*\{([^{}\\#]*)\}"
)
_TEX_SOURCES = (".tex", ".ltx", ".sty", ".def", ".cfg")
_CLASS = re.compile(r"\\documentclass\s*(?:\[[^\]]*\])?\s*\{([^{}]+)\}")


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def paper_files(tree: set[str], read: Callable[[str], str], main: str) -> list[str]:
    """The files of the paper whose main file is ``main`` (a path of ``tree``), as paths of ``tree``; a name or folder
    written with a text macro of the main file (``\\def\\PATH{.}``, ``\\import{\\PATH/ch1/}{ch1}``) is read with it
    written out."""
    folder = posixpath.dirname(main)
    found: list[str] = []
    names = {m.group(1) or m.group(2): m.group(3).strip() for m in _TEXT_MACRO.finditer(_COMMENT.sub("", read(main)))}

    def written_out(text: str) -> str:
        return re.sub(r"\\([A-Za-z@]+)", lambda m: names.get(m.group(1), m.group(0)), text)

    def add(path: str) -> bool:
        if path in tree and path not in found:
            found.append(path)
            return True
        return False

    def visit(path: str) -> None:
        text = written_out(_COMMENT.sub("", read(path)))
        here = posixpath.dirname(path)
        for m in _INPUT.finditer(text):
            for name in (m.group(1) or m.group(2) or "").split(","):
                name = name.strip().strip("{}").strip()  # \include{{./Sections/intro}}
                # a subfile's own \subfile{..} is read from its folder (the subfiles package), an \input from the main's
                bases = (folder, here) if "subfile" in m.group(0) and here != folder else (folder,)
                for candidate in [posixpath.join(base, c) for base in bases for c in (name, name + ".tex")]:
                    full = posixpath.normpath(candidate)
                    if add(full):
                        if full.endswith(_TEX_SOURCES):  # \input{thesis-main.ltx}, which inputs the macros
                            visit(full)
                        break
        for m in _IMPORT.finditer(text):
            for candidate in (m.group(2), m.group(2) + ".tex"):
                full = posixpath.normpath(posixpath.join(here, m.group(1), candidate))
                if add(full):
                    visit(full)
                    break
        for m in _PACKAGE.finditer(text):
            for name in m.group(1).split(","):
                full = posixpath.normpath(posixpath.join(folder, name.strip() + ".sty"))
                if full not in tree:  # a path of the author's machine (\usepackage{/home/me/defs}): by its name
                    base = posixpath.basename(name.strip()) + ".sty"
                    full = next((p for p in sorted(tree) if p == base or p.endswith("/" + base)), full)
                if add(full):
                    visit(full)
        for m in _CLASS.finditer(text):
            add(posixpath.normpath(posixpath.join(folder, m.group(1).strip() + ".cls")))

    add(main)
    visit(main)
    add(posixpath.splitext(main)[0] + ".bbl")
    return found


def paper_root(files: list[str], main: str) -> str:
    """The folder the paper is exported from: the main file's, or the nearest one above it that holds every file
    (a thesis whose main file inputs ``../chapter/x.tex``)."""
    root = posixpath.dirname(main)
    while root and not all(f == root or f.startswith(root + "/") for f in files):
        root = posixpath.dirname(root)
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("picks", type=Path)
    parser.add_argument(
        "--mirrors", type=Path, required=True, help="bare git copies, OWNER+NAME/repo, of the papers' repositories"
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--description", default="")
    args = parser.parse_args(argv)
    papers: dict[str, dict[str, object]] = {}
    for line in args.picks.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, repo_name, main_file, area, *extra = line.split("\t")
        repo = args.mirrors / repo_name.replace("/", "+") / "repo"
        commit = _git(repo, "rev-parse", "HEAD").decode().strip()[:10]
        tree = set(_git(repo, "ls-tree", "-r", "--name-only", commit).decode("utf-8", "surrogateescape").splitlines())
        if main_file not in tree:
            print(f"{name}: {main_file} is not in {repo_name} @ {commit}")
            continue

        def read(path: str, repo: Path = repo, commit: str = commit) -> str:
            return _git(repo, "show", f"{commit}:{path}").decode("utf-8", "replace")

        files = paper_files(tree, read, main_file)
        for pattern in ",".join(extra).split(","):  # files reached through a class's own command, named by hand
            files += sorted(p for p in tree if pattern and fnmatch.fnmatch(p, pattern) and p not in files)
        root = paper_root(files, main_file)
        papers[name] = {
            "area": area,
            "repo": repo_name,
            "commit": commit,
            "main": posixpath.relpath(main_file, root or "."),
            "folder": root,
            "files": sorted(posixpath.relpath(f, root or ".") for f in files),
        }
    args.out.write_text(
        json.dumps({"description": args.description, "papers": papers}, indent=1, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    print(f"{len(papers)} papers written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
