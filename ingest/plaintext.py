"""LaTeX prose -> plain-ish text for titles, abstracts and the context around equations.

Inline math is kept as ``$...$`` (it is part of what a reader sees), display math becomes ``[math]``, references
and citations become short placeholders, formatting commands keep their argument and lose their name.
"""

from __future__ import annotations

import re

from eqsearch.engine.latex.scan import read_argument, read_arguments, read_optional

_DISPLAY = re.compile(
    r"\$\$.*?\$\$|(?<!\\)\\\[.*?(?<!\\)\\\]|\\begin\s*\{(equation|align|gather|multline|flalign|alignat|eqnarray|"
    r"displaymath|dmath|dgroup|IEEEeqnarray|xalignat|subequations)(\*?)\}.*?\\end\s*\{\1\2\}",
    re.DOTALL,
)
# Commands with several arguments of which one is the text: (arguments read, index of the one kept or None).
_ARGUMENT_RULES: dict[str, tuple[int, int | None]] = {
    "texorpdfstring": (2, 0),
    "hyperlink": (2, 1),
    "hypertarget": (2, 1),
    "hyperref": (1, 0),  # \hyperref[label]{text}: the optional argument is dropped with the name
    "markboth": (2, None),
    "markright": (1, None),
    "index": (1, None),
    "footnotemark": (0, None),
}
_ARGUMENT_COMMAND = re.compile(r"\\(" + "|".join(_ARGUMENT_RULES) + r")(?![A-Za-z@])\*?\s*(?:\[[^\]]*\])?")
_LINE_BREAK = re.compile(r"(?<!\\)(?:\\\\)*\\\\\*?\s*\[[^\]]{0,20}\]")  # \\[2pt]
_TITLE_NOTES = re.compile(r"\\(?:thanks|footnote|label)(?![A-Za-z@])\*?")
_INLINE = re.compile(r"(?<!\\)\$(?:\\.|[^$\\])+\$|\\\((?:.|\n)*?\\\)")
_DROP_WITH_ARGS = re.compile(
    r"\\(?:label|vspace|hspace|includegraphics|bibliographystyle|bibliography|usepackage|input|include|"
    r"setlength|addtolength|setcounter|addtocounter|newcounter|pagestyle|thispagestyle|documentclass|"
    r"addbibresource|graphicspath|hypersetup|color|pagenumbering|numberwithin|newtheorem|theoremstyle|"
    r"linespread|fontsize|definecolor|renewcommand|newcommand|providecommand|DeclareMathOperator)\*?"
    r"\s*(?:\[[^\]]*\]\s*)*(?:\{(?:[^{}]|\{[^{}]*\})*\}\s*)*"
)
_CITE = re.compile(r"\\(?:no)?cite[a-zA-Z]*\*?\s*(?:\[[^\]]*\]\s*)*\{[^{}]*\}")
_REF = re.compile(r"\\(?:eq|auto|c|C|page|name|v)?ref\*?\s*\{[^{}]*\}")
_URL = re.compile(r"\\url\s*\{([^{}]*)\}")
_HREF = re.compile(r"\\href\s*\{[^{}]*\}\s*\{([^{}]*)\}")
_ENV = re.compile(r"\\(?:begin|end)\s*\{[^{}]*\}(?:\s*\[[^\]]*\])?")
_ACCENT = re.compile(r"\\[`'^\"~=.]\s*\{?\\?([A-Za-z])\}?|\\[uvHtcdbk](?:\s+|\{\\?)([A-Za-z])\}?")
_SYMBOL = {
    "\\&": "&",
    "\\%": "%",
    "\\$": "$",
    "\\_": "_",
    "\\#": "#",
    "\\{": "{",
    "\\}": "}",
    "\\\\": "\n",
    "\\,": " ",
    "\\;": " ",
    "\\:": " ",
    "\\!": "",
    "\\ ": " ",
    "\\/": "",
    "\\-": "",
    "~": " ",
    "``": '"',
    "''": '"',
    "---": "—",
    "--": "–",
}
_SYMBOLS = re.compile("|".join(re.escape(k) for k in sorted(_SYMBOL, key=len, reverse=True)))
_WORDS = {"\\ldots": "…", "\\dots": "…", "\\LaTeX": "LaTeX", "\\TeX": "TeX", "\\item": "•", "\\and": ",", "\\par": "\n"}
_CONTROL = re.compile(r"\\[A-Za-z@]+\*?")
_OPTIONAL_AFTER_CONTROL = re.compile(r"(\\[A-Za-z@]+\*?)\s*\[[^\[\]]*\]")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_NEWLINES = re.compile(r"\s*\n\s*")


