"""Proof trees (ebproof's and bussproofs' ``prooftree``) rewritten as nested fractions KaTeX renders.

Logic and type-theory papers typeset inference rules inside displays: ``\\begin{prooftree} \\hypo{A} \\hypo{B}
\\infer2[label]{C} \\end{prooftree}`` (ebproof) or ``\\AxiomC{A} \\AxiomC{B} \\BinaryInfC{C}`` (bussproofs). Both are
stack machines: a hypothesis pushes a formula, an inference pops its premises and pushes a rule whose numerator is
the premises side by side and whose denominator is the conclusion. Rewritten that way, ``\\dfrac{A \\qquad B}{C}``,
the rule keeps its formulas and its shape; line styles (double, dashed) and label placement are approximated.
"""

from __future__ import annotations

import re

from eqsearch.engine.latex.scan import read_argument, read_optional

__all__ = ["rewrite_proof_trees"]

_TREE = re.compile(r"\\begin\s*\{prooftree\}(.*?)\\end\s*\{prooftree\}", re.DOTALL)
_STEP = re.compile(
    r"\\(?P<hypo>hypo|Hypo|AxiomC|Axiom)(?![A-Za-z@])"
    r"|\\(?P<infer>infer|Infer)(?![A-Za-z@])"
    r"|\\(?P<bp>UnaryInfC|BinaryInfC|TrinaryInfC|QuaternaryInfC|QuinaryInfC|UnaryInf|BinaryInf|TrinaryInf)(?![A-Za-z@])"
    r"|\\(?P<label>RightLabel|LeftLabel)(?![A-Za-z@])"
    r"|\\(?P<ellipsis>ellipsis|Ellipsis)(?![A-Za-z@])"
)
_ARITY = {"Unary": 1, "Binary": 2, "Trinary": 3, "Quaternary": 4, "Quinary": 5}
_LEFT_LABEL = re.compile(r"left\s+label\s*=\s*")
_SPACE = " \\qquad "


def rewrite_proof_trees(latex: str) -> str:
    """Replace every ``prooftree`` environment of ``latex`` by nested ``\\dfrac``s (see the module docstring); so
    too bussproofs' trees written without the environment (``\\AxiomC{..} \\UnaryInfC{..} \\DisplayProof``) and
    mathpartir's rules (``\\inferrule*[right=Name]{A \\\\ B}{C}``)."""
    if "prooftree" in latex:
        latex = _TREE.sub(lambda m: "{" + _tree(m.group(1)) + "}", latex)
    if _BARE_START.search(latex):
        latex = _BARE_TREE.sub(lambda m: "{" + _tree(m.group(1)) + "}", latex)
    if "\\inferrule" in latex:
        latex = _inference_rules(latex)
    if "\\infer" in latex or "\\deduce" in latex:
        latex = _proof_sty_rules(latex)
    return latex


# proof.sty's \infer[label]{conclusion}{premise & premise}, its double (\infer=) and dashed (\infer-, proof-dashed)
# lines, and \deduce (the same with no line); ebproof's \infer2 inside a prooftree is read above
_PROOF_INFER = re.compile(r"\\(infer|deduce)(?![A-Za-z@0-9])[*=-]?\s*")


def _proof_sty_rules(latex: str) -> str:
    """proof.sty's ``\\infer[label]{conclusion}{premises}`` (premises separated by ``&``, rules nested inside them)
    as a fraction of the premises side by side over the conclusion, the label beside it; ``\\deduce`` as the same
    stack without a line."""
    out: list[str] = []
    pos = 0
    for m in _PROOF_INFER.finditer(latex):
        if m.start() < pos:
            continue
        label, end = read_optional(latex, m.end())
        conclusion = read_argument(latex, end)
        premises = None if conclusion is None else read_argument(latex, conclusion[1])
        if premises is None:
            continue
        above = _SPACE.join(p for p in _top_level_split(_proof_sty_rules(premises[0]), "&") if p.strip())
        beside = f"\\;{{\\scriptstyle {label}}}" if label and label.strip() else ""
        below = _proof_sty_rules(conclusion[0])
        rule = (
            f"\\dfrac{{{above}}}{{{below}}}"
            if m.group(1) == "infer"
            else f"\\genfrac{{}}{{}}{{0pt}}{{0}}{{{above}}}{{{below}}}"
        )
        out += [latex[pos : m.start()], f"{{{rule}{beside}}}"]
        pos = premises[1]
    out.append(latex[pos:])
    return "".join(out)


