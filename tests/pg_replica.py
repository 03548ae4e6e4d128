"""A real PostgreSQL streaming replica of the test server, made and run by a test.

`pg_basebackup -R` copies the primary's cluster into a temporary folder and writes the
standby settings (standby.signal, primary_conninfo); the replica then runs on a free port
of 127.0.0.1 as a hot standby streaming the primary's WAL. It holds the whole cluster, so
pytest-django's test database too. Only the postmaster this module started is stopped, by
its PID, and its folder removed.

Needs the server binaries of the primary's major version and a pg_hba.conf line allowing
replication connections from 127.0.0.1 (.ci/run adds it). Where either is missing the test
is skipped, and fails in CI (CI=true or MASHOV_REQUIRE_SERVICES=1), where it must run."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

# The settings the standby must hold at least as high as the primary (hot standby refuses
# to start otherwise).
AT_LEAST_PRIMARY = (
    "max_connections",
    "max_worker_processes",
    "max_wal_senders",
    "max_prepared_transactions",
    "max_locks_per_transaction",
)
HBA_HINT = "host replication all 127.0.0.1/32 trust"
# The primary's replication slot of a replica: this prefix and the test process's PID.
SLOT_PREFIX = "mashov_test_replica_"


def must_run() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("MASHOV_REQUIRE_SERVICES") == "1"


def unavailable(reason: str):
    """Skip where the replica cannot be made; fail where the suite must run it."""
    if must_run():
        pytest.fail(f"the streaming-replica test must run here but cannot: {reason}", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_binaries(major: int) -> Path:
    """The folder with pg_basebackup, pg_ctl and postgres of the primary's major version:
    Debian's versioned folder, else whatever pg_basebackup is on PATH."""
    candidates = [Path(f"/usr/lib/postgresql/{major}/bin")]
    on_path = shutil.which("pg_basebackup")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for folder in candidates:
        if all((folder / name).is_file() for name in ("pg_basebackup", "pg_ctl", "postgres")):
            return folder
    unavailable(
        f"pg_basebackup, pg_ctl and postgres of PostgreSQL {major} not found "
        f"(looked in {', '.join(str(c) for c in candidates)}): install the server package of the primary's version"
    )
    raise AssertionError("unreachable")


