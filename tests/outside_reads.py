"""A watch on the files the suite reads beside its checkout: a clone elsewhere has no `../shared` (nor any other
neighbour folder), so a test that reads one passes here and fails there. An audit hook (PEP 578) records every
``open``, ``os.listdir`` and ``os.scandir`` of this process under a neighbour folder of the checkout;
`tests/conftest.py` fails the test during which one happened. Child processes (KaTeX's node, a JVM) are not watched:
they read what the code hands them. The system's temporary folder, the home, the Python installation and the
Elasticsearch homes are not neighbours even where they sit beside the checkout."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
_EVENTS = frozenset({"open", "os.listdir", "os.scandir"})


def neighbours(checkout: Path, keep: Iterable[Path]) -> tuple[str, ...]:
    """The folders beside ``checkout`` that a clone elsewhere would not have, as path prefixes ending in a separator:
    its visible sibling folders, less those holding any of ``keep``; beside the file system's root, only ``/shared``."""
    parent = checkout.parent
    kept = [Path(path).resolve() for path in keep]
    out = []
    try:
        entries = sorted(parent.iterdir())
    except OSError:
        return ()
    for entry in entries:
        if entry == checkout or entry.name.startswith(".") or not entry.is_dir():
            continue
        if parent == Path(entry.anchor) and entry.name != "shared":
            continue  # a checkout at the root has /usr, /etc ... beside it
        resolved = entry.resolve()
        if any(path == resolved or path.is_relative_to(resolved) for path in kept):
            continue
        out.append(str(resolved) + os.sep)
    return tuple(out)


class OutsideReads:
    """Records the reads under `neighbours` of the checkout (installed once, for the life of the process)."""

    def __init__(self, watched: tuple[str, ...]) -> None:
        self.watched = watched
        self.reads: list[str] = []
        self.reported = 0

    def install(self) -> None:
        if self.watched:
            sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        if event not in _EVENTS or not args or isinstance(args[0], int) or args[0] is None:
            return
        try:
            path = os.path.abspath(os.fsdecode(args[0]))
        except (TypeError, ValueError):
            return
        if path.startswith(self.watched) or path + os.sep in self.watched:
            self.reads.append(path)

    def new_reads(self) -> list[str]:
        """The reads recorded since the last call."""
        fresh, self.reported = self.reads[self.reported :], len(self.reads)
        return fresh


def default_keep() -> list[Path]:
    """What may sit beside a checkout without being a neighbour it must not read: the temporary folder, the home, the
    Python installation, the managed node's home (and the test nodes' beside it)."""
    from eqsearch.engine.es.config import LocalNodeConfig

    node_home = LocalNodeConfig.from_env().home
    return [Path(tempfile.gettempdir()), Path.home(), Path(sys.prefix), Path(sys.base_prefix), node_home.parent]