def _top_level_split(text: str, separator: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif c == "}" and (i == 0 or text[i - 1] != "\\"):
            depth -= 1
        elif c == separator and depth == 0 and (i == 0 or text[i - 1] != "\\"):
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


# bussproofs without a prooftree environment: from the first axiom to \DisplayProof (or the end of the formula)
_BARE_START = re.compile(r"\\(?:AxiomC|Axiom)(?![A-Za-z@])")
_BARE_TREE = re.compile(
    r"(\\(?:AxiomC|Axiom|RightLabel|LeftLabel)(?![A-Za-z@]).*?)(?:\\DisplayProof(?![A-Za-z@])|\Z)", re.DOTALL
)
_INFERRULE = re.compile(r"\\inferrule(?![A-Za-z@])\*?\s*")
_RULE_LABEL = re.compile(r"(?:^|,)\s*(right|Right|left|Left|lab|Lab|rightstyle|leftstyle)\s*=\s*")


def _inference_rules(latex: str) -> str:
    """mathpartir's ``\\inferrule*[options]{premises}{conclusion}``: premises separated by ``\\\\`` or ``\\and``
    side by side over the conclusion, the ``right=``/``left=``/``lab=`` label beside the rule."""
    out: list[str] = []
    pos = 0
    for m in _INFERRULE.finditer(latex):
        if m.start() < pos:
            continue
        options, end = read_optional(latex, m.end())
        premises = read_argument(latex, end)
        conclusion = None if premises is None else read_argument(latex, premises[1])
        if conclusion is None:
            continue
        labels = {"left": "", "right": ""}
        for label in _RULE_LABEL.finditer(options or ""):
            value = read_argument(options or "", label.end())
            text = value[0] if value is not None and (options or "")[label.end() :].lstrip().startswith("{") else None
            if text is None:
                rest = (options or "")[label.end() :]
                text = re.split(r",(?![^{}]*\})", rest, maxsplit=1)[0]
            side = "left" if label.group(1).lower().startswith("left") else "right"
            if not label.group(1).endswith("style"):
                labels[side] = text
        above = _SPACE.join(p for p in re.split(r"\\\\|\\and(?![A-Za-z@])", premises[0]) if p.strip())
        left = f"\\text{{{labels['left'].strip()}}}\\;" if labels["left"].strip() else ""
        out += [
            latex[pos : m.start()],
            f"{{{left}\\dfrac{{{above}}}{{{conclusion[0]}}}{_text_label(labels['right'])}}}",
        ]
        pos = conclusion[1]
    out.append(latex[pos:])
    return "".join(out)


def _formula(content: str) -> str:
    """A hypothesis or conclusion as math: bussproofs' are text with ``$...$`` inside, ebproof's math already."""
    return f"\\text{{{content}}}" if re.search(r"(?<!\\)\$", content) else content


def _text_label(label: str) -> str:
    label = label.strip()
    return "" if not label else f"\\;\\text{{{label}}}"


def _tree(body: str) -> str:
    stack: list[str] = []
    labels = {"right": "", "left": ""}
    pos = 0
    while (m := _STEP.search(body, pos)) is not None:
        pos = m.end()
        if m.group("label"):
            arg = read_argument(body, pos)
            if arg is not None:
                labels["right" if m.group("label") == "RightLabel" else "left"] = arg[0]
                pos = arg[1]
            continue
        if m.group("hypo"):
            arg = read_argument(body, pos)
            if arg is not None:
                stack.append(_formula(arg[0]))
                pos = arg[1]
            continue
        if m.group("ellipsis"):  # \ellipsis{label}{conclusion}: a vertical ellipsis over the conclusion
            label = read_argument(body, pos)
            conclusion = None if label is None else read_argument(body, label[1])
            if conclusion is not None:
                top = stack.pop() if stack else ""
                dots = f"\\vdots{_text_label(label[0])}"
                stack.append(f"\\begin{{gathered}}{top}\\\\ {dots}\\\\ {conclusion[0]}\\end{{gathered}}")
                pos = conclusion[1]
            continue
        left = right = ""
        if m.group("infer"):  # \infer[options]{arity}[label]{conclusion}
            options, pos = read_optional(body, pos)
            arity_arg = read_argument(body, pos)
            if arity_arg is None or not arity_arg[0].strip().isdigit():
                continue
            arity, pos = int(arity_arg[0]), arity_arg[1]
            label, pos = read_optional(body, pos)
            right = label or ""
            found = _LEFT_LABEL.search(options or "")
            if found is not None:
                value = read_argument(options or "", found.end())
                left = "" if value is None else value[0]
        else:
            name = m.group("bp")
            arity = next(n for prefix, n in _ARITY.items() if name.startswith(prefix))
            right, left = labels["right"], labels["left"]
            labels = {"right": "", "left": ""}
        conclusion = read_argument(body, pos)
        if conclusion is None:
            continue
        pos = conclusion[1]
        premises = _SPACE.join([stack.pop() for _ in range(min(arity, len(stack)))][::-1])
        left_label = f"\\text{{{left.strip()}}}\\;" if left.strip() else ""
        stack.append(f"{left_label}\\dfrac{{{premises}}}{{{_formula(conclusion[0])}}}{_text_label(right)}")
    return _SPACE.join(stack)
