#!/usr/bin/env bash
# The whole test suite: every crate's unit tests, the official vectors, the differential
# tests against OpenSSL / pyca / RustCrypto, the OpenCL kernels (on PoCL when there is no
# GPU), the CUDA kernels' NVRTC compile check, and the command-line tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# NVRTC from PyPI (nvidia-cuda-nvrtc) keeps its libraries inside the Python package.
nvrtc_lib="$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "lib"))' 2>/dev/null || true)"
if [ -n "$nvrtc_lib" ] && [ -d "$nvrtc_lib" ]; then
    export LD_LIBRARY_PATH="$nvrtc_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# The house stays clean by machine: formatting, lints as errors, documentation without warnings.
echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== cargo doc -D warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
echo "== cargo test"
cargo test --workspace --all-targets "$@"
