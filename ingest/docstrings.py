"""Math in Python docstrings: ``.. math::`` blocks (display) and ``:math:`` roles (inline).

A module is a document, each function, class or method with math in its docstring a section; the module
docstring is the front matter. Source is parsed with `ast`, never imported.
"""

from __future__ import annotations

import ast
import re

from eqsearch.ingest.citations import find_arxiv_ids
from eqsearch.ingest.config import ExtractConfig
from eqsearch.ingest.errors import IngestError
from eqsearch.ingest.plaintext import first_words, last_words
from eqsearch.ingest.records import STATUS_FAILED, Equation, Paper, Section

_DIRECTIVE = re.compile(r"^([ \t]*)\.\.[ \t]+math::[ \t]*(.*)$", re.MULTILINE)
_ROLE = re.compile(r":math:`([^`]+)`")
_OPTION = re.compile(r"^\s*:[a-z\-]+:")


def _directive_blocks(doc: str) -> list[tuple[int, int, list[str]]]:
    """``(start, end, equations)`` for each ``.. math::`` directive; blank lines separate equations."""
    blocks: list[tuple[int, int, list[str]]] = []
    lines = doc.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for m in _DIRECTIVE.finditer(doc):
        indent = len(m.group(1).expandtabs())
        line_no = doc.count("\n", 0, m.start())
        equations: list[str] = [m.group(2).strip()] if m.group(2).strip() else []
        current: list[str] = []
        i = line_no + 1
        while i < len(lines):
            line = lines[i]
            if line.strip() == "":
                if current:
                    equations.append("\n".join(current))
                    current = []
                i += 1
                continue
            if len(line.expandtabs()) - len(line.expandtabs().lstrip()) <= indent:
                break
            if not (current or equations) and _OPTION.match(line):
                i += 1
                continue
            current.append(line.strip())
            i += 1
        if current:
            equations.append("\n".join(current))
        blocks.append((m.start(), offsets[min(i, len(lines))], [e for e in equations if e.strip()]))
    return blocks


def _text(doc: str) -> str:
    text = _ROLE.sub(lambda m: f"${m.group(1)}$", doc)
    return re.sub(r"\s+", " ", text).strip()


def extract_docstring_paper(source: str, *, module: str, origin: str, config: ExtractConfig) -> Paper:
    """Extract the math of one Python module's docstrings.

    Args:
        source: the module's Python source.
        module: its dotted name (the paper id becomes ``py:<module>``).
        origin: where the source came from, for the record.
        config: limits (context size, equation length).

    Raises:
        IngestError: the source does not parse (reason ``python_syntax_error``).
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as error:
        raise IngestError(f"{origin}: not valid Python 3 ({error})", reason="python_syntax_error") from None
    paper = Paper(id=f"py:{module}", source=origin, kind="docstring", title=module)
    module_doc = ast.get_docstring(tree) or ""
    if module_doc:
        paper.abstract = _text(module_doc.split("\n\n")[0])
    paper.sections = [Section(index=0, level=0, kind="front", title=module)]
    docs: list[tuple[Section, str]] = [(paper.sections[0], module_doc)]

    def visit(node: ast.AST, prefix: str, level: int) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                doc = ast.get_docstring(child) or ""
                if ":math:" in doc or ".. math::" in doc:
                    kind = "class" if isinstance(child, ast.ClassDef) else "function"
                    section = Section(
                        index=len(paper.sections), level=level, kind=kind, title=name, offset=child.lineno
                    )
                    paper.sections.append(section)
                    docs.append((section, doc))
                if isinstance(child, ast.ClassDef):
                    visit(child, name + ".", level + 1)

    visit(tree, "", 2)
    number = 0
    all_text: list[str] = []
    for section, doc in docs:
        all_text.append(doc)
        found: list[tuple[int, int, str, str, bool]] = []
        for start, end, equations in _directive_blocks(doc):
            found.extend((start, end, body, "math-directive", True) for body in equations)
        covered = [(s, e) for s, e, *_ in found]
        for m in _ROLE.finditer(doc):
            if not any(s <= m.start() < e for s, e in covered):
                found.append((m.start(), m.end(), m.group(1), "math-role", False))
        found.sort(key=lambda f: f[0])
        masked = doc
        for s, e in covered:  # same length, so offsets stay valid
            masked = masked[:s] + " [math]".ljust(e - s)[: e - s] + masked[e:]
        for start, end, body, environment, display in found:
            equation = Equation(
                number=number,
                latex=body,
                environment=environment,
                section=section.index,
                offset=start,
                display=display,
                length=len(body),
                context_before=last_words(_text(masked[:start]), config.context_chars),
                context_after=first_words(_text(masked[end:]), config.context_chars),
            )
            if len(body) > config.max_equation_chars:
                equation.latex = body[:1000]
                equation.status, equation.reason = STATUS_FAILED, "equation_too_long"
            section.equations.append(equation)
            number += 1
    paper.citations = find_arxiv_ids("\n".join(all_text))
    return paper
