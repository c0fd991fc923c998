#!/usr/bin/env bash
# The whole test suite: every crate's unit tests, the official vectors, the differential
# tests against OpenSSL / pyca / RustCrypto, and the command-line tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --all-targets "$@"
