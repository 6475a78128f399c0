"""An independent count of the display blocks of real papers, written apart from eqsearch's extractor (it imports
nothing of eqsearch), to score extraction against (benchmarks/ingest.md, "Real arXiv papers II").

::

    python benchmarks/realpapers_count.py PAPERS_DIR [--manifest MANIFEST.json] [--out COUNTS.json] [--show NAME]

For each paper folder: the top-level documents (files with ``\\documentclass`` and ``\\begin{document}`` that no
other file inputs; the manifest's main file first), their inputs spliced in, comments, verbatim and ``comment``
environments, ``\\iffalse`` blocks and what follows ``\\end{document}`` dropped; macros and environments whose
definition opens or closes a display replaced by what they stand for (``\\def\\bea{\\begin{eqnarray}}``,
``\\let\\beq\\equation``, ``\\newcommand{\\al}[1]{\\begin{align}#1\\end{align}}``, ``\\def\\beas#1\\eeas{...}``,
``\\newenvironment{eqn}{\\begin{equation}}{\\end{equation}}``), definitions blanked; then a text / inline / display
walk counts the outermost non-empty displays (environments, ``\\[ \\]``, ``$$ $$``; a ``$$`` inside a ``tabular`` is an
empty formula, as TeX reads it in a table cell, and so is one in a ``tikzpicture``'s node text). ``--show NAME``
prints the first characters of each counted display of one paper, to read by hand where the numbers disagree.
"""

from __future__ import annotations

import argparse
import json
import posixpath
import re
from pathlib import Path

PACKAGE = re.compile(r"\\(?:usepackage|RequirePackage)\s*(?:\[[^\]]*\])?\s*\{([^{}]+)\}")
DISPLAYS = (
    "equation|align|gather|multline|flalign|alignat|xalignat|xxalignat|eqnarray|displaymath|dmath|dseries|darray|"
    "IEEEeqnarray|empheq"
)
VERBATIM = r"verbatim\*?|Verbatim\*?|lstlisting|minted|comment|filecontents\*?|tcblisting|BVerbatim|LVerbatim"
INPUT = re.compile(
    r"\\(?:input|include|subfile)\s*\{\{?([^{}]+)\}?\}|\\input\s+([^\s{}\\%]+)|\\(?:sub)?import\*?\s*\{([^{}]*)\}\s*\{([^{}]+)\}"
)


def strip_comments(text: str) -> str:
    out = re.sub(r"(?<!\\)((?:\\\\)*)%[^\n]*\n?[ \t]*", r"\1", text)
    out = re.sub(r"\\begin\s*\{(" + VERBATIM + r")\}.*?\\end\s*\{\1\}", " ", out, flags=re.S)
    out = re.sub(r"\\verb\*?(.).*?\1", " ", out)
    return drop_iffalse(out)


def drop_iffalse(text: str) -> str:
    while True:
        m = re.search(r"\\iffalse(?![A-Za-z@])", text)
        if m is None:
            return text
        depth, pos = 1, m.end()
        for t in re.finditer(r"\\(if[A-Za-z@]*|fi)(?![A-Za-z@])", text[m.end() :]):
            depth += -1 if t.group(1) == "fi" else 1
            if depth == 0:
                pos = m.end() + t.end()
                break
        else:
            pos = len(text)
        text = text[: m.start()] + " " + text[pos:]


