"""Running the managed node as an unprivileged account: what that account must be able to read and own.

Elasticsearch refuses to run as root, so when eqsearch runs as root the node runs as a system account
(`service_account` creates it on first use). That account must traverse the node's home and its parents, own its
config, data, logs and run folders, and execute a Java runtime: a JDK it cannot reach (one under /root, say) is
copied into the node's home and opened to others. Without an account (eqsearch not root) these helpers change
nothing.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import stat
import subprocess
from pathlib import Path

from eqsearch.engine.es.distribution import LocalNodeError
from eqsearch.engine.es.java import JavaRuntime

__all__ = [
    "as_account",
    "chown_tree",
    "open_to_others",
    "readable_java_home",
    "service_account",
    "world_traversable",
]


def service_account(name: str, home: Path) -> pwd.struct_passwd | None:
    """The unprivileged account to run the node as when we are root (created on first use); None when not root.

    Args:
        name: the account's name (``LocalNodeConfig.run_as``).
        home: its home directory when it has to be created (the node's home; not created here).

    Raises:
        LocalNodeError: the account does not exist and could not be created.
    """
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    result = subprocess.run(
        [useradd, "--system", "--no-create-home", "--home-dir", str(home), "--shell", "/usr/sbin/nologin", name],
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


def as_account(account: pwd.struct_passwd | None) -> dict:
    """`subprocess` keyword arguments that run a command as ``account`` (none: as ourselves)."""
    if account is None:
        return {}
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def chown_tree(path: Path, uid: int, gid: int) -> None:
    """Give ``path`` and everything under it to ``uid:gid`` (symlinks themselves, not their targets)."""
    for item in [path, *path.rglob("*")]:
        with contextlib.suppress(FileNotFoundError):
            os.chown(item, uid, gid, follow_symlinks=False)


def world_traversable(path: Path) -> bool:
    """True if any user can reach and execute `path` (every parent o+x, the file o+x)."""
    try:
        if not path.stat().st_mode & stat.S_IXOTH:
            return False
        return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.resolve().parents)
    except OSError:
        return False


def open_to_others(path: Path) -> None:
    """Let every user read and traverse ``path`` and each of its parents below ``/`` (adds o+rx)."""
    for parent in [path, *path.parents]:
        if parent == Path("/"):
            break
        parent.chmod(parent.stat().st_mode | 0o005)


def readable_java_home(java: JavaRuntime, account: pwd.struct_passwd | None, jdk_dir: Path) -> Path:
    """A Java home the node's account can execute: ``java.home`` itself, or a copy under ``jdk_dir``.

    The copy (made once, named after the runtime's origin and version) is readable by all and opened up to ``/``.
    """
    if account is None or world_traversable(java.java):
        return java.home
    copy = jdk_dir / f"{java.origin}-{java.version}"
    if not (copy / "bin" / "java").is_file():
        staging = copy.with_name(copy.name + f".tmp{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(java.home, staging, symlinks=True)
        for path in [staging, *staging.rglob("*")]:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IRGRP | stat.S_IROTH | (0o011 if path.is_dir() else 0))
        staging.rename(copy)
    open_to_others(copy)
    return copy
