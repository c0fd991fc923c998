"""Buffers in and out without copies, and every refusal as the right exception."""

from __future__ import annotations

import ctypes
import mmap
import os

import numpy as np
import pytest

import parcrypt

KEY, IV = bytes(range(16)), bytes(range(16, 32))


def reference(data: bytes, suite: str = "aes-128-ctr") -> bytes:
    return parcrypt.Cipher(suite, KEY, IV if not suite.endswith("gcm") else IV[:12], backend="seq").encrypt(bytes(data))


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64, np.complex128])
def test_numpy_any_dtype_in_and_uint8_out(dtype) -> None:
    array = (np.arange(10_000) * 3).astype(dtype)
    result = parcrypt.Cipher("aes-128-ctr", KEY, IV).encrypt(array)
    assert isinstance(result, np.ndarray) and result.dtype == np.uint8
    assert result.tobytes() == reference(array.tobytes())
    back = parcrypt.Cipher("aes-128-ctr", KEY, IV).decrypt(result)
    assert np.array_equal(back.view(dtype), array)


def test_bytearray_memoryview_mmap() -> None:
    data = os.urandom(123_457)
    expected = reference(data)
    # One keyed cipher, the IV given per message: a Cipher's own IV encrypts one message.
    cipher = parcrypt.Cipher("aes-128-ctr", KEY)
    assert cipher.encrypt(bytearray(data), iv=IV) == expected
    assert cipher.encrypt(memoryview(data), iv=IV) == expected
    assert cipher.encrypt(memoryview(b"xx" + data)[2:], iv=IV) == expected
    with mmap.mmap(-1, len(data)) as mapped:
        mapped.write(data)
        assert cipher.encrypt(mapped, iv=IV) == expected
        # In place in the mapping.
        assert cipher.encrypt(mapped, out=mapped, iv=IV) == len(data)
        assert mapped[:] == expected


def test_out_receives_bytes_at_the_same_address() -> None:
    data = np.frombuffer(os.urandom(1 << 20), dtype=np.uint8).copy()
    expected = reference(data.tobytes())
    out = np.empty(len(data), dtype=np.uint8)
    address = out.__array_interface__["data"][0]
    assert parcrypt.Cipher("aes-128-ctr", KEY, IV).encrypt(data, out=out) == len(data)
    assert out.__array_interface__["data"][0] == address
    assert out.tobytes() == expected

    # In place: data is out.
    address = data.__array_interface__["data"][0]
    assert parcrypt.Cipher("aes-128-ctr", KEY, IV).encrypt(data, out=data) == len(data)
    assert data.__array_interface__["data"][0] == address
    assert data.tobytes() == expected


def test_in_place_gcm_with_room_for_the_tag_and_ctypes_buffer() -> None:
    message = os.urandom(50_000)
    room = bytearray(message) + bytearray(16)
    cipher = parcrypt.Cipher("aes-128-gcm", KEY, IV[:12])
    view = memoryview(room)
    written = cipher.encrypt(view[: len(message)], out=view)
    assert written == len(message) + 16 and bytes(room) == reference(message, "aes-128-gcm")
    assert cipher.decrypt(view, out=view) == len(message)
    assert bytes(room[: len(message)]) == message

    raw = (ctypes.c_ubyte * 4096)()
    address = ctypes.addressof(raw)
    assert parcrypt.Cipher("aes-128-ctr", KEY, IV).encrypt(b"\x01" * 4096, out=raw) == 4096
    assert ctypes.addressof(raw) == address and bytes(raw) == reference(b"\x01" * 4096)


def test_padded_modes_round_trip_with_out() -> None:
    for suite, iv in (("aes-256-cbc", IV), ("bf-ecb", None), ("rc6-128-cbc", IV)):
        key = KEY * 2 if suite.startswith("aes-256") else KEY
        cipher = parcrypt.Cipher(suite, key, iv)
        data = os.urandom(1000)
        out = bytearray(cipher.output_length(len(data)))
        written = cipher.encrypt(data, out=out)
        assert bytes(out[:written]) == parcrypt.Cipher(suite, key, iv).encrypt(data)
        plain = bytearray(written)
        assert plain[: cipher.decrypt(out[:written], out=plain)] == data


