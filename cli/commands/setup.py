"""`eqsearch setup katex`: install the pinned KaTeX that LaTeX conversion runs in Node.

Imports nothing heavy at module level (the CLI builds its parser on every call).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``setup katex`` to the CLI (creates the ``setup`` command group)."""
    setup = subparsers.add_parser("setup", help="install what eqsearch needs outside Python")
    setup_commands = setup.add_subparsers(dest="setup_command", metavar="WHAT", required=True)
    katex = setup_commands.add_parser(
        "katex",
        help="install the pinned KaTeX with 'npm ci' (needs Node.js 18+ and npm)",
        description="Install the KaTeX version pinned in eqsearch/engine/katex/package-lock.json with 'npm ci'.",
    )
    add_katex_arguments(katex)


def add_katex_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``setup katex`` (for hooking the command under another group)."""
    parser.add_argument("--force", action="store_true", help="reinstall even if the pinned version is present")
    parser.add_argument("--npm", default="npm", help="the npm executable (default: npm on PATH)")
    parser.add_argument("--katex-dir", type=Path, default=None, help="install there instead of the package folder")
    parser.set_defaults(handler=run_setup_katex)


def run_setup_katex(args: argparse.Namespace) -> int:
    """Handler of ``setup katex``: prints the installed version; errors surface as EqsearchError."""
    from eqsearch.engine.latex.install import DEFAULT_KATEX_DIR, ensure_katex_installed

    katex_dir = args.katex_dir or DEFAULT_KATEX_DIR
    version = ensure_katex_installed(katex_dir, npm=args.npm, force=args.force, quiet=False)
    print(f"KaTeX {version} is installed in {katex_dir}")
    return 0
