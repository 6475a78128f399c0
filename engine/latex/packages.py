"""Commands of common LaTeX packages that KaTeX lacks, as macros KaTeX can render: the converter's fallback table.

arXiv papers load packages whose math commands KaTeX does not implement (upgreek, physics, siunitx, unicode-math,
MNRAS's class, amsmath's capital accents, textcomp, relsize, mathtools' ``\\prescript``, slashed, hepnames...).
Each entry maps such a command to what KaTeX renders (``\\uppi`` -> ``\\pi``, ``\\pdv{f}{x}`` -> a fraction of
partials, ``\\SI{3}{m}`` -> ``3\\,\\mathrm{m}``), giving up typography (upright Greek) but keeping the formula. The
table is a fallback: a document's own definition of a name always wins, so a paper that defines ``\\abs`` or
``\\qty`` its own way keeps it.

`KNOWN_PACKAGES` names the packages the table (or KaTeX itself) covers: a copy of one of them shipped with a paper's
source (``physics.sty`` beside ``main.tex``) is the package, not the author's macros, and its TeX internals are not
read as macros.

Commands that only control layout (``\\xspace``, ``\\qedhere``, ``\\null``, display skips, counters) are dropped by
`engine.latex.preprocess.clean_latex` instead.
"""

from __future__ import annotations

from eqsearch.engine.latex.macros import MacroDef
from eqsearch.engine.latex.packagesymbols import (
    ACCENTS,
    AGDA_SANS,
    CAPITAL_GREEK,
    GLYPHS,
    GREEK,
    PARTICLES,
    TEXTCOMP,
    UNITS,
)

__all__ = ["KNOWN_PACKAGES", "LOADED_PACKAGE_MACROS", "PACKAGE_MACROS"]

#: Packages whose commands KaTeX or `PACKAGE_MACROS` provide (a shipped copy is not read for macros).
KNOWN_PACKAGES = frozenset(
    {
        "amsmath",
        "amssymb",
        "amsfonts",
        "amsthm",
        "mathtools",
        "bm",
        "upgreek",
        "physics",
        "siunitx",
        "braket",
        "xspace",
        "cleveref",
        "hyperref",
        "tikz-cd",
        "breqn",
        "relsize",
        "textcomp",
        "unicode-math",
        "dsfont",
        "euscript",
        "agda",
        "eucal",
        "bbm",
        "mathrsfs",
        "stmaryrd",
        "nicefrac",
        "xfrac",
        "cancel",
        "mathbbol",
        "esint",
        "graphicx",
        "slashed",
        "hepnames",
        "heppennames",
        "heppennames2",
        "hepparticles",
        "pennames",
        "xcolor",
        "color",
        "extarrows",
        "knowledge",
        "glossaries",
        "mathpartir",
        "bussproofs",
        "acronym",
        "mleftright",
        "tensor",
    }
)

_BRAKET = (
    "\\IfNoValueTF{#3}{\\left\\langle #2 \\right\\rangle}{\\left\\langle #3 \\middle| #2 \\middle| #3 \\right\\rangle}"
)

_OUTER = "\\left|#1\\right\\rangle\\!\\left\\langle \\IfNoValueTF{#2}{#1}{#2}\\right|"

# physics' \qif, \qand...: the word set between quads
_QQ_WORDS = (
    "if", "then", "else", "otherwise", "unless", "given", "using", "assume", "since", "let", "for", "all", "even",
    "odd", "integer", "and", "or", "as", "in",
)  # fmt: skip

