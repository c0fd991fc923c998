"""Shared fixtures and helpers: the backends to run on, the CLI binary, threads."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

import parcrypt


def _opencl_reason() -> str | None:
    for backend in parcrypt.backends():
        if backend["name"] == "opencl":
            return None if backend["available"] else backend["detail"]
    return "this build has no OpenCL backend"


OPENCL_MISSING = _opencl_reason()
if OPENCL_MISSING:
    print(f"parcrypt tests: opencl backend SKIPPED: {OPENCL_MISSING}")

BACKENDS = [
    "seq",
    "pool",
    pytest.param(
        "opencl",
        marks=pytest.mark.skipif(
            OPENCL_MISSING is not None, reason=f"SKIPPED: no OpenCL here: {OPENCL_MISSING}"
        ),
    ),
]

# 0, 1, 15, 16, 17 and large: a multi-megabyte message that every backend splits.
SIZES = [0, 1, 15, 16, 17, 3 * 1024 * 1024 + 5]


def _find_cli() -> str | None:
    explicit = os.environ.get("PARCRYPT_BIN")
    if explicit:
        return explicit
    root = Path(__file__).resolve().parents[2]
    for candidate in (root / "target" / "release" / "parcrypt", root / "target" / "debug" / "parcrypt"):
        if candidate.is_file():
            return str(candidate)
    return shutil.which("parcrypt")


CLI = _find_cli()


@pytest.fixture(scope="session")
def cli() -> str:
    """The `parcrypt` binary (PARCRYPT_BIN, else the workspace's target, else PATH)."""
    if CLI is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the parcrypt CLI is needed in CI: set PARCRYPT_BIN")
        pytest.skip("SKIPPED: no parcrypt CLI binary (set PARCRYPT_BIN)")
    return CLI


def run_cli(cli: str, *args: str, input: bytes | None = None, env: dict | None = None) -> bytes:
    """Runs the CLI, returns its stdout; fails the test with its stderr if it fails."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    done = subprocess.run([cli, *args], input=input, capture_output=True, env=full_env)
    if done.returncode != 0:
        pytest.fail(f"parcrypt {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout


def run_threads(targets: Iterable[Callable[[], object]]) -> None:
    """Runs each of ``targets`` on a thread of its own, all started before any is waited for."""
    threads = [threading.Thread(target=target) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