def _argument_commands(text: str) -> str:
    """Keep the text argument of the commands of `_ARGUMENT_RULES` and drop the others."""
    if "\\" not in text or _ARGUMENT_COMMAND.search(text) is None:
        return text
    out: list[str] = []
    pos = 0
    for m in _ARGUMENT_COMMAND.finditer(text):
        if m.start() < pos:
            continue
        count, keep = _ARGUMENT_RULES[m.group(1)]
        args, end = read_arguments(text, m.end(), count)
        out.append(text[pos : m.start()])
        out.append(" " + args[keep] + " " if keep is not None and keep < len(args) else " ")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _reduce_prose(text: str) -> str:
    text = _CITE.sub("[cite]", text)
    text = _REF.sub("[ref]", text)
    text = _HREF.sub(r"\1", text)
    text = _URL.sub(r"\1", text)
    text = _DROP_WITH_ARGS.sub(" ", text)
    text = _ENV.sub(" ", text)
    text = _ACCENT.sub(lambda m: m.group(1) or m.group(2), text)
    text = _OPTIONAL_AFTER_CONTROL.sub(r"\1", text)
    text = _CONTROL.sub(lambda m: _WORDS.get(m.group(0), " " if m.group(0) in ("\\quad", "\\qquad") else ""), text)
    text = _SYMBOLS.sub(lambda m: _SYMBOL[m.group(0)], text)
    return text.replace("{", "").replace("}", "")


def latex_to_text(text: str) -> str:
    """Reduce LaTeX prose to readable text (whitespace collapsed, paragraphs kept as single newlines).

    Args:
        text: LaTeX source with comments already removed; may start or end in the middle of a construct.

    Returns:
        Plain text; inline math kept as ``$...$``, display math as ``[math]``.
    """
    text = _DISPLAY.sub(" [math] ", text)
    text = _LINE_BREAK.sub("\n", _argument_commands(text))
    parts: list[str] = []
    pos = 0
    for m in _INLINE.finditer(text):
        parts.append(_reduce_prose(text[pos : m.start()]))
        parts.append(m.group(0) if m.group(0).startswith("$") else "$" + m.group(0)[2:-2] + "$")
        pos = m.end()
    parts.append(_reduce_prose(text[pos:]))
    joined = _SPACES.sub(" ", "".join(parts))
    return _NEWLINES.sub("\n", joined).strip()


def title_text(text: str) -> str:
    """A heading or title as one line of plain text: footnotes, ``\\thanks`` and labels dropped, line breaks and
    ``\\texorpdfstring``'s second argument too (so a title is never read twice)."""
    out: list[str] = []
    pos = 0
    for m in _TITLE_NOTES.finditer(text):
        if m.start() < pos:
            continue
        out.append(text[pos : m.start()])
        arg = read_argument(text, read_optional(text, m.end())[1])
        pos = m.end() if arg is None else arg[1]
    out.append(text[pos:])
    return " ".join(latex_to_text("".join(out).replace("\\\\", " ")).split())


def last_words(text: str, limit: int) -> str:
    """The end of ``text``, at most ``limit`` characters, starting at a word boundary."""
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    space = cut.find(" ")
    return cut[space + 1 :] if 0 <= space < limit // 4 else cut


def first_words(text: str, limit: int) -> str:
    """The start of ``text``, at most ``limit`` characters, ending at a word boundary."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit * 3 // 4 else cut
