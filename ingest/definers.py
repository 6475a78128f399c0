"""The commands that define macros, and the regex that finds each definition with its kind.

`DEFINER` matches ``\\newcommand`` and its kin (etoolbox's, xargs', the knowledge package's), ``\\def``, ``\\let`` and
the copy commands, ``\\DeclareMathOperator``, xparse's, mathtools' paired delimiters, siunitx's units, algorithm2e's
keywords and the environment definers; its named groups tell `eqsearch.ingest.macros` how to read what follows. A
preamble may give a definer a name of its own (``\\newcommand{\\nc}{\\newcommand}``): `definer_aliases` finds those
and `definer_pattern` makes a regex that knows them too.
"""

from __future__ import annotations

import re

__all__ = ["DEFINER", "definer_aliases", "definer_pattern"]

_DEFINERS = {
    "cmd": [
        "newcommand",
        "renewcommand",
        "providecommand",
        "DeclareRobustCommand",
        # etoolbox's robust commands, the knowledge package's commands that link a notion
        "newrobustcmd",
        "renewrobustcmd",
        "providerobustcmd",
        "knowledgenewrobustcmd",
        "knowledgenewcommand",
        "knowledgerenewcommand",
        # xargs: \newcommandx\cmd[2][1=i, 2=0]{..}, optional arguments named by position with their defaults
        "newcommandx",
        "renewcommandx",
        "providecommandx",
        "DeclareRobustCommandx",
    ],
    "def": ["def", "gdef", "edef", "xdef"],
    "let": ["let"],
    "op": ["DeclareMathOperator"],
}


def definer_pattern(aliases: dict[str, str] | None = None) -> re.Pattern[str]:
    """The definitions' regex; ``aliases`` adds user names of definers (``\\nc`` for ``\\newcommand``)."""
    names = {group: list(values) for group, values in _DEFINERS.items()}
    for alias, target in (aliases or {}).items():
        group = next((g for g, values in _DEFINERS.items() if target in values), None)
        if group is not None:
            names[group].append(alias)

    def alternatives(group: str) -> str:
        return "|".join(re.escape(n) for n in sorted(names[group], key=len, reverse=True))

    return re.compile(
        rf"\\(?:(?P<cmd>{alternatives('cmd')})(?P<cstar>\*?)"
        rf"|(?P<def>{alternatives('def')})"
        rf"|(?P<let>{alternatives('let')})"
        r"|(?P<copy>LetLtxMacro|(?:New|Renew|Declare)CommandCopy)"
        rf"|(?P<op>{alternatives('op')})(?P<ostar>\*?)"
        r"|(?P<xparse>(?:New|Renew|Provide|Declare)(?:Expandable)?DocumentCommand)"
        r"|(?P<paired>DeclarePairedDelimiter)(?P<px>XPP|X|)"
        r"|(?P<unit>DeclareSIUnit)"
        r"|(?P<kw>SetKw(?:Function|Data|Input|Output)?)"
        r"|(?P<env>newenvironment|renewenvironment|(?:New|Renew|Provide|Declare)DocumentEnvironment))(?![A-Za-z@])"
    )


DEFINER = definer_pattern()
_ALL_DEFINERS = "|".join(n for values in _DEFINERS.values() for n in values)
# \newcommand{\nc}{\newcommand}, \let\nc\newcommand, \def\nc{\newcommand}: a user name for a definer
_DEFINER_ALIAS = re.compile(
    r"\\(?:(?:re|provide)?newcommand\*?\s*\{?\s*(\\[A-Za-z@]+)\s*\}?\s*\{\s*\\(" + _ALL_DEFINERS + r")\s*\}"
    r"|[gex]?def\s*(\\[A-Za-z@]+)\s*\{\s*\\(" + _ALL_DEFINERS + r")\s*\}"
    r"|let\s*(\\[A-Za-z@]+)\s*=?\s*\\(" + _ALL_DEFINERS + r"))(?![A-Za-z@])"
)


def definer_aliases(text: str) -> dict[str, str]:
    """User names of definers (``\\newcommand{\\nc}{\\newcommand}``, then ``\\nc{\\rnc}{\\renewcommand}``) -> the
    definer's name."""
    aliases: dict[str, str] = {}
    for a in _DEFINER_ALIAS.finditer(text):
        pair = next((a.group(i), a.group(i + 1)) for i in (1, 3, 5) if a.group(i))
        aliases[pair[0][1:]] = pair[1]
    for _ in range(3):  # aliases defined with an alias
        if not aliases:
            break
        names = "|".join(re.escape(a) for a in aliases)
        targets = "|".join([*(n for values in _DEFINERS.values() for n in values), *aliases])
        nested = re.compile(rf"\\({names})\s*\{{?\s*\\([A-Za-z@]+)\s*\}}?\s*\{{\s*\\({targets})\s*\}}")
        found = {m.group(2): aliases.get(m.group(3), m.group(3)) for m in nested.finditer(text)}
        if not set(found) - set(aliases):
            break
        aliases.update(found)
    return aliases
