"""Download the real LaTeX this machine can reach (shared/research/corpora.md) into a cache folder.

Sets, each from an ordinary package registry:

- ``texlive``: TeX Live documentation sources (Debian ``texlive-*-doc``), ~900 LaTeX documents.
- ``gretl``: the gretl guide (Debian ``gretl-doc``), a book in LaTeX.
- ``rvignettes``: ``.Rnw`` vignettes of R packages (Debian ``r-cran-*``), journal-style papers.
- ``docstrings``: wheels of scientific Python packages (PyPI, ``pip download --no-deps``), docstring math.

Debian packages are fetched with ``apt-get download`` and unpacked with ``dpkg-deb -x`` (never installed);
Debian compresses documentation, so ``.tex.gz``-like files are decompressed in the cache. Nothing is written
into the repository.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from eqsearch.ingest.errors import IngestError

DEBIAN_SETS: dict[str, tuple[str, ...]] = {
    "texlive": (
        "texlive-science-doc",
        "texlive-publishers-doc",
        "texlive-latex-base-doc",
        "texlive-latex-recommended-doc",
    ),
    "gretl": ("gretl-doc",),
    "rvignettes": (
        "r-cran-gnm",
        "r-cran-zoo",
        "r-cran-sandwich",
        "r-cran-strucchange",
        "r-cran-vcd",
        "r-cran-mvtnorm",
        "r-cran-lmtest",
        "r-cran-matrix",
        "r-cran-survival",
        "r-cran-coda",
        "r-cran-expm",
        "r-cran-lme4",
        "r-cran-quantreg",
        "r-cran-mcmcpack",
        "r-cran-pscl",
        "r-cran-mclust",
        "r-cran-flexmix",
    ),
}
PYTHON_PACKAGES = ("sympy==1.14.0", "mpmath==1.3.0", "scipy==1.16.3", "statsmodels==0.14.5")
CORPUS_SETS = (*DEBIAN_SETS, "docstrings")
_COMPRESSED_SOURCES = (".tex.gz", ".Rnw.gz", ".rnw.gz", ".bib.gz", ".bbl.gz", ".sty.gz", ".ltx.gz", ".cls.gz")


def _run(command: list[str], cwd: Path, log: Callable[[str], None]) -> None:
    log("$ " + " ".join(command))
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise IngestError(
            f"{command[0]} failed ({result.returncode}): {result.stderr.strip()[-500:]}",
            reason="fetch_failed",
            hint="on Debian run 'apt-get update' once first; the command needs network access to the registry",
        )


def _gunzip_sources(root: Path) -> int:
    count = 0
    for dirpath, _, filenames in os.walk(root):
        for filename in filenames:
            if filename.endswith(_COMPRESSED_SOURCES):
                path = Path(dirpath, filename)
                target = path.with_suffix("")
                with gzip.open(path, "rb") as src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
                path.unlink()
                count += 1
    return count


def fetch_corpus(cache: Path, sets: list[str], log: Callable[[str], None] = lambda _: None) -> Iterator[Path]:
    """Download and unpack the given sets into ``cache``; yields the paths to pass to ``ingest extract``.

    Args:
        cache: the cache folder (created); reruns reuse what is there.
        sets: names from `CORPUS_SETS`.
        log: receives the commands run, one line each.

    Raises:
        IngestError: a download or unpack command failed.
    """
    debs = cache / "debs"
    unpacked = cache / "unpacked"
    for name in sets:
        if name == "docstrings":
            wheels = cache / "wheels"
            wheels.mkdir(parents=True, exist_ok=True)
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(wheels)]
            _run([*command, *PYTHON_PACKAGES], cache, log)
            yield from sorted(wheels.glob("*.whl"))
            continue
        debs.mkdir(parents=True, exist_ok=True)
        for package in DEBIAN_SETS[name]:
            target = unpacked / package
            if not target.exists():
                if not list(debs.glob(f"{package}_*.deb")):
                    _run(["apt-get", "download", package], debs, log)
                deb = sorted(debs.glob(f"{package}_*.deb"))[-1]
                partial = unpacked / (package + ".partial")
                shutil.rmtree(partial, ignore_errors=True)
                partial.mkdir(parents=True)
                _run(["dpkg-deb", "-x", str(deb), str(partial)], cache, log)
                log(f"{package}: decompressed {_gunzip_sources(partial)} source files")
                partial.rename(target)
            yield target