@dataclass
class StreamingReplica:
    folder: Path
    port: int
    pid: int
    user: str
    password: str
    primary: dict
    slot: str

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def url(self, database: str) -> str:
        """DATABASE_REPLICA_URL for `database` on this replica."""
        credentials = quote(self.user, safe="") + (f":{quote(self.password, safe='')}" if self.password else "")
        return f"postgres://{credentials}@127.0.0.1:{self.port}/{quote(database, safe='')}"

    def connect(self, database: str = "postgres"):
        import psycopg2

        return psycopg2.connect(
            host="127.0.0.1", port=self.port, user=self.user, password=self.password or None, dbname=database
        )

    def wait_streaming(self, timeout: float = 60.0) -> None:
        """Until the replica accepts connections, is in recovery and streams from the primary."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                with self.connect() as conn, conn.cursor() as cursor:
                    cursor.execute("SELECT pg_is_in_recovery(), (SELECT status FROM pg_stat_wal_receiver)")
                    last = cursor.fetchone()
                conn.close()
                if last == (True, "streaming"):
                    return
            except Exception as error:  # not accepting connections yet
                last = error
            time.sleep(0.2)
        raise AssertionError(f"the replica was not streaming within {timeout:.0f} s: {last}; log:\n{self.log()}")

    def catch_up(self, primary_connection, timeout: float = 300.0) -> None:
        """Until the replica has replayed everything the primary had written when called."""
        with primary_connection.cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_lsn()::text")
            target = cursor.fetchone()[0]
        deadline = time.monotonic() + timeout
        conn = self.connect()
        conn.autocommit = True
        try:
            with conn.cursor() as cursor:
                while time.monotonic() < deadline:
                    cursor.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target])
                    if cursor.fetchone()[0]:
                        return
                    time.sleep(0.05)
        finally:
            conn.close()
        raise AssertionError(f"the replica did not replay up to {target} within {timeout:.0f} s")

    def log(self) -> str:
        path = self.folder / "server.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def stop(self) -> None:
        """Fast shutdown of the postmaster this replica started (by its PID), then remove its folder."""
        for sig, wait in ((signal.SIGINT, 30.0), (signal.SIGQUIT, 10.0), (signal.SIGKILL, 10.0)):
            if not _alive(self.pid):
                break
            os.kill(self.pid, sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and _alive(self.pid):
                time.sleep(0.1)
        shutil.rmtree(self.folder, ignore_errors=True)
        _drop_slot(self.primary, self.slot)


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie left to a parent that does not reap counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _primary_connection(primary: dict):
    import psycopg2

    conn = psycopg2.connect(**primary, dbname="postgres")
    conn.autocommit = True
    return conn


def _drop_slot(primary: dict, slot: str, timeout: float = 20.0) -> None:
    """Drop the replication slot once its walsender (the stopped replica's) has let it go."""
    conn = _primary_connection(primary)
    try:
        with conn.cursor() as cursor:
            deadline = time.monotonic() + timeout
            while True:
                cursor.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", [slot])
                row = cursor.fetchone()
                if row is None:
                    return
                if not row[0] or time.monotonic() > deadline:
                    cursor.execute("SELECT pg_drop_replication_slot(%s)", [slot])
                    return
                time.sleep(0.1)
    finally:
        conn.close()


def _drop_abandoned_slots(cursor) -> None:
    """Slots of earlier runs on this machine whose process is gone (killed before its
    clean-up): a slot nobody reads keeps the primary's WAL forever."""
    cursor.execute(
        "SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE %s AND NOT active", [SLOT_PREFIX + "%"]
    )
    for (name,) in cursor.fetchall():
        owner_pid = name[len(SLOT_PREFIX) :]
        if owner_pid.isdigit() and not _alive(int(owner_pid)):
            cursor.execute("SELECT pg_drop_replication_slot(%s)", [name])


def start_replica(primary_settings: dict) -> StreamingReplica:
    """Make a streaming replica of the server of `primary_settings` (a Django DATABASES
    entry) and start it; the caller stops it (`StreamingReplica.stop`)."""
    host = primary_settings.get("HOST") or "127.0.0.1"
    port = int(primary_settings.get("PORT") or 5432)
    user = primary_settings.get("USER") or "postgres"
    password = primary_settings.get("PASSWORD") or ""
    server = {"host": host, "port": port, "user": user, "password": password or None}
    conn = _primary_connection(server)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT current_setting('server_version_num')::int / 10000")
            major = cursor.fetchone()[0]
            primary = {}
            for name in AT_LEAST_PRIMARY:
                cursor.execute("SELECT current_setting(%s)", [name])
                primary[name] = cursor.fetchone()[0]
    finally:
        conn.close()
    binaries = server_binaries(major)
    begun = time.monotonic()

    # Server processes never run as root: as root, run them as the cluster's owner.
    as_owner: list[str] = []
    owner = None
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            unavailable("running as root and there is no `postgres` user to run the replica as")
        as_owner = ["runuser", "-u", "postgres", "--"]
    folder = Path(tempfile.mkdtemp(prefix="mashov-replica-"))
    if owner is not None:
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    env = {**os.environ, "PGPASSWORD": password} if password else dict(os.environ)
    data = folder / "data"
    # A slot of its own, holding the WAL from before the copy starts: pg_basebackup's
    # temporary slot is made once the copy runs, and a primary busy enough to recycle WAL
    # in between (other databases' bulk loads) cuts the copy's stream. The replica streams
    # through the same slot, so it never falls behind what the primary keeps. Dropped in stop().
    slot = f"{SLOT_PREFIX}{os.getpid()}"
    conn = _primary_connection(server)
    try:
        with conn.cursor() as cursor:
            if host in ("127.0.0.1", "localhost", "::1"):
                _drop_abandoned_slots(cursor)
            cursor.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", [slot])
            if cursor.fetchone():
                cursor.execute("SELECT pg_drop_replication_slot(%s)", [slot])
            cursor.execute("SELECT pg_create_physical_replication_slot(%s, true)", [slot])
    finally:
        conn.close()
    try:
        made = subprocess.run(
            [*as_owner, str(binaries / "pg_basebackup"), "-h", host, "-p", str(port), "-U", user,
             "-D", str(data), "-R", "-X", "stream", "-S", slot, "--checkpoint=fast", "--no-sync"],
            env=env, cwd=folder, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if made.returncode != 0:
            reason = made.stderr.strip()
            if "pg_hba.conf" in reason:
                reason += (
                    f" — allow replication connections from 127.0.0.1 in pg_hba.conf ({HBA_HINT}; .ci/run adds it)"
                )
            unavailable(f"pg_basebackup failed: {reason}")
        replica_port = free_port()
        settings = {
            "port": replica_port,
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{folder}'",
            "hot_standby": "on",
            # A throwaway copy: nothing to make durable, and less I/O on a shared machine.
            "fsync": "off",
            "shared_buffers": "'32MB'",
            **primary,
        }
        # Debian keeps postgresql.conf and pg_hba.conf outside the data folder, so the copy has
        # none: the replica's own, with the standby settings from `-R` in postgresql.auto.conf.
        (data / "postgresql.conf").write_text("".join(f"{key} = {value}\n" for key, value in settings.items()))
        (data / "pg_hba.conf").write_text("local all all trust\nhost all all 127.0.0.1/32 trust\n")
        (data / "pg_ident.conf").write_text("")
        if owner is not None:
            for name in ("postgresql.conf", "pg_hba.conf", "pg_ident.conf"):
                os.chown(data / name, owner.pw_uid, owner.pw_gid)
        # Not `-w`: before it accepts connections the standby replays the WAL written during
        # the copy, which takes as long as the primary was busy; wait_streaming waits for it.
        started = subprocess.run(
            [*as_owner, str(binaries / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-W", "start"],
            cwd=folder, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        pid_file = data / "postmaster.pid"
        deadline = time.monotonic() + 30
        while started.returncode == 0 and not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = int(pid_file.read_text().split()[0]) if pid_file.exists() else 0
        replica = StreamingReplica(
            folder=folder, port=replica_port, pid=pid, user=user, password=password, primary=server, slot=slot
        )
        if started.returncode != 0 or not pid:
            log = replica.log()
            replica.stop()
            raise AssertionError(f"the replica did not start: {started.stdout}{started.stderr}\n{log}")
    except BaseException:
        if not (data / "postmaster.pid").exists():
            shutil.rmtree(folder, ignore_errors=True)
            _drop_slot(server, slot)
        raise
    try:
        replica.wait_streaming(timeout=900)
        print(f"\nstreaming replica of {major} on port {replica.port} in {time.monotonic() - begun:.1f} s")
    except BaseException:
        replica.stop()
        raise
    return replica
