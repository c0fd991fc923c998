"""Arrays on a CUDA device (CuPy, PyTorch) encrypted on the device through DLPack.

The device tests need CuPy or PyTorch with a CUDA device and run in the GPU kit's python
stage (scripts/gpu-verify.sh); elsewhere they are skipped with the reason. Without a GPU, a
CUDA array (here a stand-in object that only speaks DLPack) gets a parcrypt.Error saying why.

Semantics checked: the bytes equal the CPU path's for every suite and mode the device runs
(ECB and CBC with padding=False, CBC decryption only; CTR; GCM with the tag appended on the
device); out= writes into the caller's device array, in place when it is data itself, at the
same device address; a result without out= is a parcrypt.DeviceArray on the input's device;
a GCM message that fails its tag raises InvalidTag and leaves out= untouched.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import parcrypt

try:
    import cupy
except Exception:  # not installed, or no CUDA
    cupy = None
try:
    import torch
except Exception:
    torch = None


def _cupy_devices() -> int:
    try:
        return cupy.cuda.runtime.getDeviceCount() if cupy is not None else 0
    except Exception:
        return 0


CUDA_HERE = any(row["name"] == "cuda" and row["available"] for row in parcrypt.backends())
HAVE_CUPY = _cupy_devices() > 0
HAVE_TORCH = torch is not None and torch.cuda.is_available()

needs_device = pytest.mark.skipif(
    not (HAVE_CUPY or HAVE_TORCH),
    reason="SKIPPED: needs CuPy or PyTorch with a CUDA device (scripts/gpu-verify.sh python runs it on a GPU machine)",
)

LIBRARIES = [
    pytest.param("cupy", marks=pytest.mark.skipif(not HAVE_CUPY, reason="SKIPPED: no CuPy with a CUDA device")),
    pytest.param("torch", marks=pytest.mark.skipif(not HAVE_TORCH, reason="SKIPPED: no PyTorch with a CUDA device")),
]

SUITES = (
    [f"aes-{bits}-{mode}" for bits in (128, 192, 256) for mode in ("ecb", "cbc", "ctr", "gcm")]
    + ["bf-ecb", "bf-cbc", "bf-ctr"]
    + [f"rc6-{bits}-{mode}" for bits in (128, 192, 256) for mode in ("ecb", "cbc", "ctr", "gcm")]
)
SIZES = [0, 1, 15, 16, 17, (1 << 20) + 3]


def key_and_iv(suite: str) -> tuple[bytes, bytes | None, int]:
    algorithm, mode = suite.rsplit("-", 1)
    if algorithm == "bf":
        key, block = os.urandom(4 + os.urandom(1)[0] % 53), 8
    else:
        key, block = os.urandom(int(algorithm.split("-")[1]) // 8), 16
    if mode == "ecb":
        return key, None, block
    if mode == "gcm":
        return key, os.urandom(12), block
    return key, os.urandom(block), block


def to_device(library: str, host: np.ndarray):
    if library == "cupy":
        return cupy.asarray(host)
    return torch.from_numpy(host.copy()).cuda()


def to_host(library: str, array) -> np.ndarray:
    if isinstance(array, parcrypt.DeviceArray):
        array = cupy.from_dlpack(array) if library == "cupy" else torch.from_dlpack(array)
    if library == "cupy":
        return cupy.asnumpy(array)
    return array.cpu().numpy()


def address(library: str, array) -> int:
    return array.data.ptr if library == "cupy" else array.data_ptr()


def device_of(library: str, array) -> int:
    return array.device.id if library == "cupy" else array.device.index


def empty_like_bytes(library: str, length: int, fill: int = 0):
    if library == "cupy":
        return cupy.full(length, fill, dtype=cupy.uint8)
    return torch.full((length,), fill, dtype=torch.uint8, device="cuda")


class FakeCudaArray:
    """Speaks only DLPack and says it lives on CUDA device 0 (what a CuPy array says)."""

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)

    def __dlpack__(self, **_: object):
        raise AssertionError("parcrypt must not import an array it cannot encrypt")


@pytest.mark.skipif(CUDA_HERE, reason="SKIPPED: this machine has a CUDA device (the device tests run instead)")
def test_without_a_gpu_a_cuda_array_gets_the_reason() -> None:
    with pytest.raises(parcrypt.Error, match=r"CUDA device #0.*cannot encrypt it there"):
        parcrypt.Cipher("aes-128-ctr", bytes(16), bytes(16)).encrypt(FakeCudaArray())
    with pytest.raises(parcrypt.Error, match="CUDA device #0"):
        parcrypt.Cipher("aes-128-gcm", bytes(16), bytes(12)).decrypt(FakeCudaArray(), out=bytearray(16))


@needs_device
@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("suite", SUITES)
def test_every_suite_on_the_device_equals_the_cpu(library: str, suite: str, size: int) -> None:
    key, iv, block = key_and_iv(suite)
    mode = suite.rsplit("-", 1)[1]
    host = np.frombuffer(os.urandom(size), dtype=np.uint8).copy()
    aad = os.urandom(20) if mode == "gcm" else None
    cpu = parcrypt.Cipher(suite, key, iv, backend="seq", padding=False)
    gpu = parcrypt.Cipher(suite, key, iv, padding=False)
    if mode in ("ecb", "cbc") and size % block:
        with pytest.raises(ValueError):
            gpu.decrypt(to_device(library, host))
        return
    if mode == "cbc":
        # CBC encryption is serial: the device refuses it; it decrypts what the CPU made.
        with pytest.raises(parcrypt.Error, match="cannot run on a device"):
            gpu.encrypt(to_device(library, host))
        ciphertext = cpu.encrypt(host)
        opened = gpu.decrypt(to_device(library, ciphertext))
        assert np.array_equal(to_host(library, opened), host)
        return
    expected = cpu.encrypt(host, aad)
    array = to_device(library, host)
    sealed = gpu.encrypt(array, aad)
    assert isinstance(sealed, parcrypt.DeviceArray)
    assert sealed.__dlpack_device__() == (2, device_of(library, array))
    assert np.array_equal(to_host(library, sealed), expected), (library, suite, size)
    # The input is untouched, and the device decrypts its own result.
    assert np.array_equal(to_host(library, array), host)
    sealed_array = cupy.from_dlpack(sealed) if library == "cupy" else torch.from_dlpack(sealed)
    assert np.array_equal(to_host(library, gpu.decrypt(sealed_array, aad)), host)


@needs_device
@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("suite", ["aes-256-ctr", "aes-128-gcm", "bf-ecb", "rc6-128-ctr"])
def test_in_place_keeps_the_device_address(library: str, suite: str) -> None:
    key, iv, _ = key_and_iv(suite)
    size = (1 << 20) + 3 if not suite.endswith("ecb") else 1 << 20
    host = np.frombuffer(os.urandom(size), dtype=np.uint8).copy()
    expected = parcrypt.Cipher(suite, key, iv, backend="seq", padding=False).encrypt(host)
    gpu = parcrypt.Cipher(suite, key, iv, padding=False)
    if suite.endswith("gcm"):
        # GCM in place: data is the front of a buffer with room for the tag after it.
        buffer = to_device(library, np.concatenate([host, np.zeros(16, dtype=np.uint8)]))
        before = address(library, buffer)
        assert gpu.encrypt(buffer[:size], out=buffer) == size + 16
        assert address(library, buffer) == before
        assert np.array_equal(to_host(library, buffer), expected)
        assert gpu.decrypt(buffer, out=buffer) == size
        assert np.array_equal(to_host(library, buffer)[:size], host)
        return
    array = to_device(library, host)
    before = address(library, array)
    assert gpu.encrypt(array, out=array) == size
    assert address(library, array) == before
    assert np.array_equal(to_host(library, array), expected)
    assert gpu.decrypt(array, out=array) == size
    assert np.array_equal(to_host(library, array), host)


@needs_device
@pytest.mark.parametrize("library", LIBRARIES)
def test_out_receives_the_bytes_on_the_device(library: str) -> None:
    key, iv = os.urandom(16), os.urandom(16)
    host = np.frombuffer(os.urandom(100_003), dtype=np.uint8).copy()
    expected = parcrypt.Cipher("aes-128-ctr", key, iv, backend="seq").encrypt(host)
    out = empty_like_bytes(library, host.size + 5)
    before = address(library, out)
    assert parcrypt.Cipher("aes-128-ctr", key, iv).encrypt(to_device(library, host), out=out) == host.size
    assert address(library, out) == before
    assert np.array_equal(to_host(library, out)[: host.size], expected)
    # Arrays of other dtypes are their bytes.
    words = to_device(library, host[:100_000].view(np.int32))
    result = parcrypt.Cipher("aes-128-ctr", key, iv).encrypt(words)
    assert np.array_equal(to_host(library, result), expected[:100_000])
    with pytest.raises(ValueError):
        parcrypt.Cipher("aes-128-ctr", key, iv).encrypt(to_device(library, host), out=empty_like_bytes(library, 10))


@needs_device
@pytest.mark.parametrize("library", LIBRARIES)
def test_one_keyed_cipher_takes_an_iv_per_device_message(library: str) -> None:
    key = os.urandom(16)
    device_cipher = parcrypt.Cipher("aes-128-gcm", key)
    host_cipher = parcrypt.Cipher("aes-128-gcm", key, backend="seq")
    for size in (0, 17, 100_003):
        iv = os.urandom(12)
        host = np.frombuffer(os.urandom(size), dtype=np.uint8).copy()
        sealed = device_cipher.encrypt(to_device(library, host), b"head", iv=iv)
        assert np.array_equal(to_host(library, sealed), host_cipher.encrypt(host, b"head", iv=iv))
        opened = device_cipher.decrypt(to_device(library, to_host(library, sealed)), b"head", iv=iv)
        assert np.array_equal(to_host(library, opened), host)
    with pytest.raises(ValueError, match="needs an IV: give iv="):
        device_cipher.encrypt(to_device(library, np.zeros(16, dtype=np.uint8)))


@needs_device
@pytest.mark.parametrize("library", LIBRARIES)
def test_gcm_tamper_raises_and_releases_nothing(library: str) -> None:
    key, iv, aad = os.urandom(32), os.urandom(12), b"header"
    host = np.frombuffer(os.urandom(70_001), dtype=np.uint8).copy()
    sealed = parcrypt.Cipher("aes-256-gcm", key, iv, backend="seq").encrypt(host, aad)
    for position in (0, 35_000, sealed.size - 1):  # text and tag
        forged = sealed.copy()
        forged[position] ^= 1
        out = empty_like_bytes(library, host.size, fill=0xA5)
        with pytest.raises(parcrypt.InvalidTag):
            parcrypt.Cipher("aes-256-gcm", key, iv).decrypt(to_device(library, forged), aad, out=out)
        # Untouched: the tag is checked before anything is decrypted.
        assert (to_host(library, out) == 0xA5).all()
        in_place = to_device(library, forged)
        with pytest.raises(parcrypt.InvalidTag):
            parcrypt.Cipher("aes-256-gcm", key, iv).decrypt(in_place, aad, out=in_place)
        assert np.array_equal(to_host(library, in_place), forged)
    with pytest.raises(parcrypt.InvalidTag):
        parcrypt.Cipher("aes-256-gcm", key, iv).decrypt(to_device(library, sealed), b"other")


@needs_device
@pytest.mark.parametrize("library", LIBRARIES)
def test_non_contiguous_and_unsupported_arrays_are_refused(library: str) -> None:
    host = np.frombuffer(os.urandom(4096), dtype=np.uint8).copy()
    strided = to_device(library, host)[::2]
    with pytest.raises(ValueError, match="C-contiguous"):
        parcrypt.Cipher("aes-128-ctr", bytes(16), bytes(16)).encrypt(strided)
    with pytest.raises(parcrypt.Error, match="padding"):
        parcrypt.Cipher("aes-128-ecb", bytes(16)).encrypt(to_device(library, host))
    with pytest.raises(TypeError):
        parcrypt.Cipher("aes-128-ctr", bytes(16), bytes(16)).encrypt(to_device(library, host), out=bytearray(4096))


@needs_device
@pytest.mark.parametrize("library", LIBRARIES)
def test_device_arrays_are_freed(library: str) -> None:
    # 64 results of 16 MiB: kept alive they would take 1 GiB; freed they take one.
    key, iv = os.urandom(16), os.urandom(16)
    array = to_device(library, np.zeros(16 << 20, dtype=np.uint8))
    for _ in range(64):
        result = parcrypt.Cipher("aes-128-ctr", key, iv).encrypt(array)
        view = cupy.from_dlpack(result) if library == "cupy" else torch.from_dlpack(result)
        del result
        assert int(view[0]) >= 0
        del view
    assert len(parcrypt.Cipher("aes-128-ctr", key, iv).encrypt(array[:0])) == 0
