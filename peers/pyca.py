"""One harness of `parcrypt-lab --peers` (protocol: peers/README.md): pyca/cryptography.

    python3 pyca.py CIPHER DIRECTION BYTES THREADS RUNS MIN_SECONDS

GCM uses AESGCM (keyed once; its encrypt_into/decrypt_into take a fresh nonce per message
and write into a buffer made before timing). CTR has no keyed object that takes a new IV in
pyca's API, so each message builds Cipher(AES(key), CTR(iv)).encryptor() (which expands the
key) and runs update_into + finalize: the cost a pyca user pays. Python threads share one
interpreter lock, so THREADS > 1 runs that many processes (forked, each with its own
buffers), released together by a barrier; the wall time covers them all.
"""
import json
import multiprocessing
import sys
import time

import cryptography
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

TAG = 16


def fail(message, code=1):
    sys.stderr.write(f"error: {message}\n")
    sys.exit(code)


class Job:
    def __init__(self, cipher, encrypt, size, key):
        self.gcm = cipher.endswith("gcm")
        self.encrypt = encrypt
        self.size = size
        self.key = key
        self.aead = AESGCM(key) if self.gcm else None
        self.aes = None if self.gcm else algorithms.AES(key)

    def message(self, iv, data, out):
        """One message from data into out (a bytearray); raises on a bad tag."""
        if self.gcm:
            if self.encrypt:
                self.aead.encrypt_into(iv, data, None, out)
            else:
                self.aead.decrypt_into(iv, data, None, out)
        else:
            context = Cipher(self.aes, modes.CTR(iv)).encryptor()
            context.update_into(data, out)
            context.finalize()


def known_answer(cipher, key_bytes):
    """NIST GCM test cases 2 and 14; SP 800-38A F.5.1 and F.5.5 (first block)."""
    if cipher.endswith("gcm"):
        key, iv, plain = bytes(key_bytes), bytes(12), bytes(16)
        expected = bytes.fromhex(
            "0388dace60b6a392f328c2b971b2fe78ab6e47d42cec13bdf53a67b21257bddf"
            if key_bytes == 16
            else "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919"
        )
    else:
        key = bytes.fromhex(
            "2b7e151628aed2a6abf7158809cf4f3c"
            if key_bytes == 16
            else "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4"
        )
        iv = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
        plain = bytes.fromhex("6bc1bee22e409f96e93d7e117393172a")
        expected = bytes.fromhex(
            "874d6191b620e3261bef6864990db6ce" if key_bytes == 16 else "601ec313775789a5b7a7f504bbf3d228"
        )
    encrypting = Job(cipher, True, 16, key)
    out = bytearray(len(expected) if encrypting.gcm else 16 + 15)
    encrypting.message(iv, plain, out)
    if bytes(out[: len(expected)]) != expected:
        return False
    decrypting = Job(cipher, False, 16, key)
    back = bytearray(16 if decrypting.gcm else 16 + 15)
    try:
        decrypting.message(iv, expected, back)
    except Exception:
        return False
    return bytes(back[:16]) == plain


def buffers(job, fixed_iv):
    """The input (plaintext, or a valid ciphertext and tag) and output, written now."""
    plain = bytes((i * 31) & 0xFF for i in range(256)) * (job.size // 256 + 1)
    plain = plain[: job.size]
    if job.gcm and not job.encrypt:
        data = AESGCM(job.key).encrypt(fixed_iv, plain, None)
        out = bytearray(b"\x11" * job.size)
    else:
        data = plain
        # AESGCM.encrypt_into wants room for the tag; CTR's update_into for a block more.
        out = bytearray(b"\x11" * (job.size + (TAG if job.gcm else 15)))
    return memoryview(data), out


def messages(job, thread, data, out, fixed_iv, count):
    vary = job.encrypt or not job.gcm
    iv = bytearray(fixed_iv)
    for index in range(count):
        if vary:
            iv[0] = thread
            iv[4:12] = index.to_bytes(8, "big")
        job.message(bytes(iv), data, out)


def worker(job, thread, fixed_iv, start, done, count):
    try:
        data, out = buffers(job, fixed_iv)
        while True:
            start.wait()
            if count.value == 0:
                return
            messages(job, thread, data, out, fixed_iv, count.value)
            done.wait()
    except Exception as error:  # a bad tag, or anything else: the parent stops too
        sys.stderr.write(f"error: {error}\n")
        start.abort()
        done.abort()


def main():
    args = sys.argv[1:]
    if len(args) != 6:
        fail("usage: pyca.py CIPHER DIRECTION BYTES THREADS RUNS MIN_SECONDS")
    cipher, direction = args[0], args[1]
    sizes = {"aes-128-gcm": 16, "aes-256-gcm": 32, "aes-128-ctr": 16, "aes-256-ctr": 32}
    if cipher not in sizes:
        fail(f"unknown cipher {cipher}")
    if direction not in ("encrypt", "decrypt"):
        fail(f"unknown direction {direction}")
    try:
        size, threads, runs = int(args[2]), max(1, int(args[3])), max(1, int(args[4]))
        min_seconds = float(args[5])
    except ValueError:
        fail("BYTES, THREADS, RUNS and MIN_SECONDS are numbers")
    key_bytes = sizes[cipher]
    if not known_answer(cipher, key_bytes):
        fail("known-answer test failed", 2)
    job = Job(cipher, direction == "encrypt", size, bytes(range(key_bytes)))
    fixed_iv = bytes([0x5A] * (12 if job.gcm else 16))

    if threads == 1:
        data, out = buffers(job, fixed_iv)

        def run(count):
            start = time.perf_counter()
            messages(job, 0, data, out, fixed_iv, count)
            return time.perf_counter() - start

        stop = lambda: None
    else:
        context = multiprocessing.get_context("fork")
        start_line = context.Barrier(threads + 1)
        finish_line = context.Barrier(threads + 1)
        shared = context.Value("q", 0, lock=False)
        workers = [
            context.Process(target=worker, args=(job, t, fixed_iv, start_line, finish_line, shared))
            for t in range(threads)
        ]
        for process in workers:
            process.start()

        def run(count):
            shared.value = count
            try:
                start_line.wait()
                start = time.perf_counter()
                finish_line.wait()
            except Exception:
                for process in workers:
                    process.kill()
                fail("a worker failed")
            return time.perf_counter() - start

        def stop():
            shared.value = 0
            start_line.wait()
            for process in workers:
                process.join()

    count = 1
    while run(count) < min_seconds:
        count *= 2
    seconds = [run(count) for _ in range(runs)]
    stop()
    print(
        json.dumps(
            {
                "peer": "pyca",
                "library": f"cryptography {cryptography.__version__}",
                "cipher": cipher,
                "direction": direction,
                "bytes": size,
                "threads": threads,
                "messages": count,
                "seconds": [round(s, 9) for s in seconds],
            },
            separators=(",", ":"),
        )
    )


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # one line, never a traceback
        fail(f"{type(error).__name__}: {error}")
