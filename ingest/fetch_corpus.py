"""Download real math from the ordinary package registries (Debian, PyPI, CRAN mirrors on Debian) into a cache folder.

Sets, each from an ordinary package registry (download sizes as measured on Debian 12 and PyPI):

- ``texlive``: TeX Live documentation sources (4 Debian ``texlive-*-doc``, 432 MB), ~980 LaTeX documents.
- ``gretl``: the gretl guide (Debian ``gretl-doc``, 2 MB), a book in LaTeX.
- ``rvignettes``: the ``.Rnw`` vignettes of the 236 Debian R packages that ship one (``r-cran-*``, ``r-bioc-*``;
  371 MB; ~500 vignettes, journal-style papers). Found once with ``apt-get download`` + ``dpkg-deb -c`` over all
  Debian R packages; packages over 8 MB with a single vignette are left out. (R packages' rendered HTML
  vignettes with MathJax are read too.)
- ``docstrings``: wheels of 51 scientific Python packages (PyPI, ``pip download --no-deps``, 278 MB), docstring
  math; module = document.
- ``sagemath``: SageMath's English reference manual and tutorials, HTML with MathJax (Debian ``sagemath-doc``,
  75 MB): ~570 pages with display math, and a shared bibliography that the pages cite.
- ``dealii``: the deal.II tutorial programs and class documentation, Doxygen HTML with MathJax (Debian
  ``libdeal.ii-doc``, 259 MB; only its ``doxygen/deal.II`` folder is kept): ~230 pages with display math.
- ``sphinx``: Sphinx (and a few Doxygen) HTML manuals with MathJax of 25 scientific packages (Debian
  ``python-*-doc`` and others, 228 MB): scipy, statsmodels, scikit-learn, sasmodels, qutip, fluids, ...

Debian packages are fetched with ``apt-get download`` and unpacked with ``dpkg-deb -x`` (never installed);
Debian compresses documentation, so ``.tex.gz``-like files are decompressed in the cache. Of an HTML manual only its
documentation folder is kept, under ``CACHE/html/<package>`` (the package name becomes the prefix of the pages'
ids), less the API pages that Sphinx generated from docstrings the ``docstrings`` set already reads (the same
formulas under two ids would leak between training and held-out papers). Nothing is written into the repository.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from eqsearch.ingest.errors import IngestError
from eqsearch.ingest.files import is_tex_name
from eqsearch.ingest.htmlmath import HTML_SUFFIXES

# The Debian R packages that ship a `.Rnw` vignette (found once with apt-get download + dpkg-deb -c over every
# r-cran-*/r-bioc-* package of Debian 12), less those over 8 MB with a single vignette.
_R_VIGNETTE_PACKAGES = """
r-bioc-affy r-bioc-altcdfenvs r-bioc-annotate r-bioc-annotationdbi r-bioc-arrayexpress r-bioc-biobase
r-bioc-biocparallel r-bioc-biocstyle r-bioc-biostrings r-bioc-biovizbase r-bioc-bsgenome
r-bioc-consensusclusterplus r-bioc-ctc r-bioc-cummerbund r-bioc-delayedarray r-bioc-deseq
r-bioc-dirichletmultinomial r-bioc-dnacopy r-bioc-drimseq r-bioc-ebseq r-bioc-edger r-bioc-genefilter
r-bioc-geneplotter r-bioc-genomeinfodb r-bioc-genomicalignments r-bioc-genomicfiles r-bioc-genomicranges
r-bioc-ggbio r-bioc-goseq r-bioc-graph r-bioc-grohmm r-bioc-gseabase r-bioc-hilbertvis r-bioc-iranges
r-bioc-limma r-bioc-lpsymphony r-bioc-makecdfenv r-bioc-mergeomics r-bioc-metagenomeseq r-bioc-monocle
r-bioc-noiseq r-bioc-oligo r-bioc-organismdbi r-bioc-pcamethods r-bioc-pwmenrich r-bioc-qvalue r-bioc-rbgl
r-bioc-rgsepd r-bioc-rots r-bioc-rsamtools r-bioc-rtracklayer r-bioc-s4vectors r-bioc-savr r-bioc-shortread
r-bioc-snpstats r-bioc-sva r-bioc-titancna r-bioc-variantannotation r-cran-actuar r-cran-adephylo r-cran-aer
r-cran-amap r-cran-apcluster r-cran-ape r-cran-bbmle r-cran-bms r-cran-bradleyterry2 r-cran-brobdingnag
r-cran-calibrate r-cran-car r-cran-cgdsr r-cran-clue r-cran-coin r-cran-colorspace r-cran-cvar r-cran-dbscan
r-cran-desolve r-cran-devtools r-cran-dimred r-cran-diptest r-cran-distr r-cran-domc r-cran-doparallel
r-cran-dorng r-cran-e1071 r-cran-effects r-cran-ei r-cran-elliptic r-cran-epi r-cran-erm r-cran-etm r-cran-evd
r-cran-expint r-cran-expm r-cran-filehash r-cran-fitdistrplus r-cran-flexmix r-cran-formula r-cran-g.data
r-cran-gbm r-cran-gbutils r-cran-gdata r-cran-geepack r-cran-genoplotr r-cran-geometry r-cran-geosphere
r-cran-ggbeeswarm r-cran-glmmtmb r-cran-gmm r-cran-gnm r-cran-gower r-cran-gplots r-cran-gridbase
r-cran-gridsvg r-cran-gsl r-cran-gstat r-cran-gsubfn r-cran-gwidgets r-cran-haplo.stats r-cran-hexbin
r-cran-hsaur3 r-cran-huge r-cran-hwriter r-cran-hypergeo r-cran-interp r-cran-intervals r-cran-ipred
r-cran-irace r-cran-irlba r-cran-iso r-cran-iterators r-cran-kedd r-cran-kernlab r-cran-knitr r-cran-ks
r-cran-kutils r-cran-laeken r-cran-lasso2 r-cran-learnbayes r-cran-libcoin r-cran-lme4 r-cran-lmtest
r-cran-logcondens r-cran-magic r-cran-maldiquant r-cran-maldiquantforeign r-cran-maptools r-cran-matrix
r-cran-maxlik r-cran-maxstat r-cran-mcmc r-cran-metamix r-cran-metap r-cran-mitools r-cran-mixtools
r-cran-mlmrev r-cran-mnp r-cran-multcomp r-cran-mutoss r-cran-mvtnorm r-cran-nanotime r-cran-network r-cran-nmf
r-cran-ordinal r-cran-packrat r-cran-pan r-cran-partitions r-cran-party r-cran-partykit r-cran-pbdzmq
r-cran-pcapp r-cran-phylobase r-cran-plot3d r-cran-pls r-cran-powerlaw r-cran-proto r-cran-proxy r-cran-pscl
r-cran-psych r-cran-psychotools r-cran-psychotree r-cran-psychtools r-cran-qtl r-cran-rcmdr r-cran-rcpp
r-cran-rcppannoy r-cran-rcpparmadillo r-cran-rcppeigen r-cran-rcppgsl r-cran-rcppmlpack r-cran-rdpack
r-cran-registry r-cran-rgdal r-cran-rgenoud r-cran-rjson r-cran-rmpfr r-cran-robustbase r-cran-rockchalk
r-cran-rodbc r-cran-rpart r-cran-rprotobuf r-cran-rrcov r-cran-runit r-cran-sandwich r-cran-scatterplot3d
r-cran-semtools r-cran-seriation r-cran-sets r-cran-shape r-cran-sp r-cran-spacetime r-cran-sparsem
r-cran-spatstat r-cran-squarem r-cran-stringdist r-cran-strucchange r-cran-surveillance r-cran-survey
r-cran-survival r-cran-survmisc r-cran-susier r-cran-systemfit r-cran-tgp r-cran-tikzdevice r-cran-timeseries
r-cran-tinytest r-cran-tm r-cran-tmvtnorm r-cran-tsp r-cran-uroot r-cran-vcd r-cran-vegan r-cran-vipor
r-cran-xtable r-cran-xts r-cran-zoo
"""
DEBIAN_SETS: dict[str, tuple[str, ...]] = {
    "texlive": (
        "texlive-science-doc",
        "texlive-publishers-doc",
        "texlive-latex-base-doc",
        "texlive-latex-recommended-doc",
    ),
    "gretl": ("gretl-doc",),
    "rvignettes": tuple(_R_VIGNETTE_PACKAGES.split()),
}
PYTHON_PACKAGES = (
    "sympy==1.14.0",
    "mpmath==1.3.0",
    "scipy==1.16.3",
    "statsmodels==0.14.5",
    # Counted once: the packages with the most modules holding two or more `.. math::` blocks.
    "pennylane==0.45.1",
    "qiskit==2.6.2",
    "torchmetrics==1.9.0",
    "jax==0.10.2",
    "galpy==1.12.1",
    "networkx==3.6.1",
    "gpy==1.15.0",
    "astropy==8.0.2",
    "sktime==1.2.0",
    "numpy==2.4.6",
    "pymc==5.28.5",
    "pgmpy==1.1.2",
    "pyro-ppl==1.9.2",
    "lifelines==0.30.3",
    "cvxpy==1.9.3",
    "gpytorch==1.15.2",
    "numpyro==0.22.0",
    "scikit-learn==1.9.1",
    "scikit-survival==0.28.0",
    "control==0.10.2",
    "scikit-image==0.26.0",
    "pytensor==3.0.7",
    "botorch==0.18.1",
    "filterpy==2.0.0",
    "pykalman==0.11.2",
    "lmfit==1.3.4",
    "torch-geometric==2.8.1",
    "pot==0.9.7.post1",
    "kornia==0.9.0",
    "plasmapy==2025.8.0",
    "thermo==0.6.1",
    "netket==3.23.0",
    "chemicals==1.5.2",
    "geomstats==2.8.0",
    "ht==1.2.0",
    "linearmodels==7.1",
    "pvlib==0.16.1",
    "qiskit-nature==0.8.0",
    "quimb==1.15.0",
    "arch==8.0.0",
    "optax==0.2.8",
    "pyhf==0.7.6",
    "zfit==0.28.0",
    "gpflow==2.11.2",
    "metpy==1.7.1",
    "riskfolio-lib==7.4.0",
    "pysindy==2.1.0",
)


@dataclass(frozen=True)
class HtmlManual:
    """An HTML manual inside a Debian package.

    Attributes:
        package: the Debian package.
        root: the manual's folder inside the package; None = the deepest folder holding all its pages.
        exclude: folders under ``root`` that are dropped: API pages generated from docstrings that the
            ``docstrings`` set reads from the same library's wheel.
    """

    package: str
    root: str | None = None
    exclude: tuple[str, ...] = ()


HTML_SETS: dict[str, tuple[HtmlManual, ...]] = {
    # English only: the other languages translate the same tutorial.
    "sagemath": (HtmlManual("sagemath-doc", "usr/share/doc/sagemath/html/en"),),
    "dealii": (HtmlManual("libdeal.ii-doc", "usr/share/doc/libdeal.ii-doc/html/doxygen/deal.II"),),
    # Manuals with MathJax and at least a few pages with two or more displays (counted once over the Debian
    # packages depending on libjs-mathjax); sympy's manual is left out (its pages are the sympy docstrings).
    "sphinx": (
        HtmlManual("python-scipy-doc", exclude=("reference/generated",)),
        HtmlManual("python-statsmodels-doc", exclude=("generated", "dev/generated")),
        HtmlManual("python-sklearn-doc", exclude=("modules/generated",)),
        HtmlManual("python-sasmodels-doc"),
        HtmlManual("python-qutip-doc"),
        HtmlManual("python-fluids-doc"),
        HtmlManual("python-mdanalysis-doc"),
        HtmlManual("python-skbio-doc"),
        HtmlManual("python-ase-doc"),
        HtmlManual("python-cvxopt-doc"),
        HtmlManual("python-dipy-doc"),
        HtmlManual("python-bumps-doc"),
        HtmlManual("python-nibabel-doc"),
        HtmlManual("python-nipy-doc"),
        HtmlManual("python-periodictable-doc"),
        HtmlManual("python-pyswarms-doc"),
        HtmlManual("ceres-solver-doc"),
        HtmlManual("dolfin-doc"),
        HtmlManual("geographiclib-doc"),
        HtmlManual("libeigen3-doc"),
        HtmlManual("libvlfeat-doc"),
        HtmlManual("apbs-doc"),
        HtmlManual("xmds2-doc"),
        HtmlManual("yade-doc"),
        HtmlManual("dynare-doc"),
    ),
}
CORPUS_SETS = (*DEBIAN_SETS, "docstrings", *HTML_SETS)
_SOURCE_LIKE = (".gz", ".tgz", ".tar", ".zip", ".jsonl", ".whl")
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
        if name in HTML_SETS:
            missing = [m.package for m in HTML_SETS[name] if not (cache / "html" / m.package).exists()]
            _download_debs(missing, debs, log)
            for manual in HTML_SETS[name]:
                yield _fetch_manual(manual, cache, log)
            continue
        if name == "docstrings":
            wheels = cache / "wheels"
            wheels.mkdir(parents=True, exist_ok=True)
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(wheels)]
            _run([*command, *PYTHON_PACKAGES], cache, log)
            yield from sorted(wheels.glob("*.whl"))
            continue
        _download_debs([p for p in DEBIAN_SETS[name] if not (unpacked / p).exists()], debs, log)
        for package in DEBIAN_SETS[name]:
            target = unpacked / package
            if not target.exists():
                deb = _deb_file(package, debs)
                partial = unpacked / (package + ".partial")
                shutil.rmtree(partial, ignore_errors=True)
                partial.mkdir(parents=True)
                _run(["dpkg-deb", "-x", str(deb), str(partial)], cache, log)
                log(f"{package}: decompressed {_gunzip_sources(partial)} source files")
                partial.rename(target)
            yield target


def _download_debs(packages: list[str], debs: Path, log: Callable[[str], None]) -> None:
    """One ``apt-get download`` for the packages not downloaded yet (one call: 236 R packages in seconds)."""
    debs.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages if not list(debs.glob(f"{p}_*.deb"))]
    if missing:
        _run(["apt-get", "download", *missing], debs, log)


def _deb_file(package: str, debs: Path) -> Path:
    found = sorted(debs.glob(f"{package}_*.deb"))
    if not found:
        raise IngestError(f"{package}: no .deb in {debs} after apt-get download", reason="fetch_failed")
    return found[-1]


def _pages_root(tree: Path) -> Path:
    """The deepest folder that holds every HTML page of an unpacked package."""
    folders = {p.parent for p in tree.rglob("*.html") if not p.is_symlink()}
    if not folders:
        raise IngestError(f"{tree.name}: the package holds no HTML page", reason="fetch_failed")
    return Path(os.path.commonpath([str(f) for f in folders]))


def _drop_sources_beside_pages(root: Path) -> int:
    """Delete the files of a manual's folder that discovery would read as LaTeX sources or archives.

    Beside the pages lie compressed changelogs and PDFs (``*.gz``) and Doxygen's formula cache (``_formulas.tex``,
    the pages' own formulas once more): as SRC they would be documents of their own, or duplicates.
    """
    dropped = 0
    for path in sorted(root.rglob("*")):
        source_like = path.name.endswith(_SOURCE_LIKE) or is_tex_name(path.name)
        if source_like and path.is_file() and not path.name.lower().endswith(HTML_SUFFIXES):
            path.unlink()
            dropped += 1
    return dropped


def _fetch_manual(manual: HtmlManual, cache: Path, log: Callable[[str], None]) -> Path:
    """Unpack one HTML manual into ``CACHE/html/<package>`` (its documentation folder only); returns that folder."""
    target = cache / "html" / manual.package
    if target.exists():
        return target
    deb = _deb_file(manual.package, cache / "debs")
    partial = cache / "html" / (manual.package + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    _run(["dpkg-deb", "-x", str(deb), str(partial)], cache, log)
    root = partial / manual.root if manual.root is not None else _pages_root(partial)
    if not root.is_dir() or root.is_symlink():
        shutil.rmtree(partial, ignore_errors=True)
        raise IngestError(f"{manual.package}: no folder {manual.root} in {deb.name}", reason="fetch_failed")
    for folder in manual.exclude:
        shutil.rmtree(root / folder, ignore_errors=True)
    _drop_sources_beside_pages(root)
    pages = sum(1 for _ in root.rglob("*.html"))
    root.rename(target)
    shutil.rmtree(partial, ignore_errors=True)
    log(f"{manual.package}: {pages} HTML pages in {target}")
    return target