class HostDlpack:
    """A CPU array that offers only DLPack (like a PyTorch CPU tensor)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class CudaDlpack:
    """What a CuPy or PyTorch array on a GPU says about itself."""

    def __dlpack__(self, **kwargs):
        raise AssertionError("parcrypt must not ask a device array for its data here")

    def __dlpack_device__(self):
        return (2, 0)


def test_cpu_dlpack_object_is_read_without_the_buffer_protocol() -> None:
    array = np.arange(4096, dtype=np.int32)
    result = parcrypt.Cipher("aes-128-ctr", KEY, IV).encrypt(HostDlpack(array))
    assert isinstance(result, np.ndarray) and result.tobytes() == reference(array.tobytes())


def test_cuda_array_without_gpu_says_why() -> None:
    if any(row["name"] == "cuda" and row["available"] for row in parcrypt.backends()):
        pytest.skip("SKIPPED: this machine has a CUDA device (tests/test_gpu_arrays.py covers it)")
    with pytest.raises(parcrypt.Error, match="CUDA device #0.*(no CUDA|unavailable)"):
        parcrypt.Cipher("aes-128-ctr", KEY, IV).encrypt(CudaDlpack())


def test_refusals_are_exceptions_not_panics() -> None:
    with pytest.raises(ValueError, match="key"):
        parcrypt.Cipher("aes-128-ctr", b"short", IV)
    with pytest.raises(ValueError, match="IV"):
        parcrypt.Cipher("aes-128-ctr", KEY, b"short")
    # A Cipher without an IV is keyed for messages that bring theirs (iv=); one without is refused.
    with pytest.raises(ValueError, match="needs an IV"):
        parcrypt.Cipher("aes-128-cbc", KEY).encrypt(b"data")
    with pytest.raises(ValueError):
        parcrypt.Cipher("aes-128-ecb", KEY, IV)
    with pytest.raises(ValueError):
        parcrypt.Cipher("des-ecb", KEY)
    with pytest.raises(ValueError):
        parcrypt.Cipher("aes-128-ctr", KEY, IV, backend="quantum")
    with pytest.raises(ValueError):
        parcrypt.Cipher("aes-128-ctr", KEY, IV, threads=0)
    with pytest.raises(TypeError, match="bytes.fromhex"):
        parcrypt.Cipher("aes-128-ctr", "not hex", IV)  # a key is bytes, never text
    cipher = parcrypt.Cipher("aes-128-ctr", KEY, IV)
    with pytest.raises(TypeError):
        cipher.encrypt("text")
    with pytest.raises(TypeError):
        cipher.encrypt(12)
    with pytest.raises(TypeError):
        cipher.encrypt(b"abc", out=b"xyz")  # read-only
    with pytest.raises(ValueError):
        cipher.encrypt(b"abcdef", out=bytearray(3))
    with pytest.raises(ValueError):
        cipher.encrypt(np.zeros((64, 64), dtype=np.uint8)[:, ::2])  # not contiguous
    with pytest.raises(ValueError, match="only for GCM"):
        cipher.encrypt(b"abc", b"aad")
    with pytest.raises(ValueError):
        parcrypt.Cipher("aes-128-gcm", KEY, IV[:12]).decrypt(b"short")
    with pytest.raises(ValueError):
        parcrypt.Cipher("aes-128-ecb", KEY, padding=False).encrypt(b"fifteen bytes!!")
    with pytest.raises(parcrypt.Error):
        parcrypt.Cipher("aes-128-cbc", KEY, IV).decrypt(os.urandom(32))  # bad padding (most likely)
    with pytest.raises(ValueError):
        cipher.output_length(2**63)
    with pytest.raises(OverflowError):
        cipher.output_length(2**64)
    data = bytearray(64)
    with pytest.raises(ValueError, match="overlaps"):
        cipher.encrypt(memoryview(data)[:32], out=memoryview(data)[8:48])
