#!/usr/bin/env bash
# parcrypt's main job: build parcrypt and its benchmark lab, then list the backends, run
# `parcrypt bench` (every backend checked against seq, then timed: parcrypt's own speed
# table) and the lab (the same work next to OpenSSL and the raw memory pass, in the same run).
#
#   scripts/main-job.sh [--quick] [parcrypt-lab options]
#
# --quick makes both runs short; every argument goes to `parcrypt-lab` (see
# `parcrypt-lab --help`). The first build takes several minutes; the runs after it about a
# minute with --quick.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p parcrypt-cli -p parcrypt-lab --bin parcrypt --bin parcrypt-lab
# Wherever cargo puts its output (CARGO_TARGET_DIR, a config file, the default ./target).
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
parcrypt="$target_dir/release/parcrypt"
lab="$target_dir/release/parcrypt-lab"
bench_args=()
for argument in "$@"; do
    if [ "$argument" = "--quick" ]; then
        bench_args+=(--quick)
    fi
done
"$parcrypt" devices
"$parcrypt" bench ${bench_args[@]+"${bench_args[@]}"}
echo
"$lab" "$@"
