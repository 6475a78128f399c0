"""`eqsearch es check` says in one line whether every node has eqsearch's plugin (real node), and `eqsearch es plugin`
refuses clearly without a JDK 21+ compiler."""

from __future__ import annotations

import pytest
from eqsearch.engine.search.plugin import detect_plugin
from eqsearch.main import main


@pytest.mark.es
def test_es_check_prints_the_plugin_notice_in_one_line(es_client, es_config, capsys):
    assert main(["es", "check"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("Elasticsearch ") and "health" in lines[0]
    assert lines[1] == detect_plugin(es_client).note
    assert ("native rerank" in lines[1]) is detect_plugin(es_client).available


def test_es_plugin_without_a_jdk_21_compiler_fails_with_what_to_install(tmp_path, monkeypatch, capsys):
    from eqsearch.engine.es.config import LocalNodeConfig
    from eqsearch.engine.es.distribution import PINNED, is_installed

    home = LocalNodeConfig.from_env().home
    if not is_installed(home / "dist" / PINNED.version):
        pytest.skip("no managed distribution installed (eqsearch es install)")
    for name in ("JAVAC_HOME", "JAVA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EQSEARCH_JDK_DIRS", str(tmp_path))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    source_digest_marker = home / "dist" / PINNED.version / ".eqsearch-plugin.json"
    before = source_digest_marker.read_text() if source_digest_marker.is_file() else None
    code = main(["es", "plugin"])
    after = source_digest_marker.read_text() if source_digest_marker.is_file() else None
    if before is not None and after == before and code == 0:
        pytest.skip("the current plugin is installed already: nothing to build")
    assert code == 4
    assert "no JDK 21+ compiler (javac) found" in capsys.readouterr().err
