"""Node.js and the pinned KaTeX: finding them, and installing KaTeX (``eqsearch setup katex``).

KaTeX is an npm package installed into ``engine/latex/katex/node_modules`` with ``npm ci`` from the committed
lockfile, so every machine runs the same version; the converter checks that version before it starts a worker and
says which command fixes what is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from eqsearch.engine.errors import EqsearchError

__all__ = [
    "DEFAULT_KATEX_DIR",
    "INSTALL_COMMAND",
    "KatexNotInstalledError",
    "check_installed",
    "ensure_katex_installed",
    "installed_katex_version",
]

DEFAULT_KATEX_DIR = Path(__file__).resolve().parent / "katex"
INSTALL_COMMAND = "eqsearch setup katex"


class KatexNotInstalledError(EqsearchError):
    """Node.js or the KaTeX npm package is missing."""


def _pinned_katex_version(katex_dir: Path) -> str:
    package = json.loads((katex_dir / "package.json").read_text(encoding="utf-8"))
    return str(package["dependencies"]["katex"])


def installed_katex_version(katex_dir: Path = DEFAULT_KATEX_DIR) -> str | None:
    """The version of KaTeX in ``katex_dir/node_modules``, or None when it is not installed."""
    try:
        package = json.loads((katex_dir / "node_modules" / "katex" / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return str(package.get("version"))


def check_installed(node: str = "node", katex_dir: Path = DEFAULT_KATEX_DIR) -> str:
    """Check that Node.js is there and that ``katex_dir`` holds the pinned KaTeX.

    Args:
        node: the Node.js executable, a name looked up on PATH or a path.
        katex_dir: the folder with ``package.json`` and ``node_modules``.

    Returns:
        The path of the Node.js executable.

    Raises:
        KatexNotInstalledError: Node.js is missing, or KaTeX is missing or not the pinned version.
    """
    path = shutil.which(node)
    if path is None:
        raise KatexNotInstalledError(
            f"Node.js was not found (looked for {node!r}); LaTeX conversion runs KaTeX in Node",
            hint="install Node.js 18 or newer (e.g. 'apt-get install nodejs npm'), then run 'eqsearch setup katex'",
        )
    installed = installed_katex_version(katex_dir)
    try:
        pinned = _pinned_katex_version(katex_dir)
    except (OSError, ValueError, KeyError):
        raise KatexNotInstalledError(
            f"{katex_dir} is not eqsearch's KaTeX folder (no package.json pinning KaTeX)",
            hint=f"point to the folder shipped in eqsearch/engine/latex/katex, then run '{INSTALL_COMMAND}'",
        ) from None
    if installed is None:
        raise KatexNotInstalledError(
            f"KaTeX is not installed in {katex_dir}",
            hint=f"run '{INSTALL_COMMAND}' (or 'npm ci' in {katex_dir})",
        )
    if installed != pinned:
        raise KatexNotInstalledError(
            f"KaTeX {installed} is installed in {katex_dir} but eqsearch pins {pinned}",
            hint=f"run '{INSTALL_COMMAND} --force'",
        )
    return path


def ensure_katex_installed(
    katex_dir: Path = DEFAULT_KATEX_DIR, *, npm: str = "npm", force: bool = False, quiet: bool = True
) -> str:
    """Install the pinned KaTeX with ``npm ci`` (reproducible from the committed lockfile) unless it is there.

    Args:
        katex_dir: the folder with ``package.json`` and ``package-lock.json``.
        npm: the npm executable.
        force: reinstall even when the pinned version is present.
        quiet: hide npm's output unless it fails.

    Returns:
        The installed KaTeX version.

    Raises:
        KatexNotInstalledError: npm is missing or ``npm ci`` failed.
    """
    katex_dir = Path(katex_dir)
    pinned = _pinned_katex_version(katex_dir)
    if not force and installed_katex_version(katex_dir) == pinned:
        return pinned
    npm_path = shutil.which(npm)
    if npm_path is None:
        raise KatexNotInstalledError(
            f"npm was not found (looked for {npm!r}); it installs KaTeX",
            hint="install Node.js 18 or newer with npm (e.g. 'apt-get install nodejs npm')",
        )
    command = [npm_path, "ci", "--omit=dev", "--no-audit", "--no-fund", "--ignore-scripts"]
    completed = subprocess.run(
        command, cwd=katex_dir, capture_output=quiet, text=True, check=False, stdin=subprocess.DEVNULL
    )
    if completed.returncode != 0:
        output = ((completed.stderr or "") + (completed.stdout or "")).strip()[-2000:] if quiet else ""
        raise KatexNotInstalledError(
            f"'npm ci' failed in {katex_dir} (exit code {completed.returncode})" + (f":\n{output}" if output else ""),
            hint="check the network access to the npm registry, then run 'eqsearch setup katex' again",
        )
    installed = installed_katex_version(katex_dir)
    if installed != pinned:
        raise KatexNotInstalledError(f"'npm ci' finished but KaTeX {pinned} is not in {katex_dir / 'node_modules'}")
    return installed
