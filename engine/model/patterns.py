"""Query variables (``?a^2 + ?b^2 = ?c^2``) and which parts of a formula matched a query.

A query formula may hold variables that stand for any sub-expression, as in zbMATH's formula search. The grammar::

    variable ::= "?" letter (letter | digit)*        ?a  ?x1  ?alpha (Latin letters and digits; greedy: ?ab is one)
    literal  ::= "\\?"                                a question mark, never a variable

A ``?`` followed by a space, an operator, a closing bracket or the end of the formula is a question mark as before
(pasted questions end in one). A ``?`` followed by a digit, another ``?``, ``{``, ``^``, ``_``, a command or a
non-Latin letter is a malformed variable, and so is a variable inside text (``\\text{?a}``) or an environment's
name (``\\begin{?a}``): `read_query_variables` raises `QueryVariableError` with the offset and what to write.

Before KaTeX, each variable becomes one placeholder, ``{\\char"E000}`` (the next private-use character for the next
name), which KaTeX writes as one ``<mi>``: `mark_variables` finds those nodes in the symbol layout tree
(`engine.model.layout`) and marks them (`LayoutNode.variable`). The structural query then leaves out every term
that touches a variable (`pattern_structure`), so BM25 finds candidates by the rest of the pattern, and
`match_pattern` checks a candidate by unification on the layout trees:

- a symbol matches a symbol with the same label and the same relations, whose attached baselines match wholly;
- a variable binds a contiguous, non-empty run of symbols of one baseline (with all that hangs on them); the
  variable's own scripts (``?a^2``) must match those of the run's last symbol, which then are not part of the
  binding, and such a run is one symbol or one bracketed group (``x``, ``(a+b)``: never the ``1 + x`` of
  ``1 + x^2``). On the top-level baseline a binding never crosses a relation (``=``, ``<``, ``\\in``, a comma),
  and everywhere its brackets balance; longer runs are tried first;
- a repeated variable binds equal sub-trees each time; different variables may bind equal ones (``x^2+y^2=x^2``
  matches ``?a^2+?b^2=?c^2``, not ``?a^2+?b^2=?a^2``);
- the pattern's top-level baseline may match a run anywhere inside the candidate (any of its baselines), the
  leftmost of the first baseline that has one.

Backtracking is bounded by `MAX_STEPS` per candidate (a candidate that needs more counts as no match), after a
cheap check that the candidate holds every symbol the pattern names.

What a match (or, for a query without variables, the largest shared sub-expression) covers in the hit, as the web UI
marks it, is `engine.model.highlights`. Only `engine.model.layout`, `engine.model.structure` and the shared error
type are used here.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.model.layout import LayoutNode, canonical, layout_baselines, layout_nodes
from eqsearch.engine.model.structure import QUERY_SPAN_KINDS, FormulaStructure, structure_of_layout

__all__ = [
    "MAX_STEPS",
    "MAX_VARIABLES",
    "PatternMatch",
    "QueryPattern",
    "QueryVariableError",
    "mark_variables",
    "match_pattern",
    "pattern_structure",
    "read_query_variables",
    "variables_as_letters",
]

#: Different variable names one query may use (one private-use placeholder character each).
MAX_VARIABLES = 32
#: Backtracking steps spent on one candidate before it counts as not matching.
MAX_STEPS = 5_000

_PLACEHOLDER = 0xE000  # Unicode private use: no formula KaTeX converts from ordinary LaTeX holds one
_VARIABLE = re.compile(r"\?([A-Za-z][A-Za-z0-9]*)")
_COMMAND = re.compile(r"\\([A-Za-z]+|.?)", re.S)
#: Commands whose braced argument is text or a name, where a variable makes no sense.
_TEXT_COMMANDS = frozenset(
    {
        "text", "textrm", "textit", "textbf", "textsf", "texttt", "textnormal", "textup", "mbox", "hbox",
        "operatorname", "label", "ref", "eqref", "tag", "color", "textcolor",
    }
)  # fmt: skip
_NAME_COMMANDS = frozenset({"begin", "end"})
_RELATIONS = frozenset(
    {"O:=", "O:≠", "O:<", "O:>", "O:≤", "O:≥", "O:≈", "O:≡", "O:≅", "O:∼", "O:≃", "O:∝", "O:∈", "O:∉", "O:⊂", "O:⊆",
     "O:⊃", "O:⊇", "O:,", "O:;"}
)  # fmt: skip
_OPENERS = frozenset({"O:(", "O:[", "O:{", "O:⟨", "O:⌊", "O:⌈"})
_CLOSERS = frozenset({"O:)", "O:]", "O:}", "O:⟩", "O:⌋", "O:⌉"})


class QueryVariableError(EqsearchError):
    """A query variable is malformed or placed where it makes no sense; the message says where and why."""

    exit_code = 2


@dataclass(frozen=True)
class QueryPattern:
    """A query formula read for variables.

    Attributes:
        latex: the formula as typed.
        katex_latex: what KaTeX converts: each variable a ``{\\char"E0xx}`` placeholder, ``\\?`` a ``?``. Equal to
            `latex` when the formula has neither.
        fallback_latex: the same with the placeholder characters themselves, for `parse_layout_latex` when KaTeX
            refuses the formula.
        variables: the variables' names in order of first appearance (the n-th has placeholder U+E000 + n).
    """

    latex: str
    katex_latex: str
    fallback_latex: str
    variables: tuple[str, ...] = ()

    @property
    def has_variables(self) -> bool:
        return bool(self.variables)

    def name_of(self, character: str) -> str | None:
        """The variable a placeholder character stands for, or None."""
        index = ord(character) - _PLACEHOLDER if len(character) == 1 else -1
        return self.variables[index] if 0 <= index < len(self.variables) else None


@dataclass(frozen=True)
class PatternMatch:
    """Where a pattern matched a candidate: the run of one of its baselines, and each variable's binding.

    Attributes:
        run: the candidate's symbols the pattern's top-level baseline covers (with all that hangs on them).
        bindings: variable name -> ``(symbols, relations of the last one that the pattern matched, not bound)``.
    """

    run: tuple[LayoutNode, ...]
    bindings: dict[str, tuple[tuple[LayoutNode, ...], frozenset[str]]]


# --- reading the query ------------------------------------------------------------------------------------------


def _fail(latex: str, at: int, what: str, problem: str) -> QueryVariableError:
    return QueryVariableError(
        f"the query variable {what!r} at character {at + 1} {problem}",
        hint="a variable is ? then a letter, then letters or digits (?a, ?x1); \\? is a question mark",
    )


def read_query_variables(latex: str) -> QueryPattern:
    """Find a query formula's variables and make the LaTeX KaTeX converts (see the module docstring).

    Args:
        latex: the query formula.

    Returns:
        The pattern; without variables and ``\\?``, its `QueryPattern.katex_latex` is ``latex`` unchanged.

    Raises:
        QueryVariableError: a malformed variable, one inside text or a name, more than `MAX_VARIABLES` names, or a
            formula that is a lone ``?``.
    """
    if "?" not in latex:
        return QueryPattern(latex, latex, latex)
    if latex.strip() == "?":
        raise _fail(latex, latex.index("?"), "?", "has no name: write ?x for any sub-expression")
    katex: list[str] = []
    fallback: list[str] = []
    names: dict[str, int] = {}
    groups: list[str | None] = []  # per open brace: None (math), "text" or "name"
    pending: str | None = None  # what the next "{" opens, right after \text or \begin
    i = 0
    while i < len(latex):
        char = latex[i]
        if char == "\\":
            command = _COMMAND.match(latex, i)
            assert command is not None  # the pattern matches a lone backslash too
            name = command.group(1)
            text = "?" if name == "?" else command.group(0)
            katex.append(text)
            fallback.append(text)
            pending = "text" if name in _TEXT_COMMANDS else "name" if name in _NAME_COMMANDS else None
            i = command.end()
            continue
        if char == "?":
            found = _VARIABLE.match(latex, i)
            context = groups[-1] if groups else None
            if found is not None:
                what = found.group(0)
                if context == "text":
                    raise _fail(latex, i, what, "is inside text, where it would be read as letters")
                if context == "name":
                    raise _fail(latex, i, what, "is an environment's name, which must be spelled out")
                if found.group(1) not in names and len(names) == MAX_VARIABLES:
                    raise _fail(latex, i, what, f"is one too many: a query may use {MAX_VARIABLES} names")
                index = names.setdefault(found.group(1), len(names))
                katex.append('{\\char"%X}' % (_PLACEHOLDER + index))
                fallback.append("{" + chr(_PLACEHOLDER + index) + "}")
                pending = None
                i = found.end()
                continue
            after = latex[i + 1 : i + 2]
            snippet = latex[i : i + 4].split()[0] if latex[i : i + 4].split() else "?"
            if after.isdigit():
                raise _fail(latex, i, snippet, "starts with a digit: a name starts with a letter (?x, ?x1)")
            if after == "?":
                raise _fail(latex, i, "??", "has no name: write one ? then a letter (?x)")
            if after in ("{", "^", "_", "\\") or after.isalpha():
                raise _fail(latex, i, snippet, "has no name: write ? then a Latin letter, directly (?x)")
            # a question mark, as before variables existed (a pasted question ends in one)
        if char == "{":
            groups.append(pending or (groups[-1] if groups and groups[-1] else None))
        elif char == "}" and groups:
            groups.pop()
        if not char.isspace() and char != "{":
            pending = None
        katex.append(char)
        fallback.append(char)
        i += 1
    variables = tuple(names)
    if variables:
        reserved = next((at for at, c in enumerate(latex) if _PLACEHOLDER <= ord(c) < _PLACEHOLDER + 0x100), None)
        if reserved is not None:
            raise QueryVariableError(
                f"the formula holds a private-use character at character {reserved + 1}, which query variables use",
                hint="remove it, or search without variables",
            )
    return QueryPattern(latex, "".join(katex), "".join(fallback), variables)


def mark_variables(baseline: list[LayoutNode], pattern: QueryPattern) -> list[LayoutNode]:
    """Mark the nodes of a query's layout tree that are its variables' placeholders (in place; returns it)."""
    if pattern.has_variables:
        for node in layout_nodes(baseline):
            node.variable = pattern.name_of(node.label[2:])
    return baseline


def variables_as_letters(mathml: str, pattern: QueryPattern) -> str:
    """The query's MathML with each placeholder written as its variable's name (``?a`` as the identifier ``a``):
    what the embedding encodes, so that kNN looks for formulas like the pattern read literally."""
    if not pattern.has_variables:
        return mathml
    for index, name in enumerate(pattern.variables):
        placeholder = chr(_PLACEHOLDER + index)
        mathml = mathml.replace(f'<mi mathvariant="normal">{placeholder}</mi>', f"<mi>{name}</mi>")
        mathml = mathml.replace(placeholder, name)
    return mathml


def _is_variable(node: LayoutNode) -> bool:
    return node.variable is not None


def pattern_structure(baseline: list[LayoutNode]) -> FormulaStructure:
    """The structural terms of a query with variables: those of `structure_of_layout` (with a query's span kinds),
    less every symbol, pair and span that touches a variable (a variable's extent is unknown, so no term through it
    can be trusted)."""
    return structure_of_layout(baseline, skip=_is_variable, span_kinds=QUERY_SPAN_KINDS)


# --- matching ---------------------------------------------------------------------------------------------------


class _GiveUp(Exception):
    pass


Bindings = dict[str, tuple[list[LayoutNode], int, int, frozenset[str]]]


class _Matcher:
    """Backtracking unification of a pattern against one candidate, in continuation-passing style so that a
    repeated variable can undo choices made anywhere before it."""

    def __init__(self, max_steps: int, repeated: frozenset[str]) -> None:
        self.steps = 0
        self.max_steps = max_steps
        self.repeated = repeated
        self.keys: dict[int, str] = {}

    def line(
        self,
        pattern: list[LayoutNode],
        pi: int,
        line: list[LayoutNode],
        ci: int,
        whole: bool,
        bound: Bindings,
        then: Callable[[Bindings, int], bool],
    ) -> bool:
        self.steps += 1
        if self.steps > self.max_steps:
            raise _GiveUp
        if pi == len(pattern):
            return (not whole or ci == len(line)) and then(bound, ci)
        wanted = pattern[pi]
        if wanted.variable is None:
            if ci >= len(line):
                return False
            node = line[ci]
            if node.label != wanted.label or node.children.keys() != wanted.children.keys():
                return False
            return self.children(
                wanted,
                node,
                sorted(wanted.children),
                bound,
                lambda b: self.line(pattern, pi + 1, line, ci + 1, whole, b, then),
            )
        following = pattern[pi + 1] if pi + 1 < len(pattern) else None
        for end in reversed(self._ends(line, ci, len(line) - (len(pattern) - pi - 1), whole)):
            last = line[end]
            if not wanted.children.keys() <= last.children.keys():
                continue
            if wanted.children and end > ci and not self._bracketed(line, ci, end):
                continue  # ?a^2 squares x or (a+b), never the "1 + x" of 1 + x^2
            if (
                following is not None
                and following.variable is None
                and (end + 1 >= len(line) or line[end + 1].label != following.label)
            ):
                continue
            binding = (line, ci, end, frozenset(wanted.children))
            previous = bound.get(wanted.variable)
            if previous is not None:
                if self._key(previous) != self._key(binding):
                    continue
                extended = bound
            else:
                extended = {**bound, wanted.variable: binding}
            if self.children(
                wanted,
                last,
                sorted(wanted.children),
                extended,
                lambda b, end=end: self.line(pattern, pi + 1, line, end + 1, whole, b, then),
            ):
                return True
        return False

    def children(
        self,
        wanted: LayoutNode,
        node: LayoutNode,
        relations: list[str],
        bound: Bindings,
        then: Callable[[Bindings], bool],
    ) -> bool:
        if not relations:
            return then(bound)
        relation, rest = relations[0], relations[1:]
        return self.line(
            wanted.children[relation],
            0,
            node.children[relation],
            0,
            True,
            bound,
            lambda b, _end: self.children(wanted, node, rest, b, then),
        )

    @staticmethod
    def _ends(line: list[LayoutNode], start: int, stop: int, whole: bool) -> list[int]:
        """Where a variable's run from ``start`` may end (before ``stop``): its brackets balance and, on the
        top-level baseline, it crosses no relation."""
        ends = []
        depth = 0
        for end in range(start, min(stop, len(line))):
            label = line[end].label
            if not whole and label in _RELATIONS:
                break
            if label in _OPENERS:
                depth += 1
            elif label in _CLOSERS:
                depth -= 1
                if depth < 0:
                    break
            if depth == 0:
                ends.append(end)
        return ends

    @staticmethod
    def _bracketed(line: list[LayoutNode], start: int, end: int) -> bool:
        """Whether ``line[start..end]`` is one bracketed group: an opener whose closer is the last symbol."""
        if line[start].label not in _OPENERS or line[end].label not in _CLOSERS:
            return False
        depth = 0
        for index in range(start, end + 1):
            label = line[index].label
            depth += 1 if label in _OPENERS else -1 if label in _CLOSERS else 0
            if depth == 0 and index < end:
                return False
        return True

    def _key(self, binding: tuple[list[LayoutNode], int, int, frozenset[str]]) -> str:
        line, start, end, consumed = binding
        parts = [self._canonical(node) for node in line[start:end]]
        last = line[end]
        if consumed:
            last = LayoutNode(last.label, {r: b for r, b in last.children.items() if r not in consumed})
            parts.append(canonical(last))
        else:
            parts.append(self._canonical(last))
        return " ".join(parts)

    def _canonical(self, node: LayoutNode) -> str:
        key = self.keys.get(id(node))
        if key is None:
            key = self.keys[id(node)] = canonical(node)
        return key


def match_pattern(
    pattern: list[LayoutNode], candidate: list[LayoutNode], *, max_steps: int = MAX_STEPS
) -> PatternMatch | None:
    """Where a pattern with variables matches inside a candidate formula (see the module docstring).

    Args:
        pattern: the query's layout tree, its variables marked (`mark_variables`).
        candidate: the candidate's layout tree.
        max_steps: backtracking steps allowed before giving up (the candidate then counts as not matching).

    Returns:
        The leftmost match in the first baseline that has one, or None.
    """
    if not pattern:
        return None
    wanted = Counter(node.label for node in layout_nodes(pattern) if node.variable is None)
    if wanted - Counter(node.label for node in layout_nodes(candidate)):
        return None  # a symbol the pattern names is missing: no search needed
    counts = Counter(node.variable for node in layout_nodes(pattern) if node.variable is not None)
    matcher = _Matcher(max_steps, frozenset(name for name, n in counts.items() if n > 1))
    found: list[tuple[Bindings, int]] = []

    def done(bound: Bindings, end: int) -> bool:
        found.append((bound, end))
        return True

    try:
        for line in layout_baselines(candidate):
            for start in range(len(line)):
                if matcher.line(pattern, 0, line, start, False, {}, done):
                    bound, end = found[0]
                    bindings = {
                        name: (tuple(b_line[b_start : b_end + 1]), consumed)
                        for name, (b_line, b_start, b_end, consumed) in bound.items()
                    }
                    return PatternMatch(tuple(line[start:end]), bindings)
    except _GiveUp:
        return None
    return None
