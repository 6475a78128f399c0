"""The managed local Elasticsearch node: install, start, stop, status, logs.

eqsearch needs a real Elasticsearch wherever it runs. With nothing configured, the CLI, the web app and the
test suite use this node: a pinned 9.x distribution (Maven Central's minimal `integ-test-zip`, or an official
archive the user points at), single node, loopback only, security off (it listens on 127.0.0.1 alone), a
bounded heap. Elasticsearch refuses to run as root, so when eqsearch runs as root the node runs as an
unprivileged system account.

Installing the distribution is `engine.es.distribution`; what running as another account takes (ownership, a
readable JDK) is `engine.es.account`. This module drives the node's life: a lock against concurrent starts, the
pid file, health, stop, status and logs; what the node is started with (its config files, environment and a secured
node's superuser) is `engine.es.node_setup`. A node may also be one member of a local cluster
(`engine.es.node_setup.ClusterMember`: its name, transport port and the cluster's seed hosts);
`engine.es.local_cluster` starts and stops such members together.

Layout under `LocalNodeConfig.home` (outside the repository)::

    downloads/       the verified distribution archive
    dist/<version>/  the unpacked distribution (read-only for the node)
    jdk/             a copy of the JDK when the node's account cannot read the original
    config/ data/ logs/ tmp/ run/node.pid   owned by the node's account
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from eqsearch.engine.es.account import as_account, readable_java_home, service_account
from eqsearch.engine.es.config import LocalNodeConfig
from eqsearch.engine.es.distribution import (
    PINNED,
    Distribution,
    LocalNodeError,
    ProgressCallback,
    is_installed,
    maven_url,
    obtain_archive,
    unpack,
)
from eqsearch.engine.es.java import JavaRuntime, find_java
from eqsearch.engine.es.node_setup import CLUSTER_NAME, ClusterMember, add_superuser, node_environment, prepare_config
from eqsearch.engine.es.plugin import PluginBuildError, PluginInstall, ensure_plugin
from eqsearch.engine.es.processes import is_elasticsearch_process, pid_alive, port_open, tail

__all__ = ["LocalNode", "NodeStatus", "PortInUseError", "pid_alive"]


class PortInUseError(LocalNodeError):
    """Another program already listens on the node's port."""


@dataclass(frozen=True)
class NodeStatus:
    """What `eqsearch es status` reports."""

    installed: bool
    running: bool
    pid: int | None
    url: str
    version: str | None = None
    health: str | None = None
    heap: str | None = None
    java: str | None = None
    home: str | None = None
    note: str | None = None

    def lines(self) -> list[str]:
        state = "running" if self.running else "stopped"
        out = [f"node:      {state}" + (f" (pid {self.pid})" if self.pid else ""), f"url:       {self.url}"]
        for label, value in (
            ("version", self.version),
            ("health", self.health),
            ("heap", self.heap),
            ("java", self.java),
            ("home", self.home),
            ("installed", "yes" if self.installed else "no (run: eqsearch es install)"),
            ("note", self.note),
        ):
            if value:
                out.append(f"{label + ':':<10} {value}")
        return out


