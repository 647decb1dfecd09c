"""Another host reached over SSH, on loopback: Debian's sshd, a user of its own, Debian's Python.

The tests of kernels started by a kernel provisioner over SSH (tests/test_ssh_kernels.py)
need a host a kernel can be started on as another user. This starts Debian's ``sshd`` on
127.0.0.2 (every 127/8 address is this machine's loopback, and jupyter_client does not count
127.0.0.2 as local, so gateway-provisioners' DistributedProvisioner goes through SSH rather
than starting the kernel itself) with a configuration, a host key and an authorized key of its
own in a directory of its own, for a user made for the purpose (:data:`USER`, no password: it
logs in by that key, through that sshd alone). The host's Python is Debian's ``python3`` with
Debian's ipykernel: another interpreter and another ipykernel than the server's.

What it needs (``openssh-server``, ``python3-ipykernel``, ``python3-pycryptodome``) is installed
with apt where it may be (root, ``apt-get`` there); elsewhere the calling test skips and says why.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from servers import ServerProcess, started

#: The host's address: loopback, yet not one jupyter_client calls local.
ADDRESS = "127.0.0.2"
#: The user kernels run as on the host; made by the first run that needs it, removed after.
USER = "jupyter-mcp-remote"
SSHD = "/usr/sbin/sshd"
#: The host's Python, with ipykernel and what the kernel launcher imports (pycryptodomex).
HOST_PYTHON = "/usr/bin/python3"
DEBIAN_PACKAGES = ("openssh-server", "python3-ipykernel", "python3-pycryptodome")


@dataclass(frozen=True)
class SshHost:
    """A running sshd and what a client needs to log in to it as :data:`USER`."""

    address: str
    port: int
    user: str
    uid: int
    #: Readable by the user: where kernelspecs' launchers go, so that the host finds them
    #: at the path the kernelspec names (as on a cluster's shared or identically laid disk).
    directory: Path
    #: A HOME for the SSH client: ``.ssh/id_ed25519`` logs in, ``.ssh/known_hosts`` knows
    #: the host's key (paramiko, which the provisioner uses, reads both from there).
    client_home: Path
    #: Where the provisioner has the host write each kernel's log (``GP_KERNEL_LOG_DIR``).
    logs: Path
    sshd_log: Path


def _host_python_ready() -> bool:
    if not (os.path.exists(SSHD) and os.path.exists(HOST_PYTHON)):
        return False
    found = subprocess.run(
        [HOST_PYTHON, "-c", "import ipykernel, Cryptodome, jupyter_client"],
        capture_output=True,
        timeout=60,
    )
    return found.returncode == 0


def ensure_debian_packages() -> None:
    """sshd and the host's Python with ipykernel, installed with apt when missing; skips
    the calling test, saying why, where they cannot be."""
    if _host_python_ready():
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip(
            f"no sshd or no ipykernel for {HOST_PYTHON}, and no apt-get as root to install "
            f"{' '.join(DEBIAN_PACKAGES)}"
        )
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", *DEBIAN_PACKAGES]
    with open(os.path.join(tempfile.gettempdir(), ".jupyter-mcp-apt.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test workers install once
        if _host_python_ready():
            return
        done = subprocess.run(install, capture_output=True, text=True, env=environment, timeout=900)
        if done.returncode != 0:  # a machine whose package lists were never fetched
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True, timeout=600)
            done = subprocess.run(
                install, capture_output=True, text=True, env=environment, timeout=900
            )
    if done.returncode != 0 or not _host_python_ready():
        pytest.skip(f"apt-get could not install {' '.join(DEBIAN_PACKAGES)}: {done.stderr[-500:]}")


def _user_made() -> tuple[pwd.struct_passwd, bool]:
    """The host's user, made here when missing: (its entry, whether it was made now)."""
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(USER), False
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip(f"there is no user {USER!r} and no useradd as root to make one")
    subprocess.run(
        ["useradd", "--create-home", "--shell", "/bin/bash", USER], check=True, capture_output=True
    )
    # No password, and not locked either: sshd without PAM refuses a locked account ("!"),
    # keys and all.
    subprocess.run(["usermod", "-p", "*", USER], check=True, capture_output=True)
    return pwd.getpwnam(USER), True


def _free_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        return int(probe.getsockname()[1])


def _public_key(path: Path) -> str:
    """``TYPE BASE64`` of a key pair's public half."""
    kind, key = path.with_name(path.name + ".pub").read_text().split()[:2]
    return f"{kind} {key}"