def group(text: str, pos: int) -> int | None:
    """End (exclusive) of the brace group opening at ``pos``."""
    depth = 0
    i = pos
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def splice(folder: Path, name: str, stack: tuple[str, ...] = ()) -> str:
    path = folder / name
    if not path.is_file() or name in stack or len(stack) > 12:
        return ""
    text = strip_comments(path.read_text(encoding="utf-8", errors="replace"))
    if stack:  # an input with its own class (a subfiles child): its body only
        begin = re.search(r"\\begin\s*\{document\}", text)
        if begin and re.search(r"\\documentclass", text[: begin.start()]) and "\\documentclass" in "".join(stack):
            text = text[begin.end() :]
        text = re.split(r"\\end\s*\{document\}", text)[0]

    def replace(m: re.Match[str]) -> str:
        target = (m.group(1) or m.group(2) or m.group(4) or "").strip()
        base = posixpath.dirname(name)
        if m.group(3) is not None:
            base = posixpath.join(base, m.group(3).strip())
        for b in (base, posixpath.dirname(stack[0]) if stack else "", ""):
            for c in (posixpath.normpath(posixpath.join(b, target)),):
                for cand in (c + ".tex", c):
                    if (folder / cand).is_file():
                        return "\n" + splice(folder, cand, (*stack, name)) + "\n"
        return " "

    seen_packages: set[str] = set()

    def package(m: re.Match[str]) -> str:  # a package shipped with the paper (and those it loads): definitions count
        texts = []
        for pkg in m.group(1).split(","):
            path = folder / posixpath.dirname(name) / (pkg.strip() + ".sty")
            if pkg.strip() and path.is_file() and str(path) not in seen_packages:
                seen_packages.add(str(path))
                package_text = strip_comments(path.read_text(encoding="utf-8", errors="replace"))
                package_text = re.sub(r"\\(begin|end)\s*\{document\}", " ", package_text)
                # a package's environments (mathpartir's mathpar) are not the paper's displays; its commands are
                package_text = re.sub(r"\\(re)?newenvironment", r"\\PACKAGEnewenvironment", package_text)
                texts.append(PACKAGE.sub(package, package_text))
        return m.group(0) + "\n" + "\n".join(texts)

    text = PACKAGE.sub(package, text)
    return INPUT.sub(replace, text)


#: ``\\begin {document}``: TeX reads a space before the brace too
BEGIN_DOCUMENT = re.compile(r"\\begin\s*\{document\}")


def top_level(folder: Path, main: str | None) -> list[str]:
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.tex") if p.is_file())  # a folder x.tex/
    texts = {f: strip_comments((folder / f).read_text(encoding="utf-8", errors="replace")) for f in files}
    included = set()
    for f, t in texts.items():
        for m in INPUT.finditer(t):
            target = (m.group(1) or m.group(2) or m.group(4) or "").strip()
            base = posixpath.join(posixpath.dirname(f), (m.group(3) or "").strip())
            for b in (base, ""):
                c = posixpath.normpath(posixpath.join(b, target))
                included.update({c, c + ".tex"})
    docs = [f for f, t in texts.items() if f not in included and BEGIN_DOCUMENT.search(splice(folder, f))]
    docs = [d for d in docs if not re.search(r"\\documentclass\s*(\[[^\]]*\])?\s*\{standalone\}", texts[d])] or docs
    if main in docs:
        docs.remove(main)
        docs.insert(0, main)
    return docs


DEF = re.compile(
    r"\\(?:re|provide)?newcommand\*?\s*\{?\s*(\\[A-Za-z@]+)\s*\}?\s*(?:\[(\d)\])?\s*(?:\[[^\]]*\])?\s*(?=\{)"
    r"|\\[gex]?def\s*(\\[A-Za-z@]+)\s*((?:#\d)*)(?:#1\s*(\\[A-Za-z@]+))?\s*(?=\{)"
    r"|\\let\s*(\\[A-Za-z@]+)\s*=?\s*(\\[A-Za-z@]+)"
    r"|\\(?:re)?newenvironment\*?\s*\{([A-Za-z*]+)\}\s*(?:\[\d\])?\s*(?:\[[^\]]*\])?\s*(?=\{)"
)
DELIM = re.compile(r"\\(?:begin|end)\s*\{(?:" + DISPLAYS + r")\*?\}|\\\[|\\\]|\$\$|\\(?:end)?(?:" + DISPLAYS + r")\b")