# name -> (nargs, body); spec'd entries are built below
_SIMPLE: dict[str, tuple[int, str]] = {
    # upgreek (and MNRAS's \upi): upright Greek -> Greek
    **{f"\\up{g}": (0, f"\\{g}") for g in GREEK},
    **{f"\\Up{g[0].lower()}{g[1:]}": (0, f"\\{g}") for g in CAPITAL_GREEK},
    **{f"\\Up{g}": (0, f"\\{g}") for g in CAPITAL_GREEK},
    "\\upi": (0, "\\pi"),
    # MNRAS's bold fonts
    "\\mathbfit": (1, "\\boldsymbol{#1}"),
    "\\mathbfss": (1, "\\boldsymbol{\\mathsf{#1}}"),
    "\\mathbfsf": (1, "\\boldsymbol{\\mathsf{#1}}"),
    # unicode-math's alphabets
    "\\symbf": (1, "\\mathbf{#1}"),
    "\\symbfit": (1, "\\boldsymbol{#1}"),
    "\\symsf": (1, "\\mathsf{#1}"),
    "\\symit": (1, "\\mathit{#1}"),
    "\\symup": (1, "\\mathrm{#1}"),
    "\\symrm": (1, "\\mathrm{#1}"),
    "\\symcal": (1, "\\mathcal{#1}"),
    "\\symbb": (1, "\\mathbb{#1}"),
    "\\symscr": (1, "\\mathscr{#1}"),
    "\\symfrak": (1, "\\mathfrak{#1}"),
    "\\symtt": (1, "\\mathtt{#1}"),
    "\\mathbfup": (1, "\\mathbf{#1}"),
    "\\mathup": (1, "\\mathrm{#1}"),
    "\\mathsfup": (1, "\\mathsf{#1}"),
    "\\mathsfit": (1, "\\mathsf{#1}"),
    "\\mathbfsfup": (1, "\\boldsymbol{\\mathsf{#1}}"),
    "\\mathbfsfit": (1, "\\boldsymbol{\\mathsf{#1}}"),
    "\\mathbfcal": (1, "\\boldsymbol{\\mathcal{#1}}"),
    "\\mathbfscr": (1, "\\boldsymbol{\\mathscr{#1}}"),
    "\\mathbffrak": (1, "\\boldsymbol{\\mathfrak{#1}}"),
    "\\mathbbit": (1, "\\mathbb{#1}"),
    # amsmath's capital accents (for nesting) -> the plain accents
    **{f"\\{a}": (1, f"\\{a.lower()}{{#1}}") for a in ACCENTS},
    # accents: an accent set under its argument (\\underaccent{\\vec}{F}), a symbol set over it as an accent
    "\\underaccent": (2, "\\underset{#1{}}{#2}"),
    "\\accentset": (2, "\\overset{#1}{#2}"),
    "\\hdots": (0, "\\ldots"),
    "\\iddots": (0, "\\mathinner{⋰}"),
    "\\widebar": (1, "\\overline{#1}"),
    "\\llparenthesis": (0, "\\mathopen{⦇}"),
    "\\rrparenthesis": (0, "\\mathclose{⦈}"),
    # slashed (Feynman slash)
    "\\slashed": (1, "\\not{#1}"),
    # hepnames / heppennames: particle names
    **{f"\\{name}": (0, symbol) for name, symbol in PARTICLES.items()},
    # stmaryrd symbols KaTeX lacks
    "\\Yleft": (0, "\\mathbin{⤙}"),
    "\\Yright": (0, "\\mathbin{⤚}"),
    "\\varobar": (0, "\\mathbin{⦶}"),
    "\\oblong": (0, "\\mathbin{▯}"),
    "\\binampersand": (0, "\\mathbin{\\&}"),
    "\\bindnasrepma": (0, "\\mathbin{⅋}"),
    "\\lightning": (0, "\\TextOrMath{↯}{\\mathord{↯}}"),
    # wasysym's circles and MnSymbol/fdsymbol's filled diamond (linear logic's modalities, a semantics' update)
    "\\ocircle": (0, "\\TextOrMath{○}{\\mathord{○}}"),
    "\\filleddiamond": (0, "\\mathbin{◆}"),
    # esint / amsmath's quadruple integral
    "\\iiiint": (0, "\\mathop{⨌}"),
    "\\idotsint": (0, "\\int\\!\\cdots\\!\\int"),
    # textcomp / text commands in math
    "\\textsuperscript": (1, "^{\\text{#1}}"),
    # cleveref's range of references (\\cref is a placeholder in clean_latex), glossaries-extra's abbreviations
    "\\crefrange": (2, "\\text{(?)}"),
    "\\Crefrange": (2, "\\text{(?)}"),
    "\\glsfmtshort": (1, "\\text{#1}"),
    "\\glsfmtlong": (1, "\\text{#1}"),
    # mathtools' display-skip swap (spacing), bigints' taller integral signs
    "\\SwapAboveDisplaySkip": (0, ""),
    **{f"\\bigint{size}": (0, "\\displaystyle\\int") for size in ("", "s", "ss", "sss", "ssss")},
    "\\textsubscript": (1, "_{\\text{#1}}"),
    "\\textdagger": (0, "\\text{†}"),
    "\\textdaggerdbl": (0, "\\text{‡}"),
    "\\textdegree": (0, "\\text{°}"),
    "\\textbullet": (0, "\\text{•}"),
    "\\textmu": (0, "\\text{µ}"),
    "\\textperthousand": (0, "\\text{‰}"),
    **{f"\\text{name}": (0, f"\\text{{{glyph}}}") for name, glyph in TEXTCOMP.items()},
    # T1 glyphs KaTeX lacks (\text{\normalfont\dh} is the spin-raising eth of CMB papers)
    **{f"\\{name}": (0, f"\\text{{{glyph}}}") for name, glyph in GLYPHS.items()},
    # mathtools' split fractions (a long numerator over two lines), \overunderset, yhmath/fourier's arcs
    "\\splitfrac": (2, "\\genfrac{}{}{0pt}{0}{#1}{#2}"),
    "\\splitdfrac": (2, "\\genfrac{}{}{0pt}{0}{#1}{#2}"),
    "\\overunderset": (3, "\\overset{#1}{\\underset{#2}{#3}}"),
    "\\wideparen": (1, "\\overgroup{#1}"),
    "\\overparen": (1, "\\overgroup{#1}"),
    "\\underparen": (1, "\\undergroup{#1}"),
    "\\wideutilde": (1, "\\utilde{#1}"),
    "\\udots": (0, "\\mathinner{⋰}"),
    "\\varoiint": (0, "\\oiint"),
    "\\lsem": (0, "\\mathopen{⟦}"),
    "\\rsem": (0, "\\mathclose{⟧}"),
    "\\oldstylenums": (1, "#1"),
    "\\mit": (0, "\\mathit"),
    # amsmath's math space; LaTeX's "math here, whatever the mode" (a group in math, $..$ in a text box)
    "\\mspace": (1, "\\mskip{#1}"),
    # xfrac's split-level fraction (nicefrac's \\nicefrac is renamed in clean_latex)
    "\\sfrac": (2, "\\tfrac{#1}{#2}"),
    "\\ensuremath": (1, "\\TextOrMath{$#1$}{#1}"),
    # agda.sty (literate Agda in type-theory papers): each aspect in its font, colours dropped
    **{f"\\Agda{aspect}": (1, "\\textsf{#1}") for aspect in AGDA_SANS},
    "\\AgdaBound": (1, "\\textit{#1}"),
    "\\AgdaString": (1, "\\texttt{#1}"),
    "\\AgdaComment": (1, "\\texttt{#1}"),
    "\\AgdaNoSpaceMath": (1, "#1"),
    "\\AgdaFormat": (2, "#2"),
    "\\AgdaLink": (1, "#1"),
    "\\AgdaTarget": (1, ""),
    "\\AgdaSpace": (0, "\\ "),
    "\\AgdaIndent": (1, ""),
    # euscript / eucal: Euler script
    "\\EuScript": (1, "\\mathcal{#1}"),
    "\\CMcal": (1, "\\mathcal{#1}"),
    # mathtools, relsize, graphicx, amsthm
    "\\prescript": (3, "{}^{#1}_{#2}{#3}"),
    "\\mathsmaller": (1, "#1"),
    "\\mathlarger": (1, "#1"),
    "\\scaleobj": (2, "#2"),
    "\\sideset": (3, "\\mathop{{}#1{#3}#2}\\limits"),  # the limits that follow go under and over the whole
    "\\qed": (0, "\\quad\\square"),
    # AASTeX's units and symbols (the class defines them; a document using it rarely does)
    "\\kms": (0, "\\mathrm{km\\,s^{-1}}"),
    "\\arcsec": (0, "{}^{\\prime\\prime}"),
    "\\arcmin": (0, "{}^{\\prime}"),
    "\\arcdeg": (0, "{}^{\\circ}"),
    "\\micron": (0, "\\mu\\mathrm{m}"),
    "\\sun": (0, "\\odot"),
    "\\earth": (0, "\\oplus"),
    # MNRAS's roman text, TeX's \displaylimits
    "\\rmn": (1, "\\mathrm{#1}"),
    "\\displaylimits": (0, "\\limits"),
    # font switches of LaTeX 2.09 and the NFSS that KaTeX lacks (small caps and slanted shapes become upright/italic)
    "\\sc": (0, "\\rm"),
    "\\sl": (0, "\\it"),
    "\\em": (0, "\\it"),
    "\\rmfamily": (0, "\\rm"),
    "\\normalfont": (0, "\\rm"),
    "\\scshape": (0, "\\rm"),
    "\\sffamily": (0, "\\sf"),
    "\\ttfamily": (0, "\\tt"),
    "\\bfseries": (0, "\\bf"),
    "\\itshape": (0, "\\it"),
    "\\slshape": (0, "\\it"),
    "\\mdseries": (0, ""),
    # knowledge (LIPIcs papers): a notion's link or introduction is its text
    "\\cmdkl": (1, "#1"),
    "\\AP": (0, ""),
    # glossaries: an acronym shows its key
    "\\gls": (1, "\\text{#1}"),
    "\\Gls": (1, "\\text{#1}"),
    "\\glspl": (1, "\\text{#1s}"),
    "\\acrshort": (1, "\\text{#1}"),
    # acronym: an acronym shows its key
    "\\ac": (1, "\\text{#1}"),
    "\\acs": (1, "\\text{#1}"),
    "\\acl": (1, "\\text{#1}"),
    "\\acp": (1, "\\text{#1s}"),
    # plain TeX: two relations set as one (\mathrel{:}\joinrel=), a vertical box (its lines side by side)
    "\\joinrel": (0, "\\mathrel{\\mkern-3mu}"),
    "\\vbox": (1, "{#1}"),
    "\\vtop": (1, "{#1}"),
    # mathtools' size of a paired delimiter's call, met outside one: no size
    "\\delimsize": (0, ""),
    # LaTeX's bar-under text accent (\text{\b{S}})
    "\\b": (1, "\\underline{#1}"),
    # beamer's highlight, met in papers written from slides
    "\\alert": (1, "#1"),
    # soul: underline, highlight, strike-through
    "\\ul": (1, "\\underline{#1}"),
    "\\hl": (1, "#1"),
    "\\st": (1, "\\sout{#1}"),
    # mleftright, cancel
    "\\mleft": (0, "\\left"),
    "\\mright": (0, "\\right"),
    "\\mmiddle": (0, "\\middle"),
    "\\cancelto": (2, "\\cancel{#2}"),
    # breqn's relation kept out of the line-breaking
    "\\hiderel": (1, "#1"),
    # physics
    "\\order": (1, "\\mathcal{O}\\left(#1\\right)"),
    "\\grad": (0, "\\nabla"),
    "\\curl": (0, "\\nabla\\times"),
    "\\laplacian": (0, "\\nabla^2"),
    "\\vdot": (0, "\\cdot"),
    "\\cross": (0, "\\times"),
    "\\crossproduct": (0, "\\times"),
    "\\dotproduct": (0, "\\cdot"),
    "\\va": (1, "\\vec{\\mathbf{#1}}"),
    "\\vu": (1, "\\hat{\\mathbf{#1}}"),
    "\\mel": (3, "\\left\\langle #1 \\middle| #2 \\middle| #3 \\right\\rangle"),
    "\\flatfrac": (2, "#1/#2"),  # the slashed fraction of \\dv* and \\pdv*
    "\\matrixelement": (3, "\\left\\langle #1 \\middle| #2 \\middle| #3 \\right\\rangle"),
    "\\trace": (0, "\\operatorname{tr}"),
    "\\Trace": (0, "\\operatorname{Tr}"),
    "\\qc": (0, ",\\quad"),
    "\\qcomma": (0, ",\\quad"),
    **{f"\\q{word}": (0, f"\\quad\\text{{{word}}}\\quad") for word in _QQ_WORDS},
    "\\comm": (2, "\\left[#1, #2\\right]"),
    "\\acomm": (2, "\\left\\{#1, #2\\right\\}"),
    "\\pb": (2, "\\left\\{#1, #2\\right\\}"),
    "\\pmqty": (1, "\\begin{pmatrix}#1\\end{pmatrix}"),
    "\\bmqty": (1, "\\begin{bmatrix}#1\\end{bmatrix}"),
    "\\vmqty": (1, "\\begin{vmatrix}#1\\end{vmatrix}"),
    "\\tr": (0, "\\operatorname{tr}"),
    "\\Tr": (0, "\\operatorname{Tr}"),
    "\\rank": (0, "\\operatorname{rank}"),
    "\\erf": (0, "\\operatorname{erf}"),
    "\\Res": (0, "\\operatorname{Res}"),
    # siunitx
    "\\si": (1, "\\mathrm{#1}"),
    "\\unit": (1, "\\mathrm{#1}"),
    "\\SI": (2, "#1\\,\\mathrm{#2}"),
    "\\num": (1, "#1"),
    "\\ang": (1, "#1^{\\circ}"),
    "\\SIrange": (3, "#1\\text{--}#2\\,\\mathrm{#3}"),
    "\\qtyrange": (3, "#1\\text{--}#2\\,\\mathrm{#3}"),
    "\\numrange": (2, "#1\\text{--}#2"),
    "\\SIlist": (2, "#1\\,\\mathrm{#2}"),
    "\\qtylist": (2, "#1\\,\\mathrm{#2}"),
    "\\qtyproduct": (2, "#1\\,\\mathrm{#2}"),
    **{f"\\{name}": (0, symbol) for name, symbol in UNITS.items()},
}