def _host_home_prepared(entry: pwd.struct_passwd) -> None:
    """The user's shell finds the host's Python as ``python``, as a kernelspec written by
    ``jupyter-ssh-spec`` names it (``~/.ssh/environment``, read by this sshd alone)."""
    home = Path(entry.pw_dir)
    bin_dir = home / "bin"
    ssh_dir = home / ".ssh"
    for folder in (bin_dir, ssh_dir):
        folder.mkdir(exist_ok=True)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    python = bin_dir / "python"
    if not python.is_symlink():
        python.symlink_to(HOST_PYTHON)
    environment = ssh_dir / "environment"
    environment.write_text(f"PATH={bin_dir}:/usr/local/bin:/usr/bin:/bin\n")
    os.chown(environment, entry.pw_uid, entry.pw_gid)


@contextlib.contextmanager
def ssh_host() -> Iterator[SshHost]:
    """A running sshd on :data:`ADDRESS` that lets :data:`USER` in by a key made here; it is
    stopped, and what was made for it removed, afterwards."""
    if os.geteuid() != 0:
        pytest.skip("sshd logs a client in as another user only when it runs as root")
    if shutil.which("ssh-keygen") is None:
        pytest.skip("no ssh-keygen here")
    ensure_debian_packages()
    entry, made = _user_made()
    # Not under pytest's own temporary folder, which only its owner may enter: the host's
    # user reads the kernel launchers and the authorized key from here.
    directory = Path(tempfile.mkdtemp(prefix="jupyter-mcp-ssh-"))
    stack = contextlib.ExitStack()
    try:
        directory.chmod(0o755)
        client_home = directory / "client-home"
        (client_home / ".ssh").mkdir(parents=True, mode=0o700)
        logs = directory / "logs"
        logs.mkdir()
        os.chown(logs, entry.pw_uid, entry.pw_gid)
        _host_home_prepared(entry)
        host_key = directory / "host_key"
        client_key = client_home / ".ssh" / "id_ed25519"
        for key in (host_key, client_key):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", str(key)],
                check=True,
                capture_output=True,
            )
        authorized = directory / "authorized_keys"
        authorized.write_text(_public_key(client_key) + "\n")
        authorized.chmod(0o644)
        port = _free_port(ADDRESS)
        (client_home / ".ssh" / "known_hosts").write_text(
            f"[{ADDRESS}]:{port} {_public_key(host_key)}\n"
        )
        config = directory / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"ListenAddress {ADDRESS}:{port}",
                    f"HostKey {host_key}",
                    f"PidFile {directory / 'sshd.pid'}",
                    f"AuthorizedKeysFile {authorized}",
                    f"AllowUsers {USER}",
                    "PermitRootLogin no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    # The authorized key is in a folder the user does not own.
                    "StrictModes no",
                    "PermitUserEnvironment yes",
                    "LogLevel VERBOSE",
                    "",
                ]
            )
        )
        Path("/run/sshd").mkdir(exist_ok=True)  # its privilege separation directory
        sshd_log = directory / "sshd.log"

        def accepting(server: ServerProcess) -> bool:
            with socket.create_connection((ADDRESS, port), timeout=1):
                return True

        stack.enter_context(
            started(
                [SSHD, "-D", "-e", "-f", str(config)],
                env=os.environ,
                cwd=directory,
                log=sshd_log,
                ready=accepting,
                seconds=30,
                name="sshd",
                stdin=subprocess.DEVNULL,
            )
        )
        yield SshHost(
            address=ADDRESS,
            port=port,
            user=USER,
            uid=entry.pw_uid,
            directory=directory,
            client_home=client_home,
            logs=logs,
            sshd_log=sshd_log,
        )
    finally:
        stack.close()
        shutil.rmtree(directory, ignore_errors=True)
        if made and not processes_of(entry.pw_uid):
            subprocess.run(["userdel", "--remove", USER], capture_output=True)


def processes_of(uid: int) -> dict[int, str]:
    """Every live process of the user `uid` here (the host's processes): pid, command line."""
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        real_uid = next(
            (line.split()[1] for line in status.splitlines() if line.startswith("Uid:")), None
        )
        state = next((line for line in status.splitlines() if line.startswith("State:")), "")
        if real_uid == str(uid) and "zombie" not in state:
            found[int(entry)] = command.decode(errors="replace").strip()
    return found
