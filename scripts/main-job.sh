#!/usr/bin/env bash
# parcrypt's main job: build, then encrypt and decrypt generated data on every backend this
# machine has, check every backend against seq, and print the speed table (with OpenSSL).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin parcrypt
# Wherever cargo puts its output (CARGO_TARGET_DIR, a config file, the default ./target).
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
parcrypt="$target_dir/release/parcrypt"
"$parcrypt" devices
"$parcrypt" bench "$@"
