"""The symbol layout tree of a formula, read from MathML (or, when KaTeX could not convert it, from the LaTeX), and
the walks over it that the structural terms, query variables and highlights share.

A formula is a baseline of symbols; a symbol may carry other baselines in relations (superscript, subscript, over,
under, numerator, denominator, inside a root or a table). This is the symbol layout tree of Tangent-S (Davila &
Zanibbi), built from Presentation MathML with a few normalisations that make the same formula typed two ways look
alike: Unicode compatibility forms folded (``𝑑`` = ``d``, ``ℝ`` = ``R``), invisible operators dropped, runs of
single letters that spell a function name merged (``sin x`` typed without a backslash = ``\\sin x``), and fences,
sizes and binomial line thickness ignored (``\\binom{n}{k}`` = ``\\left(\\frac{n}{k}\\right)``).

The search terms made from the tree are `engine.model.structure`'s; this module only reads and walks it. Nodes read
from MathML can remember the elements they came from (`LayoutNode.elements`, pre-order indices), so that a hit can
say which parts of it matched; a query's variables (``?a``, `engine.model.patterns`) are marked on their nodes
(`LayoutNode.variable`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from lxml import etree

#: Longest symbol text kept in a label (Elasticsearch's whitespace tokenizer splits tokens past 255 characters).
MAX_LABEL = 40

_MATHML_NS = "{http://www.w3.org/1998/Math/MathML}"
_INVISIBLE = frozenset({"\u2061", "\u2062", "\u2063", "\u2064", "\u200b"})
_SKIPPED = frozenset({"annotation", "annotation-xml", "mspace", "none", "mprescripts", "mglyph", "maligngroup"})
_SCRIPTS = {
    "msup": ("sup",),
    "msub": ("sub",),
    "msubsup": ("sub", "sup"),
    # Limits drawn under and over (display style) are the subscripts and superscripts of the inline style: one
    # relation each, so that a sum or a limit typed either way has the same terms.
    "mover": ("sup",),
    "munder": ("sub",),
    "munderover": ("sub", "sup"),
}
_FUNCTION_NAMES_TEXT = """
    sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh coth log ln lg exp lim liminf limsup max min sup inf
    det dim ker deg gcd lcm arg mod sgn tr Tr Pr Re Im
