"""parcrypt against a real S3 server over HTTP: moto's standalone server (ThreadedMotoServer
on a free port), reached through s3fs/botocore, with a 2-process LocalCluster whose workers
get their credentials from a worker plugin (never from the task graph). A small HTTP proxy in
front of the server fails the uploads of chosen parts, to see what a failing store does.

The large object is 64 MiB by default; PARCRYPT_S3_LARGE_MIB=512 runs the issue's 512 MiB
(in 8 parts of 64 MiB)."""

from __future__ import annotations

import hashlib
import http.client
import http.server
import io
import os
import pickle
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed", reason="SKIPPED: dask/distributed not installed (pip install 'parcrypt[dask]')")
pytest.importorskip("s3fs", reason="SKIPPED: s3fs not installed (pip install 'parcrypt[s3]')")
moto_server = pytest.importorskip("moto.server", reason="SKIPPED: moto[server] not installed (pip install 'moto[server]')")

import s3fs  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

import parcrypt  # noqa: E402
import parcrypt.dask as pdask  # noqa: E402
from parcrypt import parts  # noqa: E402

MIB = 1024 * 1024
LARGE_MIB = int(os.environ.get("PARCRYPT_S3_LARGE_MIB", "64"))
SALTS = (bytes(range(24)), bytes(range(100, 116)))
SECRET = "moto-secret-access-key-7f3e"  # the store's secret: must never enter the task graph


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _FailingProxy:
    """An HTTP proxy in front of the S3 server that answers 500 to the upload of every part
    whose number is in ``fail_parts`` (``fail_times`` times each; -1: always)."""

    def __init__(self, upstream_port: int) -> None:
        self.fail_parts: set[int] = set()
        self.fail_times = -1
        self.failed: dict[int, int] = {}
        # The first upload of part ``hold_part`` waits for ``release`` (``held`` set meanwhile).
        self.hold_part: int | None = None
        self.held, self.release = threading.Event(), threading.Event()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                number = None
                if self.command == "PUT" and "partNumber=" in self.path:
                    number = int(self.path.split("partNumber=")[1].split("&")[0])
                if number is not None and number == proxy.hold_part:
                    proxy.hold_part = None
                    proxy.held.set()
                    proxy.release.wait(60)
                if number in proxy.fail_parts and (
                    proxy.fail_times < 0 or proxy.failed.get(number, 0) < proxy.fail_times
                ):
                    proxy.failed[number] = proxy.failed.get(number, 0) + 1
                    message = b"<Error><Code>InternalError</Code><Message>injected</Message></Error>"
                    self.send_response(500)
                    self.send_header("Content-Length", str(len(message)))
                    self.end_headers()
                    self.wfile.write(message)
                    return
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=120)
                headers = {name: value for name, value in self.headers.items() if name.lower() != "host"}
                headers["Host"] = f"127.0.0.1:{upstream_port}"
                upstream.request(self.command, self.path, body=body, headers=headers)
                response = upstream.getresponse()
                data = response.read()
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                upstream.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _options(port: int) -> dict[str, Any]:
    return {
        "key": "moto-access-key",
        "secret": SECRET,
        "use_listings_cache": False,
        "skip_instance_cache": True,
        "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{port}", "region_name": "us-east-1"},
        "config_kwargs": {"retries": {"max_attempts": 3, "mode": "standard"}},
    }


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[int, _FailingProxy]]:
    port = _free_port()
    moto = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    proxy = _FailingProxy(port)
    try:
        yield port, proxy
    finally:
        proxy.close()
        moto.stop()


@pytest.fixture(scope="module")
def options(server: tuple[int, _FailingProxy]) -> dict[str, Any]:
    """The client's storage options: straight to the server."""
    return _options(server[0])


@pytest.fixture(scope="module")
def fs(options: dict[str, Any]) -> s3fs.S3FileSystem:
    store = s3fs.S3FileSystem(**options)
    store.call_s3("create_bucket", Bucket="bucket")
    return store


@pytest.fixture(scope="module")
def client(server: tuple[int, _FailingProxy]) -> Iterator[Client]:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            # The workers reach the store through the proxy, with credentials of their own.
            pdask.register_storage_options(client, _options(server[1].port))
            yield client


@pytest.fixture
def proxy(server: tuple[int, _FailingProxy]) -> Iterator[_FailingProxy]:
    server[1].fail_parts, server[1].fail_times, server[1].failed = set(), -1, {}
    server[1].hold_part, server[1].held, server[1].release = None, threading.Event(), threading.Event()
    yield server[1]
    server[1].fail_parts, server[1].hold_part = set(), None
    server[1].release.set()


def _random(size: int, seed: int) -> bytes:
    generator = random.Random(seed)  # randbytes takes at most 256 MiB at once
    return b"".join(generator.randbytes(min(64 * MIB, size - at)) for at in range(0, size, 64 * MIB))


def _pending_uploads(fs: s3fs.S3FileSystem, bucket: str = "bucket") -> list[dict[str, Any]]:
    return list(fs.call_s3("list_multipart_uploads", Bucket=bucket).get("Uploads", []))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- single machine: encrypt_file, decrypt_file, open over URLs ---------------------------


def test_file_functions_over_urls_equal_the_local_bytes(fs: s3fs.S3FileSystem, options: dict[str, Any], tmp_path: Path) -> None:
    plain = _random(3 * MIB + 7, 1)
    key = os.urandom(32)
    fs.pipe("bucket/single/plain.bin", plain)
    parcrypt.encrypt_file("s3://bucket/single/plain.bin", "s3://bucket/single/sealed.pc", key=key, storage_options=options)
    local = tmp_path / "sealed.pc"
    local.write_bytes(fs.cat("bucket/single/sealed.pc"))
    assert parcrypt.decrypt_file(local, tmp_path / "plain.out", key=key) == len(plain)
    assert (tmp_path / "plain.out").read_bytes() == plain
    parcrypt.decrypt_file("s3://bucket/single/sealed.pc", "s3://bucket/single/opened.bin", key=key, storage_options=options)
    assert fs.cat("bucket/single/opened.bin") == plain
    with parcrypt.open("s3://bucket/single/sealed.pc", "rb", key=key, storage_options=options) as reader:
        reader.seek(2 * MIB)
        assert reader.read(100) == plain[2 * MIB : 2 * MIB + 100]
    with parcrypt.open("s3://bucket/single/written.pc", "wb", key=key, storage_options=options) as writer:
        writer.write(plain[:1000])
        assert not fs.exists("bucket/single/written.pc")  # nothing before close
    with parcrypt.open("s3://bucket/single/written.pc", "rb", key=key, storage_options=options) as reader:
        assert reader.read() == plain[:1000]
    # An existing object is kept unless overwrite=True.
    with pytest.raises(FileExistsError):
        parcrypt.encrypt_file("s3://bucket/single/plain.bin", "s3://bucket/single/sealed.pc", key=key, storage_options=options)
    with pytest.raises(FileExistsError):
        parcrypt.open("s3://bucket/single/sealed.pc", "wb", key=key, storage_options=options)