# xparse-style entries: name -> (spec, body); "a" reads a physics-style argument in (), [], {} or ||, sized
_SPEC: dict[str, tuple[str, str]] = {
    "\\qty": ("a", "#1"),
    "\\quantity": ("a", "#1"),
    "\\pqty": ("m", "\\left(#1\\right)"),
    "\\bqty": ("m", "\\left[#1\\right]"),
    "\\Bqty": ("m", "\\left\\{#1\\right\\}"),
    "\\vqty": ("m", "\\left|#1\\right|"),
    "\\pdv": (
        "o m g g",
        "\\IfNoValueTF{#3}{\\frac{\\partial\\IfNoValueF{#1}{^{#1}}}{\\partial #2\\IfNoValueF{#1}{^{#1}}}}"
        "{\\IfNoValueTF{#4}{\\frac{\\partial\\IfNoValueF{#1}{^{#1}} #2}{\\partial #3\\IfNoValueF{#1}{^{#1}}}}"
        "{\\frac{\\partial^{2} #2}{\\partial #3\\,\\partial #4}}}",
    ),
    "\\dv": (
        "o m g",
        "\\IfNoValueTF{#3}{\\frac{\\mathrm{d}\\IfNoValueF{#1}{^{#1}}}{\\mathrm{d} #2\\IfNoValueF{#1}{^{#1}}}}"
        "{\\frac{\\mathrm{d}\\IfNoValueF{#1}{^{#1}} #2}{\\mathrm{d} #3\\IfNoValueF{#1}{^{#1}}}}",
    ),
    "\\dd": ("o g", "\\mathrm{d}\\IfNoValueF{#1}{^{#1}}\\IfNoValueF{#2}{#2}"),
    "\\vb": ("s m", "\\IfBooleanTF{#1}{\\boldsymbol{#2}}{\\mathbf{#2}}"),
    "\\ev": ("s m g", _BRAKET),
    "\\expval": ("s m g", _BRAKET),
    "\\smashoperator": ("o m", "#2"),
    # mathtools / amsmath layout commands KaTeX lacks: the material kept, the layout dropped
    "\\MoveEqLeft": ("o", "{}"),
    "\\shoveleft": ("o m", "#2"),
    "\\shoveright": ("o m", "#2"),
    "\\cramped": ("o m", "#2"),
    "\\Aboxed": ("m", "#1"),
    "\\adjustlimits": ("", "{}"),
    "\\vdotswithin": ("m", "\\vdots"),
    "\\shortvdotswithin": ("m", "\\vdots"),
    # graphicx's boxes hold text (LR mode), math inside them is written $..$: \scalebox{.9}[1]{$\bigwedge$}
    "\\scalebox": ("m o m", "\\text{#3}"),
    "\\resizebox": ("s m m m", "\\text{#4}"),
    "\\rotatebox": ("o m m", "\\text{#3}"),
    "\\makebox": ("o o m", "\\text{#3}"),
    "\\eval": ("a", "\\left.#1\\right|"),
    # physics' outer products: \ketbra{a}{b}, or \ketbra{a} for |a><a|
    "\\ketbra": ("m g", _OUTER),
    "\\dyad": ("m g", _OUTER),
    "\\outerproduct": ("m g", _OUTER),
    "\\op": ("m g", _OUTER),
    # physics' matrices: \mqty(a & b \\ c & d) a pmatrix, [..] a bmatrix, |..| a vmatrix, {..} a bare matrix
    "\\mqty": ("s x", "#2"),
    "\\matrixquantity": ("s x", "#2"),
    "\\smqty": ("x", "#1"),
    # physics' text between quads: \qq{if}, \qif, \qand; \qc and \qcomma a comma and a quad
    "\\qq": ("s m", "\\IfBooleanTF{#1}{\\text{#2}}{\\quad\\text{#2}\\quad}"),
    # physics2's \ab(...): the delimiters sized to what they hold
    "\\ab": ("a", "#1"),
    # numprint's number, with its optional unit
    "\\numprint": ("o m", "#2\\IfNoValueF{#1}{\\,\\mathrm{#1}}"),
    # a paragraph box inside a display: its text
    "\\parbox": ("o o o m m", "\\text{#5}"),
    # extarrows
    "\\xlongrightarrow": ("O{} m", "\\xrightarrow[#1]{#2}"),
    # plain TeX's \mathpalette\f{x}: \f called with the current style, which \mathchoice picks; expanded
    # here (a spec), before \f, so that a document's \f expanded here too takes the style and x as its arguments
    "\\mathpalette": (
        "m m",
        "\\mathchoice{#1\\displaystyle{#2}}{#1\\textstyle{#2}}{#1\\scriptstyle{#2}}{#1\\scriptscriptstyle{#2}}",
    ),
    "\\xlongleftarrow": ("O{} m", "\\xleftarrow[#1]{#2}"),
    "\\xLongrightarrow": ("O{} m", "\\xRightarrow[#1]{#2}"),
    "\\xLongleftarrow": ("O{} m", "\\xLeftarrow[#1]{#2}"),
    "\\xlongleftrightarrow": ("O{} m", "\\xleftrightarrow[#1]{#2}"),
    "\\xLongleftrightarrow": ("O{} m", "\\xLeftrightarrow[#1]{#2}"),
    # knowledge: \kl[notion]{text}, \intro[notion]{text}
    "\\kl": ("o m", "#2"),
    "\\intro": ("o m", "#2"),
    "\\reintro": ("o m", "#2"),
    # tensor: staggered indices
    "\\tensor": ("s o m m", "{#3}{}#4"),
    "\\indices": ("m", "{}#1"),
    # LaTeX's picture-mode circle set where it stands (\mbox{\circle{2}} over a letter): the glyph, filled when starred
    "\\circle": ("s m", "\\IfBooleanTF{#1}{\\text{●}}{\\text{○}}"),
    # a framed box around math (proof trees): \framebox[width][pos]{...}
    "\\framebox": ("o o m", "\\boxed{#3}"),
    # hyperref's link inside a formula: its text
    "\\hyperref": ("o m", "#2"),
}