class LocalNode:
    """One managed Elasticsearch node on this machine.

    Args:
        config: where it lives, its port and heap, and where to get Java and the distribution.
        security: enable x-pack security with a file-realm superuser (used to test authentication).
        superuser: (name, password) of that superuser; required when `security` is on.
        distribution: the distribution it runs (the pinned one unless a test says otherwise).
        member: its place in a local cluster; None for the single node (``discovery.type: single-node``).
    """

    def __init__(
        self,
        config: LocalNodeConfig,
        *,
        security: bool = False,
        superuser: tuple[str, str] | None = None,
        distribution: Distribution = PINNED,
        member: ClusterMember | None = None,
    ) -> None:
        if security and superuser is None:
            raise ValueError("a secured local node needs a superuser (name, password)")
        self.config = config
        self.security = security
        self.superuser = superuser
        self.home = config.home
        self.distribution = distribution
        self.version = distribution.version
        self.member = member
        self.install_home = member.install_home if member else self.home
        #: What the last `start` or `install_plugin` did about eqsearch's plugin (None: nothing yet).
        self.plugin: PluginInstall | None = None

    # -- paths -------------------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The node's name."""
        return self.member.name if self.member else "eqsearch-local-1"

    @property
    def dist_dir(self) -> Path:
        return self.install_home / "dist" / self.version

    @property
    def pid_file(self) -> Path:
        return self.home / "run" / "node.pid"

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / f"{CLUSTER_NAME}.log"

    @property
    def startup_log(self) -> Path:
        return self.home / "logs" / "startup.log"

    @property
    def url(self) -> str:
        return self.config.url

    def is_installed(self) -> bool:
        return is_installed(self.dist_dir)

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """Serialise install/start/stop between processes (two `start` at once must not race)."""
        (self.home / "run").mkdir(parents=True, exist_ok=True)
        with (self.home / "run" / "lock").open("w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- install -----------------------------------------------------------------------------------------------
    def maven_url(self) -> str:
        return maven_url(self.config.maven_repository, self.version)

    def install(self, progress: ProgressCallback | None = None) -> Path:
        """Download (or take the given archive), verify and unpack the distribution. Idempotent.

        Returns:
            the unpacked distribution's directory.

        Raises:
            ChecksumMismatchError: the archive is not the pinned (or the given) file.
            LocalNodeError: it could not be downloaded or unpacked.
        """
        with self._lock():
            if self.is_installed():
                return self.dist_dir
            archive = obtain_archive(
                self.distribution,
                self.install_home / "downloads",
                repository=self.config.maven_repository,
                archive=self.config.archive,
                archive_sha256=self.config.archive_sha256,
                progress=progress,
            )
            unpack(archive, self.dist_dir, self.version)
            return self.dist_dir

    def install_plugin(self, java: JavaRuntime | None = None, *, strict: bool = False) -> PluginInstall:
        """Build eqsearch's plugin (``es-plugin/``) for this distribution and install it, unless it is there already.

        A node loads its plugins when it starts, so `start` calls this before launching; with
        ``LocalNodeConfig.plugin`` off it does nothing.

        Args:
            java: the runtime that runs ``elasticsearch-plugin`` (found here when not given).
            strict: raise when the plugin cannot be built; otherwise the node runs without it and the returned note
                says why (the engine then sends every cluster's requests).

        Raises:
            PluginBuildError: ``strict`` and no JDK 21+ compiler, or the install failed.
        """
        if not self.config.plugin:
            return PluginInstall(False, False, "the eqsearch plugin is turned off (EQSEARCH_ES_PLUGIN=0)")
        java = java or find_java(self.config.java_home)
        try:
            return ensure_plugin(self.dist_dir, java.home, self.version, self.install_home / "plugin-build")
        except PluginBuildError as error:
            if strict:
                raise
            return PluginInstall(False, False, f"{error} ({error.hint})" if error.hint else str(error))

    # -- start / stop ------------------------------------------------------------------------------------------
    def read_pid(self) -> int | None:
        """The pid of the running node, or None; a stale pid file (dead or foreign process) is removed."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            if self.pid_file.exists():
                self.pid_file.unlink(missing_ok=True)
            return None
        if pid_alive(pid) and is_elasticsearch_process(pid):
            return pid
        self.pid_file.unlink(missing_ok=True)
        return None

    def start(self, progress: ProgressCallback | None = None) -> NodeStatus:
        """Install if needed, start the node and wait until it answers healthy. Harmless when already running.

        Raises:
            JavaNotFoundError: no Java 21+.
            PortInUseError: something else listens on the port.
            LocalNodeError: the node exited or did not become healthy in time (with the log's last lines).
        """
        if not self.is_installed():
            self.install(progress)
        with self._lock():
            if self.read_pid() is None:
                self.plugin = self.install_plugin()
            launcher = self.launch()
            pid = self.await_launch(launcher) if launcher is not None else self.read_pid()
            if pid is None:  # it stopped just now
                raise self.startup_failure(-1)
            self._wait_healthy(pid)
            return self.status()

    def launch(self, java: JavaRuntime | None = None) -> subprocess.Popen[bytes] | None:
        """Start the node's process (installed already) without waiting for it; None when it already runs.

        `start` holds the node's lock around this; a local cluster launches all its members before waiting for any,
        since a member waits for a quorum of the others before it reports itself started.

        Args:
            java: the Java runtime (found here when not given).

        Raises:
            JavaNotFoundError: no Java 21+.
            PortInUseError: something else listens on the node's HTTP or transport port.
        """
        if self.read_pid() is not None:
            return None
        for port in (self.config.port, *([self.member.transport_port] if self.member else [])):
            if port_open(port):
                raise PortInUseError(
                    self._describe_port_owner(port),
                    hint=(
                        f"stop that program, choose another port (--port or EQSEARCH_ES_PORT), or use that cluster "
                        f"with EQSEARCH_ES_URL={self.url}"
                    ),
                )
        java = java or find_java(self.config.java_home)
        account = service_account(self.config.run_as, self.install_home)
        java_home = readable_java_home(java, account, self.install_home / "jdk")
        config_dir = prepare_config(
            self.home,
            self.dist_dir,
            name=self.name,
            port=self.config.port,
            member=self.member,
            security=self.security,
            account=account,
            java=java,
        )
        env = node_environment(self.home, java_home, config_dir, self.config.node_heap, self.config.java_options)
        if self.security:
            assert self.superuser is not None
            add_superuser(self.dist_dir, self.superuser, env, account)
        self.pid_file.unlink(missing_ok=True)
        with self.startup_log.open("wb") as log:
            return subprocess.Popen(
                [str(self.dist_dir / "bin" / "elasticsearch"), "-d", "-p", str(self.pid_file)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=str(self.home),
                **as_account(account),
            )

    def await_launch(self, launcher: subprocess.Popen[bytes]) -> int:
        """Wait until a `launch`ed process has daemonised, and return the node's pid.

        Raises:
            LocalNodeError: the node exited or did not finish starting in time (with the log's last lines).
        """
        try:
            code = launcher.wait(timeout=self.config.startup_timeout)
        except subprocess.TimeoutExpired:
            launcher.kill()
            raise LocalNodeError(
                f"the node {self.name} did not finish starting within {self.config.startup_timeout:.0f} s",
                hint=f"see {self.startup_log} and {self.log_file}",
            ) from None
        if code != 0:
            raise self.startup_failure(code)
        pid = self.read_pid()
        if pid is None:
            raise self.startup_failure(code)
        return pid

    def _describe_port_owner(self, port: int | None = None) -> str:
        from eqsearch.engine.es.client import (
            AuthenticationFailedError,
            ElasticsearchUnavailableError,
            VersionMismatchError,
            check_cluster,
        )
        from eqsearch.engine.es.config import EsConfig

        port = self.config.port if port is None else port
        try:
            info = check_cluster(EsConfig(url=f"http://127.0.0.1:{port}", request_timeout=5))
            owner = f"another Elasticsearch ({info.version}, cluster '{info.cluster_name}')"
        except VersionMismatchError as error:
            owner = f"another Elasticsearch ({str(error).split(' is version ')[1].split(',')[0]})"
        except AuthenticationFailedError:
            owner = "a secured Elasticsearch"
        except ElasticsearchUnavailableError:
            owner = "another program"
        return f"port {port} is already taken by {owner} that eqsearch does not manage"

    def startup_failure(self, code: int) -> LocalNodeError:
        """The error for a node that did not start: the essential lines of its startup output and log."""
        output = tail(self.startup_log, 30) + tail(self.log_file, 30)
        text = "\n".join(output)
        if "BindException" in text or "Address already in use" in text:
            ports = f"port {self.config.port}" + (f" or {self.member.transport_port}" if self.member else "")
            return PortInUseError(f"the node {self.name} could not bind {ports}: it is already in use")
        essential = [line for line in output if "ERROR" in line or "Exception" in line or "error" in line.lower()]
        detail = "\n    ".join((essential or output)[-8:])
        return LocalNodeError(
            f"the Elasticsearch node failed to start (exit code {code}):\n    {detail}",
            hint=f"full logs: {self.startup_log} and {self.log_file}",
        )

    def _auth_header(self) -> dict[str, str]:
        if not self.superuser:
            return {}
        import base64

        token = base64.b64encode(f"{self.superuser[0]}:{self.superuser[1]}".encode()).decode()
        return {"Authorization": f"Basic {token}"}

    def get_json(self, path: str, timeout: float = 5.0) -> dict:
        """``GET path`` on this node (the superuser's credentials on a secured node), parsed."""
        request = urllib.request.Request(self.url + path, headers=self._auth_header())
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))

    def _wait_healthy(self, pid: int) -> None:
        deadline = time.monotonic() + self.config.startup_timeout
        last_error = "no answer yet"
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                raise self.startup_failure(-1)
            try:
                health = self.get_json("/_cluster/health?wait_for_status=yellow&timeout=2s", timeout=5)
                if health.get("status") in ("green", "yellow"):
                    return
                last_error = f"cluster status {health.get('status')}"
            except (urllib.error.URLError, OSError, ValueError) as error:
                last_error = str(error)
            time.sleep(0.5)
        raise LocalNodeError(
            f"the node (pid {pid}) did not answer healthy within {self.config.startup_timeout:.0f} s: {last_error}",
            hint=f"see {self.log_file}",
        )

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop the node cleanly (SIGTERM, then SIGKILL after `timeout`). Returns False if it was not running."""
        with self._lock():
            pid = self.read_pid()
            if pid is None:
                return False
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
                while pid_alive(pid):
                    time.sleep(0.1)
            self.pid_file.unlink(missing_ok=True)
            return True

    def status(self) -> NodeStatus:
        """Installed? running? version, health and heap when it answers."""
        pid = self.read_pid()
        base = {"installed": self.is_installed(), "url": self.url, "home": str(self.home)}
        if pid is None:
            note = None
            if port_open(self.config.port):
                note = self._describe_port_owner()
            return NodeStatus(running=False, pid=None, note=note, **base)
        try:
            # The minimal distribution has no `GET /` (module rest-root): the nodes API gives the version.
            node = next(iter(self.get_json("/_nodes/_local/jvm").get("nodes", {}).values()), {})
            health = self.get_json("/_cluster/health")
            stats = next(iter(self.get_json("/_nodes/_local/stats/jvm").get("nodes", {}).values()), {})
            mem = stats.get("jvm", {}).get("mem", {})
            used, total = mem.get("heap_used_in_bytes", 0) / 2**20, mem.get("heap_max_in_bytes", 0) / 2**20
            jvm = node.get("jvm", {})
            return NodeStatus(
                running=True,
                pid=pid,
                version=node.get("version"),
                health=health.get("status"),
                heap=f"{used:.0f} MiB used of {total:.0f} MiB",
                java=f"{jvm.get('vm_name', '?')} {jvm.get('version', '?')}",
                **base,
            )
        except (urllib.error.URLError, OSError, ValueError) as error:
            return NodeStatus(running=True, pid=pid, note=f"process alive but not answering: {error}", **base)

    def logs(self, lines: int = 50) -> list[str]:
        """The last `lines` lines of the node's log (or its startup output when there is no log yet)."""
        return tail(self.log_file if self.log_file.exists() else self.startup_log, lines)
