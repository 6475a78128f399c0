"""How `make test` spreads the suite over pytest-xdist workers (``-n N --dist loadfile``): a unit of work is a test
file, so that its module fixtures (an ingested collection, an extra node) are built once, except that the files of
`ONE_WORKER_FOLDERS` form one unit, since they share a session-wide resource (tests/cluster: its 3-node cluster on
ports and a home of its own). The files holding slow tests are handed out first, so that no worker is left alone with
a long one at the end."""

from __future__ import annotations

from typing import Any

import pytest

#: folders whose tests run in one worker: they share a session fixture that two workers must not both start
ONE_WORKER_FOLDERS = ("tests/cluster/",)


def work_unit(nodeid: str) -> str:
    """The unit of work of a test: its file, or the folder of `ONE_WORKER_FOLDERS` it lies in."""
    path = nodeid.split("::", 1)[0]
    return next((folder for folder in ONE_WORKER_FOLDERS if path.startswith(folder)), path)


def slow_units_first(items: list[pytest.Item]) -> None:
    """Reorders ``items`` in place: the units with a ``slow`` test first, each unit's tests in their order."""
    slow = {work_unit(item.nodeid) for item in items if "slow" in item.keywords}
    items.sort(key=lambda item: work_unit(item.nodeid) not in slow)


class Scheduling:
    """The pytest plugin that gives pytest-xdist's ``loadfile`` distribution the units of `work_unit`."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") != "loadfile":
            return None
        from xdist.scheduler import LoadScopeScheduling

        class FileOrFolderScheduling(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                return work_unit(nodeid)

        return FileOrFolderScheduling(config, log)