_DELIMITERS: dict[str, tuple[str, str]] = {
    # physics' \abs and \norm (mathtools users declare their own, which win)
    "\\abs": ("\\lvert", "\\rvert"),
    "\\norm": ("\\lVert", "\\rVert"),
    "\\absolutevalue": ("\\lvert", "\\rvert"),
}


def _table() -> dict[str, MacroDef]:
    table = {name: MacroDef(name, body, nargs, source="package") for name, (nargs, body) in _SIMPLE.items()}
    for name, (spec, body) in _SPEC.items():
        table[name] = MacroDef(name, body, len(spec.split()), source="package", spec=spec)
    for name, pair in _DELIMITERS.items():
        table[name] = MacroDef(name, "#1", 1, source="package", delimiters=pair)
    return table


#: name -> the fallback definition (source ``package``).
PACKAGE_MACROS: dict[str, MacroDef] = _table()


def _derivative(symbol: str) -> str:
    # diffcoeff's \\diff[order]{f}{x}[point] (s o m m o; starred: f after the fraction), d or \\partial
    order = "\\IfNoValueF{#2}{^{#2}}"
    over = f"{{{symbol}{order}}}{{{symbol} #4{order}}}"
    return (
        f"\\IfBooleanTF{{#1}}{{\\frac{over}#3}}{{\\frac{{{symbol}{order} #3}}{{{symbol} #4{order}}}}}"
        "\\IfNoValueF{#5}{\\Big|_{#5}}"
    )


