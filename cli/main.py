"""The one console script: `eqsearch <command> ...`.

Every top-level command has a module in `eqsearch.commands` with a `register(subparsers)` function; those modules
import nothing heavy at module level (the libraries load inside the handlers), so `eqsearch --help` stays fast and
never loads torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from eqsearch import __version__
from eqsearch.engine.errors import EqsearchError

COMMAND_MODULES = (
    "eqsearch.commands.es",
    "eqsearch.commands.setup",
    "eqsearch.commands.index",
    "eqsearch.commands.search",
    "eqsearch.commands.ingest",
    "eqsearch.commands.train",
    "eqsearch.commands.evaluate",
    "eqsearch.commands.export",
    "eqsearch.commands.serve",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, with every command registered."""
    parser = argparse.ArgumentParser(
        prog="eqsearch",
        description="Semantic search for mathematics: formula embeddings + keyword search on Elasticsearch.",
        epilog="Run 'eqsearch COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"eqsearch {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `eqsearch` console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except EqsearchError as error:
        print(f"eqsearch: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("eqsearch: interrupted", file=sys.stderr)
        return 130
