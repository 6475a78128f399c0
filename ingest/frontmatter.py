"""A LaTeX document's title, authors and abstract, read the way journal classes write them.

Titles come from ``\\title`` (``\\title[short]{long}``: the long one; the last one set wins, as in LaTeX) or the
classes' own commands (ICML's ``\\icmltitle``, MDPI's ``\\Title``, INFORMS' ``\\TITLE``); a thesis whose class sets its
title page from a macro of its own has none of them: then the title the PDF declares (hyperref's ``pdftitle``) or the
document's title macro (``\\newcommand{\\thesistitle}{..}``, ``\\myTitle``, ``\\phdtitle``) is the title. Abstracts come
from the ``abstract`` environment or an ``\\abstract{...}`` command (JHEP, Springer). The document's user macros are
expanded in them first, so ``\\title{\\papertitle}`` gives the title. Authors are names only: the affiliation marks,
notes and addresses journal classes put inside ``\\author`` are dropped (MNRAS' ``$^{1}$`` and address lines, AAS'
``\\altaffilmark``, JMLR's ``\\name``/``\\email``/``\\addr``, NeurIPS' ``\\And`` blocks, ``\\thanks``, ``\\inst``, ORCID
links), and the rest is split on ``\\and``, commas and "and", so that a list never carries empty names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from eqsearch.engine.latex.macros import KatexMacros, MacroDef, MacroExpansionError, expand_macros
from eqsearch.engine.latex.scan import read_argument, read_optional, skip_space
from eqsearch.ingest.plaintext import latex_to_text, title_text

__all__ = ["FrontMatter", "read_front_matter", "untitled"]

_TITLE_COMMANDS = ("title", "icmltitle", "Title", "TITLE", "SetTitle", "settitle")  # \SetTitle: ufthesis.cls
_AUTHOR_COMMANDS = ("author", "icmlauthor", "Author", "AUTHOR")
_ABSTRACT_ENV = re.compile(r"\\begin\s*\{(abstract\*?|Abstract)\}(.*?)\\end\s*\{\1\}", re.DOTALL)
_ABSTRACT_COMMANDS = ("abstract", "Abstract", "ABSTRACT")
# Inside \author: notes and marks whose argument goes with them (an affiliation, an address, an e-mail)
_NOTES = re.compile(
    r"\\(?:thanks|footnote|footnotetext|inst|altaffilmark|altaffiliation|affil|affiliation|affilmark|address|email|"
    r"ead|orcid|orcidlink|orcidID|textsuperscript|IEEEauthorrefmark|fnref|corref|tnoteref|thanksref|homepage|"
    r"addr|ORCID|authornote|icmlaffiliation|icmlcorrespondingauthor|mailto|note|IEEEauthorblockA)(?![A-Za-z@])\*?"
)
_MARKS = re.compile(r"\\(?:footnotemark|fnmark|samethanks|IEEEmembership)(?![A-Za-z@])\*?\s*(?:\[[^\]]*\])?")
_SUPERSCRIPT = re.compile(r"\$\s*\^\s*(?:\{[^{}$]*\}|[^{}$\s])\s*\$|\^\s*\{[^{}]*\}|\$\s*\{?\s*\}?\s*\$")
_NAME_START = re.compile(r"\\name(?![A-Za-z@])")
# an e-mail or web address written beside a name: \href{mailto:..}{..}, \url{..}, \nolinkurl{..}, \texttt{a@b}
_CONTACT = re.compile(
    r"\\href\s*\{[^{}]*\}\s*\{(?:[^{}]|\{[^{}]*\})*\}|\\(?:url|nolinkurl)\s*\{[^{}]*\}|\\texttt\s*\{[^{}]*@[^{}]*\}"
)
_EMPTY_PARENTHESES = re.compile(r"\(\s*\)|\[\s*\]")
_BLOCK_SPLIT = re.compile(r"\\(?:and|AND|And)(?![A-Za-z@])")
_LINE_BREAK = re.compile(r"\\\\\*?(?:\s*\[[^\]]*\])?|\\newline(?![A-Za-z@])|\\par(?![A-Za-z@])")
_NAME_SPLIT = re.compile(r"\s*(?:,|;|&|\band\b|\bund\b)\s*")
_SUFFIXES = {"jr", "sr", "ii", "iii", "iv"}
_NOT_A_NAME = re.compile(r"@|https?:|www\.|^\W*$|^\d[\d\s,.*†‡§]*$")
_AFFILIATION_WORDS = re.compile(
    r"\b(?:University|Universit[àäé]|Institute|Institut|Department|Dept\.?|Laboratory|Observatory|College|School|"
    r"Center|Centre|Faculty|Academy|Division|Max Planck|CNRS|Inc\.|Ltd|Corporation|Google|Microsoft|Research)\b"
)
_EXPANSIONS = 2000


class FrontMatter:
    """What a document's front matter gives.

    Attributes:
        title: the title as one line of plain text, or None when the document has none.
        abstract: the abstract as plain text, or None.
        authors: the authors' names, in order, none empty.
    """

    def __init__(self, title: str | None, abstract: str | None, authors: list[str]) -> None:
        self.title = title
        self.abstract = abstract
        self.authors = authors


def read_front_matter(text: str, macros: Sequence[MacroDef] = ()) -> FrontMatter:
    """Title, abstract and authors of a document's text (comments removed, inputs expanded).

    Args:
        text: the document's whole text.
        macros: the document's user macros, expanded in what is read.
    """
    expand = _expander(macros)
    title = None
    for command in _TITLE_COMMANDS:
        found = [title_text(expand(arg)) for arg in command_arguments(text, command)]
        found = [t for t in found if t]
        if found:
            title = found[-1]  # the last \title set is the one \maketitle prints
            break
    if not title:
        title = _declared_title(text, macros, expand)
    abstract_match = _ABSTRACT_ENV.search(text)
    raw_abstract = abstract_match.group(2) if abstract_match else None
    if raw_abstract is None or not raw_abstract.strip():
        raw_abstract = next((a for c in _ABSTRACT_COMMANDS for a in command_arguments(text, c) if a.strip()), None)
    abstract = latex_to_text(expand(raw_abstract)) if raw_abstract else None
    authors: list[str] = []
    for command in _AUTHOR_COMMANDS:
        for arg in command_arguments(text, command):
            authors.extend(author_names(expand(arg)))
        if authors:
            break
    return FrontMatter(title or None, abstract or None, list(dict.fromkeys(authors)))


# hyperref's pdftitle={..} (in \hypersetup or the package's options); a title macro of a thesis template
_PDFTITLE = re.compile(r"(?<![A-Za-z])pdftitle\s*=\s*")
# a class's title command of keys (\puttitle{title=.., name=..}); a title page
_KEYED_TITLE = re.compile(r"\\[A-Za-z]*title\*?\s*\{", re.I)
_FONTSIZE = re.compile(r"\\fontsize\s*\{\s*(\d+(?:\.\d+)?)\s*(?:pt)?\s*\}\s*\{[^{}]*\}\s*\\selectfont(?![A-Za-z@])")
_SEGMENT_END = re.compile(r"\n\s*\n|\\(?:vspace|vskip|fontsize|end)(?![A-Za-z@])")
_COLOR = re.compile(r"\\(?:textcolor|color)\s*\{[^{}]*\}")
_TITLE_PAGE = re.compile(r"\\begin\s*\{titlepage\}(.*?)\\end\s*\{titlepage\}", re.DOTALL)
_CLASS_TITLE = re.compile(r"\\(?:thesis|dissertation|cover|report|project|doc|main|full)title\*?\s*\{", re.I)
_FRONT = re.compile(
    r"\\begin\s*\{document\}(.*?)(?:\\(?:section|chapter)\*?\s*[{\[]|\\begin\s*\{abstract\}|\Z)", re.DOTALL
)
_TITLE_MACRO = re.compile(
    r"\\(?:my|the|thesis|phd|project|doc|document|report|dissertation|main|full|work|t)?title", re.I
)


def _declared_title(text: str, macros: Sequence[MacroDef], expand: Callable[[str], str]) -> str | None:
    """The title of a document without a title command: a thesis class's own title command (``\\thesistitle{..}``,
    ``\\covertitle{..}``), hyperref's ``pdftitle``, a class's title command of keys
    (``\\puttitle{title=.., name=..}``), a title macro of its own, else the largest words of its title page, or of
    the front of its body where it has none (a journal template's title set by hand, PLOS's ``{\\Large\\textbf..}``)."""
    for m in _CLASS_TITLE.finditer(text):  # a thesis class's own title command: \thesistitle{..}, \covertitle{..}
        arg = read_argument(text, m.end() - 1)
        found = "" if arg is None else title_text(expand(arg[0]))
        if len(found.split()) >= 2 and "\\" not in found:
            return found
    for m in _PDFTITLE.finditer(text):
        pos = skip_space(text, m.end())
        arg = read_argument(text, pos) if text.startswith("{", pos) else None
        value = arg[0] if arg is not None else re.split(r"[,}\]\n]", text[pos:], maxsplit=1)[0]
        found = title_text(expand(value))
        if len(found.split()) >= 2 and "\\" not in found:
            return found
    for m in _KEYED_TITLE.finditer(text):
        arg = read_argument(text, m.end() - 1)
        key = None if arg is None else re.search(r"(?:\A|,)\s*title\s*=\s*", arg[0])
        if key is not None:
            found = title_text(expand(_keyval(arg[0], key.end())))
            if len(found.split()) >= 2:
                return found
    for macro in reversed(macros):  # the last definition wins; a class's default ("No Title Given") is none
        if macro.nargs == 0 and macro.source != "class" and _TITLE_MACRO.fullmatch(macro.name.strip()):
            found = title_text(expand(macro.body))
            if len(found.split()) >= 2 and "\\" not in found:
                return found
    page = _TITLE_PAGE.search(text)
    if page is not None:
        return _largest_words(page.group(1), expand)
    front = _FRONT.search(text)  # a journal template's title set by hand (PLOS: {\Large\textbf\newline{..}})
    return None if front is None else _largest_words(front.group(1), expand)


def _keyval(text: str, pos: int) -> str:
    """The value of a key=value pair starting at ``pos``: a brace group, or the text up to the next comma."""
    if text.startswith("{", pos):
        arg = read_argument(text, pos)
        if arg is not None:
            return arg[0]
    depth, end = 0, pos
    while end < len(text) and not (text[end] == "," and depth == 0):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        end += 1
    return text[pos:end]


def _largest_words(page: str, expand: Callable[[str], str]) -> str | None:
    """The words a title page sets in its largest size (``{\\Huge\\textbf{..}}``, ``\\fontsize{36}{40}\\selectfont``),
    three of them at least."""
    sizes = sorted(((float(m.group(1)), m.end()) for m in _FONTSIZE.finditer(page)), key=lambda x: -x[0])
    for _, end in sizes[:1]:
        words = _COLOR.sub("", _SEGMENT_END.split(page[end:], maxsplit=1)[0])
        found = title_text(expand(_LINE_BREAK.sub(" ", words)))
        if len(found.split()) >= 3 and "\\" not in found:
            return found
    for size in ("Huge", "huge", "LARGE", "Large", "large"):
        for m in re.finditer(
            r"\\" + size + r"(?![A-Za-z@])\s*(?:\\(?:textbf|textsc|bfseries|sffamily|newline)(?![A-Za-z@])\s*)*", page
        ):
            arg = read_argument(page, m.end()) if page.startswith("{", m.end()) else None
            words = arg[0] if arg is not None else re.split(r"\n\s*\n|\}|\\(?:vspace|vfill|par)\b", page[m.end() :])[0]
            words = _LINE_BREAK.sub(" ", words)  # \\[0.25cm] between the title's lines
            found = title_text(expand(words))
            if len(found.split()) >= 3 and "\\" not in found:
                return found
    return None


def untitled(main_file: str | None, source: str) -> str:
    """The placeholder title of a document without one: its source's and main file's names, never empty."""
    name = source.rstrip("/").rsplit("/", 1)[-1] or source
    return f"Untitled ({name}: {main_file})" if main_file else f"Untitled ({name})"


def command_arguments(text: str, command: str) -> list[str]:
    """The mandatory argument of every ``\\command`` (``\\command*``, after an optional ``[...]``) in ``text``;
    a use inside a definition of the command itself (``\\renewcommand{\\title}``) is skipped."""
    out: list[str] = []
    for m in re.finditer(r"\\" + command + r"(?![A-Za-z@])\*?\s*", text):
        before = text[max(0, m.start() - 16) : m.start()]
        if re.search(r"\\(?:re|provide)?newcommand\*?\s*\{?\s*\Z|\\[gex]?def\s*\Z|\\let\s*\Z", before):
            continue
        _, pos = read_optional(text, m.end())
        pos = skip_space(text, pos)
        arg = read_argument(text, pos) if text.startswith("{", pos) else None  # \TITLE/fig/ in a path: no title
        if arg is not None and "#" not in arg[0]:
            out.append(arg[0])
    return out


def author_names(argument: str) -> list[str]:
    """The names of one ``\\author`` argument: notes and marks dropped, blocks and lists split, no empty name."""
    jmlr = _NAME_START.search(argument) is not None  # JMLR: \name First Last \email ... \addr ... per author
    blocks = _NAME_START.split(argument)[1:] if jmlr else _BLOCK_SPLIT.split(argument)
    names: list[str] = []
    for block in blocks:
        block = _EMPTY_PARENTHESES.sub(" ", _CONTACT.sub(" ", block))
        text = _SUPERSCRIPT.sub(" ", _MARKS.sub(" ", _drop_notes(block)))
        first_line = next((line for line in _LINE_BREAK.split(text) if latex_to_text(line).strip(" ,;")), "")
        for piece in _NAME_SPLIT.split(latex_to_text(first_line).replace("\n", " ")):
            name = " ".join(piece.replace("$", " ").split()).strip(" ,;.*†‡§")
            if not name or _NOT_A_NAME.search(name) or _AFFILIATION_WORDS.search(name):
                continue
            if name.lower().rstrip(".") in _SUFFIXES and names:
                names[-1] = f"{names[-1]}, {name}"
                continue
            names.append(name)
    return names


def _drop_notes(block: str) -> str:
    """One author's block without the notes of `_NOTES` and their arguments (an optional one, then a brace group;
    JMLR's ``\\email`` and ``\\addr`` without braces take the rest of the block)."""
    out: list[str] = []
    pos = 0
    for m in _NOTES.finditer(block):
        if m.start() < pos:
            continue
        out.append(block[pos : m.start()] + " ")
        _, end = read_optional(block, m.end())
        end = skip_space(block, end)
        if end < len(block) and block[end] == "{":
            arg = read_argument(block, end)
            pos = len(block) if arg is None else arg[1]
        elif m.group(0).startswith(("\\email", "\\addr")):
            pos = len(block)
        else:
            arg = read_argument(block, end)
            pos = end if arg is None else arg[1]
    out.append(block[pos:])
    return "".join(out)


def _expander(macros: Sequence[MacroDef]) -> Callable[[str], str]:
    table = KatexMacros(expanded={m.name: m for m in macros if m.name.startswith("\\") and not m.delimiters})

    def expand(text: str) -> str:
        if not table.expanded:
            return text
        try:
            return expand_macros(text, table, max_expansions=_EXPANSIONS, max_length=max(4 * len(text), 20_000))
        except MacroExpansionError:
            return text

    return expand