def display_text(text: str) -> str:
    """The text with display-making macros and environments replaced by what they stand for, definitions blanked."""
    simple: dict[str, str] = {}
    argumented: dict[str, tuple[int, str]] = {}
    delimited: dict[str, tuple[str, str, str]] = {}
    envs: dict[str, tuple[str, str]] = {}
    spans = []
    others: list[re.Match[str]] = []
    other_bodies: list[str] = []
    for m in DEF.finditer(text):
        if m.group(6):  # \let
            source = m.group(7)
            env = re.fullmatch(r"\\(end)?(" + DISPLAYS + r")\*?", source)
            if env:
                simple[m.group(6)] = (
                    ("\\end{" if env.group(1) else "\\begin{") + source.lstrip("\\").removeprefix("end") + "}"
                )
            elif source in simple:
                simple[m.group(6)] = simple[source]
            spans.append((m.start(), m.end()))
            continue
        end = group(text, m.end())
        if end is None:
            continue
        body = text[m.end() + 1 : end - 1]
        if m.group(8):  # \newenvironment{name}{begin}{end}
            end2 = group(text, end + len(text[end:]) - len(text[end:].lstrip()))
            if end2 is not None and DELIM.search(body):
                envs[m.group(8)] = (body, text[end:end2].strip()[1:-1])
            spans.append((m.start(), end2 or end))
            continue
        spans.append((m.start(), end))
        others.append(m)
        other_bodies.append(body)
    # a macro is a display macro when its body opens or closes a display, or uses a display macro (to a fixpoint)
    marked: set[str] = set()
    changed = True
    while changed:
        changed = False
        for m, body in zip(others, other_bodies, strict=True):
            name = m.group(1) or m.group(3)
            uses = any(re.search(re.escape(n) + r"(?![A-Za-z@])", body) for n in marked | set(simple))
            if name in marked or not (DELIM.search(body) or uses):
                continue
            marked.add(name)
            changed = True
            if m.group(5):
                before, _, after = body.partition("#1")
                delimited[name] = (before, after, m.group(5))
            elif (m.group(2) and m.group(2) != "0") or m.group(4):
                argumented[name] = (int(m.group(2) or len(m.group(4)) // 2), body)
            else:
                simple[name] = body
    parts, pos = [], 0
    for a, b in sorted(spans):
        if a >= pos:
            parts.append(text[pos:a])
            pos = b
    text = "".join(parts) + text[pos:]
    for name, (begin, end) in envs.items():
        text = re.sub(r"\\begin\s*\{" + re.escape(name) + r"\}", lambda _m, b=begin: b, text)
        text = re.sub(r"\\end\s*\{" + re.escape(name) + r"\}", lambda _m, e=end: e, text)
    for _ in range(4):  # shortcuts that use shortcuts
        for name, (before, after, closer) in delimited.items():
            text = re.sub(re.escape(name) + r"(?![A-Za-z@])", lambda _m, b=before: b, text)
            text = re.sub(re.escape(closer) + r"(?![A-Za-z@])", lambda _m, a=after: a, text)
        for name, (nargs, body) in argumented.items():
            out, pos = [], 0
            for m in re.finditer(re.escape(name) + r"(?![A-Za-z@])", text):
                if m.start() < pos:
                    continue
                args, end = [], m.end()
                for _ in range(nargs):
                    while end < len(text) and text[end].isspace():
                        end += 1
                    close = group(text, end) if end < len(text) and text[end] == "{" else None
                    if close is None:
                        break
                    args.append(text[end + 1 : close - 1])
                    end = close
                replaced = body
                for k, arg in enumerate(args, 1):
                    replaced = replaced.replace(f"#{k}", arg)
                out += [text[pos : m.start()], replaced]
                pos = end
            text = "".join(out) + text[pos:]
        for name, body in simple.items():
            text = re.sub(re.escape(name) + r"(?![A-Za-z@])", lambda _m, b=body: b, text)
    text = re.sub(
        r"\\(end)?(" + DISPLAYS + r")(\*?)(?![A-Za-z@*])",
        lambda m: ("\\end{" if m.group(1) else "\\begin{") + m.group(2) + m.group(3) + "}",
        text,
    )
    return text


BEGIN = re.compile(r"\\begin\s*\{(" + DISPLAYS + r")(\*?)\}")
TABULAR = re.compile(r"\\(begin|end)\s*\{(?:tabular\*?|tabularx|tabulary|longtable\*?|tikzpicture)\}")


def displays(text: str) -> list[str]:
    """The outermost non-empty displays of a body."""
    found: list[str] = []
    i = 0
    n = len(text)
    tables = 0  # inside a tabular or tikzpicture, $$ is an empty formula (restricted horizontal mode), not a display
    while i < n:
        c = text[i]
        if c == "\\":
            t = TABULAR.match(text, i)
            if t:
                tables = max(0, tables + (1 if t.group(1) == "begin" else -1))
                i = t.end()
                continue
            if text.startswith("\\[", i):
                j = text.find("\\]", i + 2)
                j = n if j < 0 else j
                found.append(text[i + 2 : j])
                i = j + 2
                continue
            if text.startswith("\\(", i):
                j = text.find("\\)", i + 2)
                i = n if j < 0 else j + 2
                continue
            if text.startswith("\\begin{math}", i):  # inline, whatever it holds
                j = text.find("\\end{math}", i)
                i = n if j < 0 else j + 10
                continue
            m = BEGIN.match(text, i)
            if m:
                name = re.escape(m.group(1) + m.group(2))
                depth, k = 1, m.end()
                for t in re.finditer(r"\\(begin|end)\s*\{" + name + r"\}", text[m.end() :]):
                    depth += 1 if t.group(1) == "begin" else -1
                    if depth == 0:
                        k = m.end() + t.start()
                        end = m.end() + t.end()
                        break
                else:
                    k = end = n
                found.append(text[m.end() : k])
                i = end
                continue
            i += 2
            continue
        if c == "$":
            if text.startswith("$$", i) and tables:
                i += 2
                continue
            if text.startswith("$$", i):
                j = text.find("$$", i + 2)
                j = n if j < 0 else j
                found.append(text[i + 2 : j])
                i = j + 2
                continue
            j = i + 1  # inline math ends at its $ or, as TeX recovers from a missing $, at a blank line
            while j < n and text[j] != "$" and not re.match(r"\n[ \t]*\n", text[j : j + 40]):
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        i += 1
    return [d for d in found if d.strip()]


def count_paper(folder: Path, main: str | None) -> tuple[int, list[str]]:
    shown: list[str] = []
    for doc in top_level(folder, main):
        text = splice(folder, doc)
        text = re.split(r"\\end\s*\{document\}", text)[0]
        head, sep, body = BEGIN_DOCUMENT.sub("\\\\begin{document}", text, count=1).partition("\\begin{document}")
        full = display_text(head + "\n\\BEGINDOCUMENT\n" + body) if sep else display_text(text)
        body = full.split("\\BEGINDOCUMENT", 1)[-1]
        shown += displays(body)
    return len(shown), shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("papers", type=Path)
    parser.add_argument("--manifest", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--show")
    args = parser.parse_args()
    manifest = json.loads(args.manifest.read_text()) if args.manifest else {}
    counts = {}
    for folder in sorted(p for p in args.papers.iterdir() if p.is_dir()):
        if args.show and folder.name != args.show:
            continue
        entry = manifest.get(folder.name, {})
        main_file = posixpath.basename(entry["main"]) if entry.get("main") else None
        count, shown = count_paper(folder, main_file)
        counts[folder.name] = count
        if args.show:
            for k, d in enumerate(shown):
                print(k, " ".join(d.split())[:100])
    print(json.dumps(counts, indent=1))
    if args.out:
        args.out.write_text(json.dumps(counts, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