"""
#: Function names recognised when typed as separate letters (``sin x``) and merged into one symbol.
FUNCTION_NAMES = frozenset(_FUNCTION_NAMES_TEXT.split())


@dataclass
class LayoutNode:
    """One symbol of a symbol layout tree, with the baselines attached to it by relation name.

    Attributes:
        label: the symbol's kind and text (``V:x``, ``N:2``, ``O:+``, ``F:sin``, ``S:frac``, ...).
        children: relation name -> the baseline attached by it.
        elements: pre-order indices (``<math>`` = 0, elements only) of the MathML elements the symbol was read from,
            when `parse_layout` was asked for them; empty otherwise (and for trees read from LaTeX).
        variable: the name of the query variable this node stands for (``a`` for ``?a``), else None.
    """

    label: str
    children: dict[str, list[LayoutNode]] = field(default_factory=dict)
    elements: tuple[int, ...] = field(default=(), compare=False)
    variable: str | None = field(default=None, compare=False)


def _local(tag: object) -> str:
    return tag[len(_MATHML_NS) :] if isinstance(tag, str) and tag.startswith(_MATHML_NS) else str(tag)


#: Characters that print alike and mean the same in a formula, folded to one (after NFKC).
_ALIKE = str.maketrans({"∣": "|", "·": "⋅", "∗": "*", "−": "-", "∶": ":", "ϵ": "ε", "ϕ": "φ"})


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_ALIKE)
    return "".join(ch for ch in text if not ch.isspace() and ch not in _INVISIBLE)[:MAX_LABEL]


def _leaf(tag: str, text: str) -> LayoutNode | None:
    text = _fold(text)
    if not text:
        return None
    if tag == "mn":
        return LayoutNode("N:" + text)
    if tag == "mi":
        return LayoutNode(("F:" if len(text) > 1 else "V:") + text)
    if tag in ("mtext", "ms"):
        return LayoutNode("T:" + text)
    return LayoutNode("O:" + text)


def _merge_function_names(baseline: list[LayoutNode]) -> list[LayoutNode]:
    """``V:s V:i V:n`` -> ``F:sin`` (the last letter's scripts stay with the name: ``sin^2``); the longest name wins.

    Every baseline of every formula passes here (the index's and the query's, and each hit's highlight), so a run is
    only looked at where one starts: a letter with nothing attached, followed by another letter.
    """
    out: list[LayoutNode] = []
    i, size = 0, len(baseline)
    while i < size:
        node = baseline[i]
        end = -1
        if not node.children and node.label.startswith("V:") and i + 1 < size:
            name = node.label[2:]
            j = i + 1
            # extend over letters (at most 6 in all); only the run's last letter may carry scripts
            while j < size and j - i < 6 and baseline[j].label.startswith("V:"):
                name += baseline[j].label[2:]
                if name in FUNCTION_NAMES:
                    end, found = j, name
                if baseline[j].children:
                    break
                j += 1
        if end < 0:
            out.append(node)
            i += 1
            continue
        run = baseline[i : end + 1]
        out.append(LayoutNode("F:" + found, run[-1].children, tuple(e for n in run for e in n.elements)))
        i = end + 1
    return out


def _baseline(element: etree._Element, at: dict[etree._Element, int] | None = None) -> list[LayoutNode]:
    """The baseline an element reads as; with ``at`` (element -> pre-order index), nodes remember their elements."""
    tag = _local(element.tag)
    if tag in _SKIPPED:
        return []
    here = (at[element],) if at is not None else ()
    if tag in ("mi", "mn", "mo", "mtext", "ms"):
        node = _leaf(tag, "".join(element.itertext()))
        if node is not None:
            node.elements = here
        return [node] if node else []
    children = [child for child in element if isinstance(child.tag, str)]
    if tag in _SCRIPTS:
        base = _baseline(children[0], at) if children else []
        if not base:
            base = [LayoutNode("E:", elements=here)]
        for relation, child in zip(_SCRIPTS[tag], children[1:], strict=False):
            attached = _baseline(child, at)
            if attached:
                base[-1].children[relation] = attached
        return base
    if tag == "mfrac":
        node = LayoutNode("S:frac", elements=here)
        for relation, child in zip(("num", "den"), children, strict=False):
            node.children[relation] = _baseline(child, at)
        return [node]
    if tag == "msqrt":
        return [LayoutNode("S:sqrt", {"in": [n for child in children for n in _baseline(child, at)]}, here)]
    if tag == "mroot":
        node = LayoutNode("S:root", elements=here)
        for relation, child in zip(("in", "idx"), children, strict=False):
            node.children[relation] = _baseline(child, at)
        return [node]
    if tag == "mtable":
        cells = [n for row in children for cell in row if isinstance(cell.tag, str) for n in _baseline(cell, at)]
        return [LayoutNode("S:table", {"in": cells}, here)]
    out = [n for child in children for n in _baseline(child, at)]
    return _merge_function_names(out)


def parse_layout(mathml: str | bytes, *, positions: bool = False) -> list[LayoutNode]:
    """The symbol layout tree (its main baseline) of a ``<math>`` element.

    Args:
        mathml: the ``<math>`` element.
        positions: record in each node the pre-order indices of the MathML elements it was read from
            (`LayoutNode.elements`: ``<math>`` is 0, and only elements count, not comments or entities).

    Raises:
        ValueError: the text is not well-formed XML.
    """
    data = mathml.encode("utf-8") if isinstance(mathml, str) else mathml
    try:
        root = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False))
    except etree.XMLSyntaxError as error:
        raise ValueError(f"not well-formed MathML: {error}") from error
    at = {element: i for i, element in enumerate(mathml_elements(root))} if positions else None
    return _baseline(root, at)


def mathml_elements(root: etree._Element) -> Iterator[etree._Element]:
    """The elements of a MathML tree in pre-order (comments, processing instructions and entities left out): the
    numbering of `LayoutNode.elements`, shared with the sanitiser that marks them."""
    return (element for element in root.iter() if isinstance(element.tag, str))


# --- LaTeX, for formulas KaTeX could not convert ---------------------------------------------------------------

_LATEX_TOKEN = re.compile(r"\\(?:[A-Za-z]+|.)|\d+(?:\.\d+)?|\S", re.S)
_GREEK = """
    alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi
    psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega
"""
_LATEX_SYMBOLS = {
    **{
        name: unicodedata.lookup(
            f"GREEK {'CAPITAL' if name[0].isupper() else 'SMALL'} LETTER {name.upper().replace('LAMBDA', 'LAMDA')}"
        )
        for name in _GREEK.split()
    },
    "varepsilon": "ε", "varphi": "φ", "vartheta": "ϑ", "sum": "∑", "prod": "∏", "int": "∫", "iint": "∬",
    "oint": "∮", "infty": "∞", "partial": "∂", "nabla": "∇", "cdot": "⋅", "times": "×", "pm": "±", "mp": "∓",
    "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥", "neq": "≠", "ne": "≠", "approx": "≈", "equiv": "≡", "sim": "∼",
    "in": "∈", "notin": "∉", "subset": "⊂", "subseteq": "⊆", "cup": "∪", "cap": "∩", "to": "→", "rightarrow": "→",
    "Rightarrow": "⇒", "iff": "⟺", "forall": "∀", "exists": "∃", "ldots": "…", "cdots": "⋯", "dots": "…",
}  # fmt: skip
_DROPPED_TEXT = """
    left right big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr displaystyle textstyle limits nolimits , ; ! :
    quad qquad mathrm mathbf mathit mathsf mathcal mathbb boldsymbol operatorname text mbox
"""
#: Commands that only size, space or style what follows: skipped.
_DROPPED_COMMANDS = frozenset(_DROPPED_TEXT.split())


def _latex_atoms(tokens: list[str], i: int, closer: str | None) -> tuple[list[LayoutNode], int]:
    """A baseline from LaTeX tokens, up to ``closer`` (``}``) or the end; tolerant of anything unbalanced."""
    out: list[LayoutNode] = []
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token == closer:
            return out, i
        if token in ("^", "_"):
            attached, i = _latex_argument(tokens, i)
            if not out:
                out.append(LayoutNode("E:"))
            if attached:
                out[-1].children["sup" if token == "^" else "sub"] = attached
            continue
        if token == "{":
            group, i = _latex_atoms(tokens, i, "}")
            out.extend(group)
            continue
        if token in ("}", "&", "$") or token.startswith("\\\\"):
            continue
        if token.startswith("\\"):
            name = token[1:]
            if name in _DROPPED_COMMANDS:
                continue
            if name in ("frac", "dfrac", "tfrac", "binom", "dbinom", "tbinom"):
                numerator, i = _latex_argument(tokens, i)
                denominator, i = _latex_argument(tokens, i)
                out.append(LayoutNode("S:frac", {"num": numerator, "den": denominator}))
                continue
            if name == "sqrt":
                inside, i = _latex_argument(tokens, i)
                out.append(LayoutNode("S:sqrt", {"in": inside}))
                continue
            if name in _LATEX_SYMBOLS:
                symbol = _LATEX_SYMBOLS[name]
                out.append(LayoutNode(("V:" if symbol.isalpha() else "O:") + symbol))
            else:
                out.append(LayoutNode(("F:" if name in FUNCTION_NAMES else "C:") + name))
            continue
        folded = _fold(token)
        if not folded:
            continue
        if folded[0].isdigit():
            out.append(LayoutNode("N:" + folded))
        elif folded.isalpha():
            out.append(LayoutNode("V:" + folded))
        else:
            out.append(LayoutNode("O:" + folded))
    return out, i


def _latex_argument(tokens: list[str], i: int) -> tuple[list[LayoutNode], int]:
    if i >= len(tokens):
        return [], i
    if tokens[i] == "{":
        return _latex_atoms(tokens, i + 1, "}")
    return _latex_atoms([tokens[i]], 0, None)[0], i + 1


def parse_layout_latex(latex: str) -> list[LayoutNode]:
    """An approximate symbol layout tree read straight from LaTeX (scripts, groups, fractions, roots, symbols).

    For formulas KaTeX refused: it never fails, and gives the labels MathML would give for the common cases.
    """
    baseline, _ = _latex_atoms(_LATEX_TOKEN.findall(latex), 0, None)
    return _merge_function_names(baseline)


# --- walks and canonical text -------------------------------------------------------------------------------


def generalised_label(label: str) -> str:
    """A symbol's label with letters and numbers generalised (``V:x`` -> ``V:*``, ``N:2`` -> ``N:*``)."""
    return label[:2] + "*" if label[:2] in ("V:", "N:") else label


def _nodes(baseline: list[LayoutNode]) -> Iterator[LayoutNode]:
    for node in baseline:
        yield node
        for attached in node.children.values():
            yield from _nodes(attached)


def _baselines(baseline: list[LayoutNode]) -> Iterator[list[LayoutNode]]:
    yield baseline
    for node in baseline:
        for attached in node.children.values():
            if attached:
                yield from _baselines(attached)


def _canonical(node: LayoutNode, general: bool) -> str:
    label = generalised_label(node.label) if general else node.label
    if not node.children:
        return label
    inner = ",".join(
        f"{rel}:" + " ".join(_canonical(n, general) for n in line) for rel, line in sorted(node.children.items())
    )
    return f"{label}{{{inner}}}"


def canonical(node: LayoutNode, *, general: bool = False) -> str:
    """A symbol with everything attached to it as one string: equal strings, equal sub-trees (labels generalised to
    ``V:*``/``N:*`` when ``general``)."""
    return _canonical(node, general)


class CanonicalText:
    """`canonical` strings of one tree's nodes, each made once (a node's string holds its children's): for code that
    asks for the strings of every node of a tree, which the plain function would make again at every level.

    Args:
        general: letters and numbers generalised, as in ``canonical(node, general=True)``.
    """

    def __init__(self, general: bool) -> None:
        self.general = general
        self.memo: dict[int, str] = {}

    def __call__(self, node: LayoutNode) -> str:
        text = self.memo.get(id(node))
        if text is None:
            label = generalised_label(node.label) if self.general else node.label
            if node.children:
                inner = ",".join(
                    f"{rel}:" + " ".join(self(n) for n in line) for rel, line in sorted(node.children.items())
                )
                label = f"{label}{{{inner}}}"
            text = self.memo[id(node)] = label
        return text


def layout_size(baseline: Sequence[LayoutNode]) -> int:
    """Symbols in a tree (`engine.model.structure.FormulaStructure.size` without a query's variables)."""
    return sum(_size(node) for node in baseline)


def layout_nodes(baseline: list[LayoutNode]) -> Iterator[LayoutNode]:
    """Every node of a tree (the baseline's symbols, each followed by what hangs on it), in pre-order."""
    return _nodes(baseline)


def layout_baselines(baseline: list[LayoutNode]) -> Iterator[list[LayoutNode]]:
    """Every non-empty baseline of a tree, the main one first, then those attached to its symbols, in pre-order."""
    return _baselines(baseline)


def _size(node: LayoutNode) -> int:
    return 1 + sum(_size(n) for line in node.children.values() for n in line)
