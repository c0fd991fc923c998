#!/usr/bin/env bash
# parcrypt's main job: build, then encrypt and decrypt generated data on every backend this
# machine has, check every backend against seq, and print the speed table (with OpenSSL).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
./target/release/parcrypt devices
./target/release/parcrypt bench "$@"