_DIFF = "s o m m o"
#: Package commands too common as a document's own names to stand in for every document: package -> name -> the
#: definition, added to a document's macros when its preamble loads the package (`eqsearch.ingest.localmacros`).
LOADED_PACKAGE_MACROS: dict[str, dict[str, MacroDef]] = {
    "commath": {
        "\\dif": MacroDef("\\dif", "\\mathop{}\\!\\mathrm{d}", source="package"),
        "\\od": MacroDef("\\od", "\\frac{\\mathrm{d}^{#1} #2}{\\mathrm{d} #3^{#1}}", 3, "", "package"),
        "\\pd": MacroDef("\\pd", "\\frac{\\partial^{#1} #2}{\\partial #3^{#1}}", 3, "", "package"),
    },
    "chemformula": {"\\ch": MacroDef("\\ch", "\\ce{#1}", 1, source="package")},  # mhchem's \\ce reads the same
    "physics": {  # \\var{f} is physics' variation, a delta, read as \\dd reads its arguments
        name: MacroDef(name, "\\delta\\IfNoValueF{#1}{^{#1}}\\IfNoValueF{#2}{#2}", 2, source="package", spec="o g")
        for name in ("\\var", "\\variation")
    },
    "diffcoeff": {
        "\\diff": MacroDef("\\diff", _derivative("\\mathrm{d}"), 5, source="package", spec=_DIFF),
        "\\diffp": MacroDef("\\diffp", _derivative("\\partial"), 5, source="package", spec=_DIFF),
    },
}
