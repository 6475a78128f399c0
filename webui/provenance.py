"""Where a hit comes from, read off the ids the index already stores: the collection, the document, a link.

A reader must tell an arXiv paper from a SageMath manual page or a statsmodels one at a glance. The ids say it:
an arXiv paper's id is its arXiv id (and its equations' ids carry the source version, ``2002.00002v3:4``), a page of
a manual or a document of a LaTeX folder is ``<collection>/<path>`` (the collection being the folder ingested: for
`make run`'s corpus the Debian package the manual came in, e.g. ``python-statsmodels-doc``), a Python module's
docstrings are ``py:<module>``. Only an arXiv paper gets an outside link: a manual page was read from a package,
whose pages have no address that eqsearch could vouch for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# New-style arXiv ids (0704.0001 onwards) and old-style ones (math/0101001, math.AG/0101001).
_ARXIV_NEW = re.compile(r"\d{4}\.\d{4,5}")
_ARXIV_OLD = re.compile(r"[a-z][a-z\-]*(\.[A-Z]{2})?/\d{7}")
_VERSION = re.compile(r"v(\d+)")


@dataclass(frozen=True)
class Provenance:
    """Where one document (a paper, a manual page, a module) comes from.

    Args:
        collection: what kind of source, for a reader: ``arXiv``, the collection's name, ``Python docstrings``.
        document: the document within it: the arXiv id (with its version when known), the page path, the module.
        url: a link to the original (arXiv papers only), or None.
    """

    collection: str
    document: str
    url: str | None = None


def source_version(paper_id: str, eq_id: str | None) -> str | None:
    """The source version an equation id records (``2002.00002v3:4`` -> ``3``), or None."""
    if not eq_id:
        return None
    key = eq_id.rsplit(":", 1)[0]
    if key.startswith(paper_id):
        found = _VERSION.fullmatch(key[len(paper_id) :])
        if found:
            return found.group(1)
    return None


def provenance(paper_id: str, version: str | int | None = None) -> Provenance:
    """The provenance of the document `paper_id` (``version``: its source version when known)."""
    if _ARXIV_NEW.fullmatch(paper_id) or _ARXIV_OLD.fullmatch(paper_id):
        versioned = f"{paper_id}v{version}" if version not in (None, "") else paper_id
        return Provenance("arXiv", versioned, f"https://arxiv.org/abs/{versioned}")
    if paper_id.startswith("py:"):
        module = paper_id[3:]
        return Provenance("Python docstrings", module)
    collection, slash, path = paper_id.partition("/")
    if slash and collection and path:
        return Provenance(collection, path)
    return Provenance("documents", paper_id)


def provenance_of_equation(paper_id: str, eq_id: str | None = None) -> Provenance:
    """The provenance of the document an equation id belongs to (its version read from the id)."""
    return provenance(paper_id, source_version(paper_id, eq_id))
