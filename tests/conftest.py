"""Shared helpers for the smoke-import tests: fixture folders, a loopback listener, process scans."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from pathlib import Path

import pytest

from audits import submission
from audits.smoke import isolation

SMOKE_FIXTURES = Path(__file__).parent / "fixtures" / "smoke"
SANDBOXES = isolation.sandboxes()


def pytest_report_header(config):
    return "smoke sandboxes on this machine: " + "; ".join(s.describe() for s in SANDBOXES.values())


@pytest.fixture
def smoke_folder(tmp_path):
    """Copy a fixture folder from tests/fixtures/smoke into tmp_path, add targets.json (what an
    adversarial fixture aims at), and load it as a Submission."""

    def make(name: str, **targets) -> submission.Submission:
        folder = tmp_path / "records" / f"2026-01-01_{name}"
        shutil.copytree(SMOKE_FIXTURES / name, folder)
        (folder / "targets.json").write_text(json.dumps(targets))
        return submission.load(folder)

    return make


@pytest.fixture
def listener():
    """A TCP listener on 127.0.0.1 that records every connection it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    accepted: list[bytes] = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    accepted.append(conn.recv(1024))
                except OSError:
                    accepted.append(b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


def processes_with(text: str) -> list[int]:
    """Pids of live processes whose command line contains `text`."""
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                pids.append(int(entry.name))
    return pids
