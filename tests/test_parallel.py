"""`make test`'s units of work for pytest-xdist (tests/parallel.py): a file each, tests/cluster one, slow ones first."""

from __future__ import annotations

from types import SimpleNamespace

from parallel import slow_units_first, work_unit


def test_a_file_is_a_unit_and_the_cluster_folder_is_one():
    assert work_unit("tests/webui/test_app.py::test_x[a::b]") == "tests/webui/test_app.py"
    assert (
        work_unit("tests/cluster/test_faults.py::test_y")
        == work_unit("tests/cluster/conftest.py::z")
        == "tests/cluster/"
    )
    assert work_unit("tests/clusters_elsewhere.py::t") == "tests/clusters_elsewhere.py"


def test_the_units_with_a_slow_test_go_first_in_their_order():
    def item(nodeid: str, *marks: str) -> SimpleNamespace:
        return SimpleNamespace(nodeid=nodeid, keywords=set(marks))

    items = [item("tests/a.py::1"), item("tests/b.py::1"), item("tests/b.py::2", "slow"), item("tests/c.py::1"),
             item("tests/cluster/x.py::1", "slow"), item("tests/cluster/y.py::1")]  # fmt: skip
    slow_units_first(items)
    assert [i.nodeid for i in items] == [
        "tests/b.py::1", "tests/b.py::2", "tests/cluster/x.py::1", "tests/cluster/y.py::1", "tests/a.py::1",
        "tests/c.py::1",
    ]  # fmt: skip