def test_open_over_a_url_reads_only_the_chunks_under_each_read(fs: s3fs.S3FileSystem, options: dict[str, Any], tmp_path: Path) -> None:
    plain = _random(40 * 16 * 1024 + 100, 4)
    key = os.urandom(16)
    (tmp_path / "p").write_bytes(plain)
    parcrypt.encrypt_file(tmp_path / "p", "s3://bucket/ranged/sealed.pc", key=key, storage_options=options)
    sealed = bytearray(fs.cat("bucket/ranged/sealed.pc"))
    with parcrypt.open("s3://bucket/ranged/sealed.pc", "rb", key=key, storage_options=options) as reader:
        assert reader.size() == len(plain)
        reader.seek(30 * 16 * 1024 + 512)
        assert reader.read(1024) == plain[30 * 16 * 1024 + 512 : 30 * 16 * 1024 + 1536]
        assert reader._fetched == {30}  # type: ignore[attr-defined]  # one chunk, no more
        reader.seek(-10, io.SEEK_END)
        assert reader.read() == plain[-10:] and reader.read() == b""
        reader.seek(0)
        assert reader.read() == plain
    # A damaged chunk fails the read that needs it; other chunks still read.
    sealed[len(sealed) // 2] ^= 0xFF
    fs.pipe("bucket/ranged/damaged.pc", bytes(sealed))
    with parcrypt.open("s3://bucket/ranged/damaged.pc", "rb", key=key, storage_options=options) as reader:
        assert reader.read(100) == plain[:100]
        with pytest.raises(parcrypt.InvalidTag):
            reader.read()
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.open("s3://bucket/ranged/sealed.pc", "rb", key=os.urandom(16), storage_options=options)
    fs.pipe("bucket/ranged/cut.pc", bytes(sealed[: -(16 * 1024 + 16)]))
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.open("s3://bucket/ranged/cut.pc", "rb", key=key, storage_options=options)
    with pytest.raises(ValueError, match="exactly one"):
        parcrypt.open("s3://bucket/ranged/sealed.pc", "rb", storage_options=options)


def test_file_functions_over_urls_publish_nothing_on_failure(fs: s3fs.S3FileSystem, options: dict[str, Any]) -> None:
    key = os.urandom(16)
    fs.pipe("bucket/bad/plain.bin", _random(100_000, 2))
    parcrypt.encrypt_file("s3://bucket/bad/plain.bin", "s3://bucket/bad/sealed.pc", key=key, storage_options=options)
    sealed = bytearray(fs.cat("bucket/bad/sealed.pc"))
    sealed[len(sealed) // 2] ^= 0xFF
    fs.pipe("bucket/bad/tampered.pc", bytes(sealed))
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.decrypt_file("s3://bucket/bad/tampered.pc", "s3://bucket/bad/opened.bin", key=key, storage_options=options)
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.decrypt_file("s3://bucket/bad/sealed.pc", "s3://bucket/bad/opened.bin", key=os.urandom(16), storage_options=options)
    assert not fs.exists("bucket/bad/opened.bin")
    with pytest.raises(FileNotFoundError):
        parcrypt.encrypt_file("s3://bucket/bad/missing.bin", "s3://bucket/bad/x.pc", key=key, storage_options=options)
    with pytest.raises(OSError):
        parcrypt.encrypt_file("s3://no-such-bucket-h35/a", "s3://no-such-bucket-h35/b", key=key, storage_options=options)
    with parcrypt.open("s3://bucket/bad/aborted.pc", "wb", key=key, storage_options=options) as writer:
        writer.write(b"x" * 100_000)
        writer.abort()
    with pytest.raises(RuntimeError):
        with parcrypt.open("s3://bucket/bad/raised.pc", "wb", key=key, storage_options=options) as writer:
            writer.write(b"x" * 100_000)
            raise RuntimeError("the producer failed")
    assert not fs.exists("bucket/bad/aborted.pc") and not fs.exists("bucket/bad/raised.pc")
    assert not fs.exists("bucket/bad/x.pc")


# ---- no overwrite race: the publish itself is conditional (If-None-Match: *) ---------------

OTHERS = b"the other writer's object"


def _race_after_the_check(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Makes another writer create each object right after this process's last check that
    it is absent (``_store.check_absent``), before the upload that publishes it; returns the
    URLs it raced."""
    from parcrypt import _store

    check, raced = _store.check_absent, []

    def racing(fs: Any, bucket: str, key: str, url: str) -> None:
        check(fs, bucket, key, url)
        fs.pipe_file(f"{bucket}/{key}", OTHERS)
        raced.append(url)

    monkeypatch.setattr(_store, "check_absent", racing)
    return raced


def test_the_installed_botocore_sends_if_none_match() -> None:
    from parcrypt import _store

    assert _store.sends_if_none_match("PutObject")
    assert _store.sends_if_none_match("CompleteMultipartUpload")
    assert not _store.sends_if_none_match("CreateMultipartUpload")  # the model is read, not assumed


@pytest.mark.parametrize("single_put", [64 * MIB, 5 * MIB], ids=["put", "multipart"])
def test_an_object_created_after_the_check_is_kept_by_the_file_functions(
    fs: s3fs.S3FileSystem, options: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, single_put: int
) -> None:
    """moto honours If-None-Match on PutObject and CompleteMultipartUpload as S3 does (412):
    the other writer's object stays, FileExistsError names the URL, no upload is left."""
    from parcrypt import _store

    monkeypatch.setattr(_store, "SINGLE_PUT_BYTES", single_put)
    plain = _random(12 * MIB + 3, 41)
    key = os.urandom(16)
    folder = f"bucket/race-{single_put}"
    fs.pipe(f"{folder}/plain.bin", plain)
    # Without a race the conditional upload publishes (in 3 parts for "multipart").
    parcrypt.encrypt_file(f"s3://{folder}/plain.bin", f"s3://{folder}/first.pc", key=key, storage_options=options)
    parcrypt.decrypt_file(f"s3://{folder}/first.pc", tmp_path / "first", key=key, storage_options=options)
    assert (tmp_path / "first").read_bytes() == plain
    raced = _race_after_the_check(monkeypatch)
    with pytest.raises(FileExistsError, match=f"s3://{folder}/sealed.pc .*another writer"):
        parcrypt.encrypt_file(f"s3://{folder}/plain.bin", f"s3://{folder}/sealed.pc", key=key, storage_options=options)
    with pytest.raises(FileExistsError, match=f"s3://{folder}/opened.bin .*another writer"):
        parcrypt.decrypt_file(f"s3://{folder}/first.pc", f"s3://{folder}/opened.bin", key=key, storage_options=options)
    with pytest.raises(FileExistsError, match=f"s3://{folder}/written.pc .*another writer"):
        with parcrypt.open(f"s3://{folder}/written.pc", "wb", key=key, storage_options=options) as writer:
            writer.write(plain)
    assert len(raced) == 3
    for name in ("sealed.pc", "opened.bin", "written.pc"):
        assert fs.cat(f"{folder}/{name}") == OTHERS
    assert _pending_uploads(fs) == []
    # overwrite=True replaces as before (no condition, no check).
    parcrypt.encrypt_file(f"s3://{folder}/plain.bin", f"s3://{folder}/sealed.pc", key=key, overwrite=True, storage_options=options)
    parcrypt.decrypt_file(f"s3://{folder}/sealed.pc", tmp_path / "replaced", key=key, storage_options=options)
    assert (tmp_path / "replaced").read_bytes() == plain


def test_a_conditional_put_refused_for_another_reason_is_not_called_existing(
    fs: s3fs.S3FileSystem, options: dict[str, Any], tmp_path: Path
) -> None:
    (tmp_path / "p").write_bytes(b"p" * 1000)
    with pytest.raises(OSError) as raised:
        parcrypt.encrypt_file(tmp_path / "p", "s3://no-such-bucket-h35/x.pc", key=os.urandom(16), storage_options=options)
    assert not isinstance(raised.value, FileExistsError)


def test_a_botocore_without_if_none_match_warns_and_still_checks(
    fs: s3fs.S3FileSystem, options: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from parcrypt import _store

    monkeypatch.setattr(_store, "sends_if_none_match", lambda operation: False)
    (tmp_path / "p").write_bytes(b"p" * 1000)
    key = os.urandom(16)
    with pytest.warns(parcrypt.ParcryptWarning, match="If-None-Match needs botocore 1.35"):
        parcrypt.encrypt_file(tmp_path / "p", "s3://bucket/old-botocore/a.pc", key=key, storage_options=options)
    first = fs.cat("bucket/old-botocore/a.pc")
    with pytest.raises(FileExistsError, match="exists"):
        parcrypt.encrypt_file(tmp_path / "p", "s3://bucket/old-botocore/a.pc", key=key, storage_options=options)
    assert fs.cat("bucket/old-botocore/a.pc") == first


# ---- age files over URLs ------------------------------------------------------------------


def test_age_files_over_urls(fs: s3fs.S3FileSystem, options: dict[str, Any], tmp_path: Path) -> None:
    """parcrypt.open reads an age file at a URL (recognised by its header, or named by
    format="age") at random through the library's age reader, from a private copy of the
    version it described; writes one to a URL on close, conditionally."""
    owner = parcrypt.keygen()
    plain = _random(5 * 65536 + 9, 51)
    (tmp_path / "p").write_bytes(plain)
    parcrypt.encrypt_file(tmp_path / "p", "s3://bucket/age/a.age", recipients=[owner.recipient], format="age",
                          storage_options=options)
    assert fs.cat("bucket/age/a.age").startswith(b"age-encryption.org/v1\n")
    for format in ("parcrypt", "age"):
        with parcrypt.open("s3://bucket/age/a.age", identities=owner.identity, format=format, threads=1,
                           storage_options=options) as reader:
            assert reader.size() == len(plain)
            reader.seek(2 * 65536 - 5)
            assert reader.read(10) == plain[2 * 65536 - 5 : 2 * 65536 + 5]
            reader.seek(0)
            assert reader.read() == plain
        assert reader.closed
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.open("s3://bucket/age/a.age", identities=parcrypt.keygen().identity, storage_options=options)
    with pytest.raises(ValueError, match="give identities"):
        parcrypt.open("s3://bucket/age/a.age", key=bytes(16), storage_options=options)
    # A damaged chunk fails the read that needs it, after the ones before it.
    damaged = bytearray(fs.cat("bucket/age/a.age"))
    damaged[-70_000] ^= 1
    fs.pipe("bucket/age/damaged.age", bytes(damaged))
    with parcrypt.open("s3://bucket/age/damaged.age", identities=owner.identity, storage_options=options) as reader:
        assert reader.read(65536) == plain[:65536]
        with pytest.raises(parcrypt.InvalidTag):
            reader.read()
    # Armored: one line, as for a local file.
    parcrypt.encrypt_file(tmp_path / "p", "s3://bucket/age/armored.age", recipients=[owner.recipient], format="age",
                          armor=True, storage_options=options)
    with pytest.raises(parcrypt.Error, match="armored"):
        parcrypt.open("s3://bucket/age/armored.age", identities=owner.identity, storage_options=options)
    # Written to a URL: nothing before close, the whole file after; never over an object.
    with parcrypt.open("s3://bucket/age/written.age", "wb", recipients=owner.recipient, format="age", threads=1,
                       storage_options=options) as writer:
        writer.write(plain)
        assert not fs.exists("bucket/age/written.age")
    with parcrypt.open("s3://bucket/age/written.age", identities=owner.identity, storage_options=options) as reader:
        assert reader.read() == plain
    with pytest.raises(FileExistsError):
        parcrypt.open("s3://bucket/age/written.age", "wb", recipients=owner.recipient, format="age",
                      storage_options=options)
    # A parcrypt file named as an age file is refused by the age reader, not misread.
    parcrypt.encrypt_file(tmp_path / "p", "s3://bucket/age/not-age.pc", key=bytes(16), storage_options=options)
    with pytest.raises(parcrypt.Error):
        parcrypt.open("s3://bucket/age/not-age.pc", identities=owner.identity, format="age", storage_options=options)


def test_storage_options_without_a_url_is_refused(tmp_path: Path) -> None:
    (tmp_path / "p").write_bytes(b"p")
    with pytest.raises(ValueError, match="storage_options"):
        parcrypt.encrypt_file(tmp_path / "p", tmp_path / "s", key=bytes(16), storage_options={"anon": True})
    assert not (tmp_path / "s").exists()


# ---- a cluster: many objects --------------------------------------------------------------


def test_many_objects_by_glob_round_trip_and_a_missing_one_fails_alone(
    client: Client, fs: s3fs.S3FileSystem, options: dict[str, Any], tmp_path: Path
) -> None:
    generator = random.Random(3)
    sizes = [0, 1, 16 * 1024, 5 * MIB + 3] + [generator.randrange(0, 3 * MIB) for _ in range(6)]
    plains = {f"bucket/many/in/f{index:02}.bin": _random(size, index) for index, size in enumerate(sizes)}
    fs.pipe(plains)
    key = os.urandom(16)
    reports = pdask.encrypt_files("s3://bucket/many/in/*.bin", "s3://bucket/many/sealed/", key=key, client=client, storage_options=options)
    assert [r.path for r in reports] == [f"s3://{name}" for name in sorted(plains)]
    assert all(r.ok for r in reports), [r.error for r in reports]
    assert {r.worker for r in reports} and all(r.worker for r in reports)
    # Each object is the command line's file: the single-machine decryption opens it.
    for name, plain in plains.items():
        sealed = fs.cat(name.replace("/in/", "/sealed/") + ".parcrypt")
        local = tmp_path / "one.pc"
        local.write_bytes(sealed)
        parcrypt.decrypt_file(local, tmp_path / "one.bin", key=key, overwrite=True)
        assert (tmp_path / "one.bin").read_bytes() == plain
    sealed_urls = [f"s3://bucket/many/sealed/f{index:02}.bin.parcrypt" for index in range(len(sizes))]
    reports = pdask.decrypt_files(
        [*sealed_urls[:3], "s3://bucket/many/sealed/missing.parcrypt", *sealed_urls[3:]],
        "s3://bucket/many/opened", key=key, client=client, storage_options=options,
    )
    failed = [r for r in reports if not r.ok]
    assert [r.path for r in failed] == ["s3://bucket/many/sealed/missing.parcrypt"]
    assert "FileNotFoundError" in (failed[0].error or "")
    for name, plain in plains.items():
        assert fs.cat(name.replace("/in/", "/opened/")) == plain
    assert not fs.exists("bucket/many/opened/missing")
    # Again without overwrite: every existing output is kept and reported.
    again = pdask.encrypt_files("s3://bucket/many/in/f0*.bin", "s3://bucket/many/sealed/", key=key, client=client, storage_options=options)
    assert again and all(not r.ok and "FileExistsError" in (r.error or "") for r in again)


def test_many_objects_with_a_wrong_key_publish_nothing(client: Client, fs: s3fs.S3FileSystem, options: dict[str, Any]) -> None:
    key = os.urandom(16)
    fs.pipe("bucket/wrong/in/a.bin", b"a" * 50_000)
    assert pdask.encrypt_files(["s3://bucket/wrong/in/a.bin"], "s3://bucket/wrong/sealed", key=key, client=client, storage_options=options)[0].ok
    reports = pdask.decrypt_files(["s3://bucket/wrong/sealed/a.bin.parcrypt"], "s3://bucket/wrong/opened", key=os.urandom(16), client=client, storage_options=options)
    assert not reports[0].ok and "InvalidTag" in (reports[0].error or "")
    assert not fs.exists("bucket/wrong/opened/a.bin")


def test_objects_created_after_the_workers_check_are_kept(
    client: Client, fs: s3fs.S3FileSystem, options: dict[str, Any]
) -> None:
    """Another writer creates each output object after the worker's check and before its
    upload: the conditional PUT is refused, the file fails alone with FileExistsError, and the
    other writer's object stays."""

    def install() -> None:
        from parcrypt import _store

        check = _store.check_absent

        def racing(fs: Any, bucket: str, key: str, url: str) -> None:
            check(fs, bucket, key, url)
            if key.startswith("race-files/"):
                fs.pipe_file(f"{bucket}/{key}", b"the other writer's object")

        _store._unraced, _store.check_absent = check, racing  # type: ignore[attr-defined]

    def uninstall() -> None:
        from parcrypt import _store

        _store.check_absent = _store._unraced  # type: ignore[attr-defined]

    key = os.urandom(16)
    fs.pipe({"bucket/race-in/a.bin": b"a" * 70_000, "bucket/race-in/b.bin": b"b" * 17})
    fs.pipe("bucket/race-in/c.bin.parcrypt", b"")
    assert all(r.ok for r in pdask.encrypt_files(
        ["s3://bucket/race-in/a.bin"], "s3://bucket/race-in/", key=key, client=client, storage_options=options))
    client.run(install)
    try:
        reports = pdask.encrypt_files(["s3://bucket/race-in/a.bin", "s3://bucket/race-in/b.bin"],
                                      "s3://bucket/race-files/", key=key, client=client, storage_options=options)
        assert [r.ok for r in reports] == [False, False]
        assert all("FileExistsError" in (r.error or "") and "another writer" in (r.error or "") for r in reports)
        reports = pdask.decrypt_files(["s3://bucket/race-in/a.bin.parcrypt"], "s3://bucket/race-files/opened",
                                      key=key, client=client, storage_options=options)
        assert not reports[0].ok and "s3://bucket/race-files/opened/a.bin" in (reports[0].error or "")
    finally:
        client.run(uninstall)
    for name in ("a.bin.parcrypt", "b.bin.parcrypt", "opened/a.bin"):
        assert fs.cat(f"bucket/race-files/{name}") == OTHERS
    assert _pending_uploads(fs) == []


# ---- a cluster: one large object in parts -------------------------------------------------


@pytest.fixture(scope="module")
def large(fs: s3fs.S3FileSystem, tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, str, bytes]:
    """The large plaintext (in the store as bucket/large/plain.bin), its digest, and the
    single-machine encryption's bytes (fixed salts)."""
    folder = tmp_path_factory.mktemp("large")
    plain = _random(LARGE_MIB * MIB + 12345, 7)
    (folder / "plain.bin").write_bytes(plain)
    key = bytes(range(16))
    parts.encrypt_with_salts(folder / "plain.bin", folder / "reference.pc", SALTS, key=key)
    fs.pipe("bucket/large/plain.bin", plain)
    return key, _sha(plain), (folder / "reference.pc").read_bytes()


def _chunks_for_8_parts() -> int:
    return max(320, (LARGE_MIB * MIB // parts.CHUNK_BYTES) // 8)


def test_large_object_equals_the_single_machine_bytes_and_decrypts(
    client: Client, fs: s3fs.S3FileSystem, options: dict[str, Any], large: tuple[bytes, str, bytes]
) -> None:
    key, digest, reference = large
    report = pdask.encrypt_large(
        "s3://bucket/large/plain.bin", "s3://bucket/large/sealed.pc", key=key, client=client,
        chunks_per_task=_chunks_for_8_parts(), salts=SALTS, storage_options=options,
    )
    assert report.tasks >= 8 and len(report.workers) == 2
    sealed = fs.cat("bucket/large/sealed.pc")
    assert len(sealed) == len(reference) and _sha(sealed) == _sha(reference)
    del sealed
    report = pdask.decrypt_large(
        "s3://bucket/large/sealed.pc", "s3://bucket/large/opened.bin", key=key, client=client,
        chunks_per_task=_chunks_for_8_parts(), storage_options=options,
    )
    assert report.bytes == LARGE_MIB * MIB + 12345 and report.tasks >= 8
    assert _sha(fs.cat("bucket/large/opened.bin")) == digest
    assert _pending_uploads(fs) == []
    # A range read touches only the chunks under it; the end one checks the final chunk.
    plain = fs.cat_file("bucket/large/plain.bin", start=5 * MIB - 10, end=9 * MIB + 10)
    got = pdask.decrypt_range("s3://bucket/large/sealed.pc", 5 * MIB - 10, 9 * MIB + 10, key=key, client=client, bytes_per_task=MIB, storage_options=options)
    assert got == plain
    size = LARGE_MIB * MIB + 12345
    tail = pdask.decrypt_range("s3://bucket/large/sealed.pc", size - 100, size + 100, key=key, client=client, storage_options=options)
    assert tail == fs.cat_file("bucket/large/plain.bin", start=size - 100, end=size)
    # Existing outputs are refused before any work.
    with pytest.raises(FileExistsError):
        pdask.encrypt_large("s3://bucket/large/plain.bin", "s3://bucket/large/sealed.pc", key=key, client=client, storage_options=options)


def test_small_objects_in_parts_and_tiny_part_sizes(client: Client, fs: s3fs.S3FileSystem, options: dict[str, Any], tmp_path: Path) -> None:
    key = os.urandom(16)
    for size in (0, 1, 16 * 1024, 5 * MIB, 12 * MIB + 1):
        plain = _random(size, size)
        fs.pipe(f"bucket/small/{size}.bin", plain)
        # 1 chunk per task is raised to 320 (5 MiB), S3's smallest part but the last.
        report = pdask.encrypt_large(f"s3://bucket/small/{size}.bin", f"s3://bucket/small/{size}.pc", key=key, client=client, chunks_per_task=1, storage_options=options)
        assert report.tasks == max(1, -(-size // (5 * MIB)) if size % (5 * MIB) else size // (5 * MIB))
        local = tmp_path / f"{size}.pc"
        local.write_bytes(fs.cat(f"bucket/small/{size}.pc"))
        assert parcrypt.decrypt_file(local, tmp_path / f"{size}.out", key=key) == size
        assert (tmp_path / f"{size}.out").read_bytes() == plain
        pdask.decrypt_large(f"s3://bucket/small/{size}.pc", f"s3://bucket/small/{size}.out", key=key, client=client, chunks_per_task=1, storage_options=options)
        assert fs.cat(f"bucket/small/{size}.out") == plain


def test_a_part_the_server_keeps_failing_aborts_the_upload(
    client: Client, fs: s3fs.S3FileSystem, options: dict[str, Any], proxy: _FailingProxy
) -> None:
    fs.pipe("bucket/failing/plain.bin", _random(20 * MIB, 11))
    proxy.fail_parts = {2}
    with pytest.raises(pdask.DaskJobError, match="aborted: nothing was published"):
        pdask.encrypt_large("s3://bucket/failing/plain.bin", "s3://bucket/failing/sealed.pc", key=os.urandom(16), client=client, chunks_per_task=320, storage_options=options)
    assert proxy.failed.get(2, 0) >= 1
    assert not fs.exists("bucket/failing/sealed.pc")
    assert _pending_uploads(fs) == []


def test_a_part_failing_once_is_retried_and_the_object_is_exact(
    client: Client, fs: s3fs.S3FileSystem, options: dict[str, Any], proxy: _FailingProxy, tmp_path: Path
) -> None:
    plain = _random(11 * MIB, 12)
    fs.pipe("bucket/retry/plain.bin", plain)
    (tmp_path / "plain.bin").write_bytes(plain)
    key = os.urandom(16)
    parts.encrypt_with_salts(tmp_path / "plain.bin", tmp_path / "reference.pc", SALTS, key=key)
    proxy.fail_parts, proxy.fail_times = {1, 3}, 1
    pdask.encrypt_large("s3://bucket/retry/plain.bin", "s3://bucket/retry/sealed.pc", key=key, client=client, chunks_per_task=320, salts=SALTS, storage_options=options)
    assert proxy.failed == {1: 1, 3: 1}
    assert fs.cat("bucket/retry/sealed.pc") == (tmp_path / "reference.pc").read_bytes()


def test_a_worker_killed_mid_upload_completes_exactly_or_publishes_nothing(
    fs: s3fs.S3FileSystem, options: dict[str, Any], proxy: _FailingProxy, server: tuple[int, _FailingProxy], tmp_path: Path
) -> None:
    plain = _random(24 * MIB + 5, 17)
    fs.pipe("bucket/killed/plain.bin", plain)
    (tmp_path / "plain.bin").write_bytes(plain)
    key = os.urandom(16)
    parts.encrypt_with_salts(tmp_path / "plain.bin", tmp_path / "reference.pc", SALTS, key=key)
    outcome: dict[str, Any] = {}
    proxy.hold_part = 2
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, Client(cluster) as other:
        pdask.register_storage_options(other, _options(proxy.port))
        pids = other.run(os.getpid)

        def job() -> None:
            try:
                outcome["report"] = pdask.encrypt_large(
                    "s3://bucket/killed/plain.bin", "s3://bucket/killed/sealed.pc", key=key, client=other,
                    chunks_per_task=320, salts=SALTS, storage_options=options,
                )
            except Exception as error:  # noqa: BLE001 - the outcome is checked below
                outcome["error"] = error

        runner = threading.Thread(target=job)
        runner.start()
        assert proxy.held.wait(60), "part 2 was never uploaded"
        uploading = [address for address, keys in other.processing().items() if any("parcrypt-part-2-" in str(k) for k in keys)]
        assert uploading, other.processing()
        os.kill(pids[uploading[0]], signal.SIGKILL)  # the worker dies with its part in flight
        proxy.release.set()
        runner.join(timeout=180)
        assert not runner.is_alive(), "the job hung after a worker was killed"
    if "report" in outcome:
        assert fs.cat("bucket/killed/sealed.pc") == (tmp_path / "reference.pc").read_bytes()
        print("s3 fault test: a worker killed mid-upload; the job completed on the others, exact")
    else:
        print(f"s3 fault test: failed cleanly: {outcome['error']}")
        assert isinstance(outcome["error"], pdask.DaskJobError), outcome["error"]
        assert not fs.exists("bucket/killed/sealed.pc")
    assert _pending_uploads(fs) == []


def test_tampered_truncated_and_wrong_key_objects_publish_nothing(
    client: Client, fs: s3fs.S3FileSystem, options: dict[str, Any]
) -> None:
    key = os.urandom(16)
    fs.pipe("bucket/tamper/plain.bin", _random(12 * MIB, 13))
    pdask.encrypt_large("s3://bucket/tamper/plain.bin", "s3://bucket/tamper/sealed.pc", key=key, client=client, chunks_per_task=320, storage_options=options)
    sealed = bytearray(fs.cat("bucket/tamper/sealed.pc"))
    tampered = bytearray(sealed)
    tampered[7 * MIB] ^= 0xFF
    fs.pipe("bucket/tamper/tampered.pc", bytes(tampered))
    with pytest.raises(pdask.DaskJobError, match="InvalidTag"):
        pdask.decrypt_large("s3://bucket/tamper/tampered.pc", "s3://bucket/tamper/out1", key=key, client=client, chunks_per_task=320, storage_options=options)
    with pytest.raises(parcrypt.InvalidTag):
        pdask.decrypt_range("s3://bucket/tamper/tampered.pc", 7 * MIB - 100, 7 * MIB + 100, key=key, client=client, storage_options=options)
    cut = (16 * 1024 + 16) * 500 + 2000  # a chunk boundary's worth off the end
    fs.pipe("bucket/tamper/truncated.pc", bytes(sealed[:-cut]))
    with pytest.raises(parcrypt.InvalidTag):
        pdask.decrypt_large("s3://bucket/tamper/truncated.pc", "s3://bucket/tamper/out2", key=key, client=client, storage_options=options)
    with pytest.raises(parcrypt.InvalidTag):
        pdask.decrypt_large("s3://bucket/tamper/sealed.pc", "s3://bucket/tamper/out3", key=os.urandom(16), client=client, storage_options=options)
    for name in ("out1", "out2", "out3"):
        assert not fs.exists(f"bucket/tamper/{name}")
    assert _pending_uploads(fs) == []


@pytest.mark.parametrize("encrypting", [True, False], ids=["encrypt_large", "decrypt_large"])
def test_an_object_created_during_a_large_job_is_kept(
    client: Client, fs: s3fs.S3FileSystem, options: dict[str, Any], monkeypatch: pytest.MonkeyPatch, encrypting: bool
) -> None:
    """Another writer creates the destination after the job's last check and before the
    multipart upload completes: the store refuses the completion (If-None-Match: *), the
    upload is aborted, FileExistsError names the URL and the other writer's object stays.
    With overwrite=True the same job replaces it."""
    from parcrypt import _store

    key = bytes(range(16, 32))
    if not fs.exists("bucket/race-large/sealed.pc"):
        fs.pipe("bucket/race-large/plain.bin", _random(11 * MIB + 5, 42))
        pdask.encrypt_large("s3://bucket/race-large/plain.bin", "s3://bucket/race-large/sealed.pc", key=key,
                            client=client, chunks_per_task=320, storage_options=options)
    source = "s3://bucket/race-large/plain.bin" if encrypting else "s3://bucket/race-large/sealed.pc"
    target = f"bucket/race-large/out-{encrypting}"
    complete = _store.complete_upload

    def racing(upload: Any, etags: Any, storage_options: Any, overwrite: bool = True) -> None:
        fs.pipe_file(target, OTHERS)  # after the job's checks, before its completion
        complete(upload, etags, storage_options, overwrite)

    monkeypatch.setattr(_store, "complete_upload", racing)
    job = pdask.encrypt_large if encrypting else pdask.decrypt_large
    with pytest.raises(FileExistsError, match=f"s3://{target} .*another writer"):
        job(source, f"s3://{target}", key=key, client=client, chunks_per_task=320, storage_options=options)
    assert fs.cat(target) == OTHERS
    assert _pending_uploads(fs) == []
    job(source, f"s3://{target}", key=key, client=client, chunks_per_task=320, overwrite=True, storage_options=options)
    if encrypting:
        assert fs.cat(f"{target}")[:len(OTHERS)] != OTHERS and fs.size(target) > 11 * MIB
    else:
        assert fs.cat(target) == fs.cat("bucket/race-large/plain.bin")
    assert _pending_uploads(fs) == []


def test_an_object_created_while_parts_upload_is_kept(
    client: Client, fs: s3fs.S3FileSystem, options: dict[str, Any], proxy: _FailingProxy
) -> None:
    """Another writer creates the destination while part 2 is held in flight: the job
    publishes nothing over it (FileExistsError naming the URL), aborts its upload, and the
    other writer's object stays."""
    fs.pipe("bucket/mid-job/plain.bin", _random(11 * MIB + 5, 43))
    outcome: dict[str, Any] = {}
    proxy.hold_part = 2

    def job() -> None:
        try:
            pdask.encrypt_large("s3://bucket/mid-job/plain.bin", "s3://bucket/mid-job/sealed.pc", key=os.urandom(16),
                                client=client, chunks_per_task=320, storage_options=options)
        except Exception as error:  # noqa: BLE001 - checked below
            outcome["error"] = error

    runner = threading.Thread(target=job)
    runner.start()
    assert proxy.held.wait(60), "part 2 was never uploaded"
    fs.pipe_file("bucket/mid-job/sealed.pc", OTHERS)
    proxy.release.set()
    runner.join(timeout=120)
    assert not runner.is_alive()
    assert isinstance(outcome.get("error"), FileExistsError), outcome
    assert "s3://bucket/mid-job/sealed.pc" in str(outcome["error"])
    assert fs.cat("bucket/mid-job/sealed.pc") == OTHERS
    assert _pending_uploads(fs) == []


def test_missing_bucket_object_and_other_stores_are_clear_errors(
    client: Client, fs: s3fs.S3FileSystem, options: dict[str, Any]
) -> None:
    key = os.urandom(16)
    fs.pipe("bucket/errors/plain.bin", b"p" * 100_000)
    with pytest.raises(FileNotFoundError):
        pdask.encrypt_large("s3://bucket/errors/missing.bin", "s3://bucket/errors/x.pc", key=key, client=client, storage_options=options)
    with pytest.raises(OSError, match="(?i)bucket"):
        pdask.encrypt_large("s3://bucket/errors/plain.bin", "s3://no-such-bucket-h35/x.pc", key=key, client=client, storage_options=options)
    with pytest.raises(ValueError, match="S3-compatible"):
        pdask.encrypt_large("s3://bucket/errors/plain.bin", "memory://x.pc", key=key, client=client, storage_options=options)
    with pytest.raises(ValueError, match="S3-compatible"):
        pdask.encrypt_large("s3://bucket/errors/plain.bin", "/tmp/parcrypt-h35-local.pc", key=key, client=client, storage_options=options)
    with pytest.raises(ValueError, match="exactly one"):
        pdask.encrypt_large("s3://bucket/errors/plain.bin", "s3://bucket/errors/y.pc", client=client, storage_options=options)
    assert not fs.exists("bucket/errors/x.pc") and not fs.exists("bucket/errors/y.pc")
    assert not os.path.exists("/tmp/parcrypt-h35-local.pc")


def test_workers_without_credentials_fail_and_publish_nothing(fs: s3fs.S3FileSystem, options: dict[str, Any], server: tuple[int, _FailingProxy]) -> None:
    """Workers whose options name no usable store (here: a port where nothing listens) fail
    every part; the client aborts the upload."""
    fs.pipe("bucket/nocred/plain.bin", _random(6 * MIB, 14))
    dead = _options(_free_port())
    dead["config_kwargs"] = {"retries": {"max_attempts": 1}, "connect_timeout": 2}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, Client(cluster) as other:
        pdask.register_storage_options(other, dead)
        with pytest.raises(pdask.DaskJobError):
            pdask.encrypt_large("s3://bucket/nocred/plain.bin", "s3://bucket/nocred/sealed.pc", key=os.urandom(16), client=other, storage_options=options)
    assert not fs.exists("bucket/nocred/sealed.pc")
    assert _pending_uploads(fs) == []


def test_no_store_secret_key_or_passphrase_enters_the_task_graph(
    client: Client, fs: s3fs.S3FileSystem, options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[bytes] = []
    submit = client.submit

    def recording(*args: Any, **kwargs: Any) -> Any:
        sent.append(pickle.dumps((args, kwargs)))
        return submit(*args, **kwargs)

    monkeypatch.setattr(client, "submit", recording)
    passphrase = b"correct horse battery staple h35"
    fs.pipe("bucket/graph/plain.bin", _random(6 * MIB, 15))
    pdask.encrypt_large("s3://bucket/graph/plain.bin", "s3://bucket/graph/sealed.pc", passphrase=passphrase, client=client, chunks_per_task=320, storage_options=options)
    pdask.encrypt_files(["s3://bucket/graph/plain.bin"], "s3://bucket/graph/files", passphrase=passphrase, client=client, storage_options=options)
    pdask.decrypt_large("s3://bucket/graph/sealed.pc", "s3://bucket/graph/opened.bin", passphrase=passphrase, client=client, storage_options=options)
    assert fs.cat("bucket/graph/opened.bin") == fs.cat("bucket/graph/plain.bin")
    assert len(sent) >= 4
    for blob in sent:
        assert passphrase not in blob
        assert SECRET.encode() not in blob
        assert b"moto-access-key" not in blob


def test_file_objects_in_and_out(tmp_path: Path) -> None:
    key = os.urandom(16)
    plain = _random(100_000, 16)
    sealed = io.BytesIO()
    assert parcrypt.encrypt_file(io.BytesIO(plain), sealed, key=key) == len(plain)
    (tmp_path / "s.pc").write_bytes(sealed.getvalue())
    assert parcrypt.decrypt_file(tmp_path / "s.pc", tmp_path / "p", key=key) == len(plain)
    assert (tmp_path / "p").read_bytes() == plain
    opened = io.BytesIO()
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.decrypt_file(io.BytesIO(sealed.getvalue()[:-1]), opened, key=key)
    assert opened.getvalue() == b""  # nothing written to a file object on failure


# ---- a server that enforces IAM: a reader that may not write --------------------------------

_POLICY_ALL = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}'
_POLICY_READ = (
    '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": '
    '["s3:GetObject", "s3:ListBucket"], "Resource": "*"}]}'
)


@pytest.fixture(scope="module")
def iam_server() -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """A second moto server (its own process) that checks every request against IAM after
    the 6 that make two users: a writer (s3:*) and a reader (s3:GetObject, s3:ListBucket).
    Yields the writer's and the reader's storage options."""
    boto3 = pytest.importorskip("boto3", reason="SKIPPED: boto3 not installed")
    port = _free_port()
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="6")
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail("moto's server did not start")
                time.sleep(0.1)
        endpoint = f"http://127.0.0.1:{port}"
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
        users = {}
        for name, policy in (("writer", _POLICY_ALL), ("reader", _POLICY_READ)):
            iam.create_user(UserName=name)
            access = iam.create_access_key(UserName=name)["AccessKey"]
            iam.put_user_policy(UserName=name, PolicyName="s3", PolicyDocument=policy)
            users[name] = {
                "key": access["AccessKeyId"], "secret": access["SecretAccessKey"],
                "use_listings_cache": False, "skip_instance_cache": True,
                "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
                "config_kwargs": {"retries": {"max_attempts": 2}},
            }
        yield users["writer"], users["reader"]
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_no_permission_is_a_clear_error_and_publishes_nothing(iam_server: tuple[dict[str, Any], dict[str, Any]]) -> None:
    writer, reader = iam_server
    store = s3fs.S3FileSystem(**writer)
    store.call_s3("create_bucket", Bucket="locked")
    store.pipe("locked/plain.bin", _random(6 * MIB, 21))
    key = os.urandom(16)
    # The reader may read but not write: the client's own upload is refused.
    with pytest.raises(PermissionError):
        parcrypt.encrypt_file("s3://locked/plain.bin", "s3://locked/single.pc", key=key, storage_options=reader)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, Client(cluster) as other:
        pdask.register_storage_options(other, reader)
        with pytest.raises(PermissionError):
            pdask.encrypt_large("s3://locked/plain.bin", "s3://locked/sealed.pc", key=key, client=other, storage_options=reader)
        # The client may write, its workers may not: every part is refused, the upload aborted.
        with pytest.raises(pdask.DaskJobError, match="(?i)denied|PermissionError"):
            pdask.encrypt_large("s3://locked/plain.bin", "s3://locked/sealed.pc", key=key, client=other, chunks_per_task=320, storage_options=writer)
        reports = pdask.encrypt_files(["s3://locked/plain.bin"], "s3://locked/files", key=key, client=other, storage_options=writer)
        assert not reports[0].ok and "PermissionError" in (reports[0].error or "")
    for name in ("single.pc", "sealed.pc", "files/plain.bin.parcrypt"):
        assert not store.exists(f"locked/{name}")
    assert _pending_uploads(store, "locked") == []


@pytest.mark.parametrize("plaintext", [0, 1, 5 * MIB, 5 * MIB + 1, 10 * 1024**3, 200 * 1024**3, 48 * 1024**4])
@pytest.mark.parametrize("asked", [1, 320, 4096, 10**9])
def test_part_ranges_keep_s3s_limits(plaintext: int, asked: int) -> None:
    """Whatever chunks_per_task asks: 1 to 10,000 parts covering every chunk once, each at
    least 5 MiB but the last and at most 5 GiB, the envelope's part included."""
    from parcrypt import _store

    plan = parts.PartPlan(envelope_bytes=150, plaintext_bytes=plaintext, part_keys=b"")
    ranges = _store.part_ranges(plan, asked)
    assert 1 <= len(ranges) <= 10_000
    assert ranges[0][0] == 0 and ranges[-1][1] == plan.chunks
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    for index, (first, end) in enumerate(ranges):
        start, stop = _store.sealed_span(plan, first, end, envelope=True)
        assert stop - start <= 5 * 1024**3
        if index < len(ranges) - 1:
            low, high = _store.plain_span(plan, first, end)
            assert high - low >= 5 * MIB


def test_an_object_too_large_for_one_upload_is_refused() -> None:
    from parcrypt import _store

    plan = parts.PartPlan(envelope_bytes=150, plaintext_bytes=60 * 1024**4, part_keys=b"")
    with pytest.raises(ValueError, match="10,000 parts"):
        _store.part_ranges(plan, 4096)


def test_other_fsspec_stores_take_whole_objects_and_ranges(tmp_path: Path) -> None:
    """A store that is not S3 (fsspec's memory://, on a cluster of threads, which share it):
    whole objects through encrypt_files/decrypt_files, ranges through decrypt_range, with the
    version check of stores without If-Match."""
    import fsspec

    memory = fsspec.filesystem("memory")
    plain = _random(3 * MIB + 11, 31)
    memory.pipe("/h35/in/a.bin", plain)
    key = os.urandom(16)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as cluster, Client(cluster) as local:
        reports = pdask.encrypt_files("memory://h35/in/*.bin", "memory://h35/sealed", key=key, client=local)
        assert [r.ok for r in reports] == [True], reports
        sealed = memory.cat("/h35/sealed/a.bin.parcrypt")
        (tmp_path / "a.pc").write_bytes(sealed)
        parcrypt.decrypt_file(tmp_path / "a.pc", tmp_path / "a.bin", key=key)
        assert (tmp_path / "a.bin").read_bytes() == plain
        got = pdask.decrypt_range("memory://h35/sealed/a.bin.parcrypt", MIB, 3 * MIB + 11, key=key, client=local, bytes_per_task=MIB)
        assert got == plain[MIB:]
        reports = pdask.decrypt_files(["memory://h35/sealed/a.bin.parcrypt"], "memory://h35/opened", key=key, client=local)
        assert reports[0].ok and memory.cat("/h35/opened/a.bin") == plain
        with pytest.raises(ValueError, match="S3-compatible"):
            pdask.encrypt_large("memory://h35/in/a.bin", "memory://h35/large.pc", key=key, client=local)
    memory.rm("/h35", recursive=True)
