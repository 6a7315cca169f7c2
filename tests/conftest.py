"""Fixtures for the smoke-import tests: fixture folders and a loopback listener. Helpers that tests
import live in support.py: a test module never imports a conftest (tests/trainer has one too, and
whichever loads first takes the name `conftest`)."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from audits import submission
from support import SANDBOXES

SMOKE_FIXTURES = Path(__file__).parent / "fixtures" / "smoke"


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
    """A TCP listener on 127.0.0.1: (port, accepted), where accepted() returns what each connection
    made so far sent. The kernel completes a connection into the listener's backlog by itself, so
    once a smoke import has ended (its processes are dead) every connection it made is there to
    read, however slow the machine: no thread, no waiting."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.setblocking(False)

        def accepted() -> list[bytes]:
            sent = []
            while True:
                try:
                    conn, _ = server.accept()
                except BlockingIOError:
                    return sent
                with conn:  # blocking: the peer has closed, so recv returns at once
                    sent.append(conn.recv(1024))

        yield server.getsockname()[1], accepted
