#!/usr/bin/env bash
# Builds, on a machine with Rust, what a GPU machine without Rust needs to check parcrypt's
# CUDA paths: the release binaries (parcrypt and the benchmark lab, parcrypt-lab), the GPU
# test executables and the CUDA speed example, all stripped, into target/gpu-kit. Carry that
# folder to the GPU machine and run scripts/gpu-verify.sh there (see its header).
set -euo pipefail
cd "$(dirname "$0")/.."
kit=target/gpu-kit
rm -rf "$kit"
mkdir -p "$kit/tests"

cargo build --release --bin parcrypt
cargo build --release -p parcrypt-lab
cargo build --release -p parcrypt-gpu --example cuda_speed --example chunk_calls
cargo build --release -p parcrypt-format --example batch_speed
cp target/release/parcrypt target/release/parcrypt-lab target/release/examples/cuda_speed target/release/examples/chunk_calls \
    target/release/examples/batch_speed "$kit/"

# Test executables: CUDA against the CPU, the engine with every backend (CUDA included when
# present), the official vectors and the differential suite through every engine.
tests=(
    "-p parcrypt-gpu --test cuda_vs_cpu"
    "-p parcrypt-gpu --test zero_copy"
    "-p parcrypt-gpu --test cuda_foreign"
    "-p parcrypt-engine --test tuned_gpu"
    "-p parcrypt-format --test round_trip"
    "-p parcrypt-cli --test official_vectors"
    "-p parcrypt-cli --test differential"
)
for selection in "${tests[@]}"; do
    # shellcheck disable=SC2086
    cargo test --release $selection --no-run --message-format=json 2>/dev/null |
        python3 -c '
import json, shutil, sys, os
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message.get("executable") and message["profile"]["test"]:
        name = message["target"]["name"]
        shutil.copy(message["executable"], os.path.join(sys.argv[1], name))
        print("kit:", name)
' "$kit/tests"
done
# The Python package: the wheel (as scripts/python-test.sh builds it), its tests and benchmark.
if PARCRYPT_PYTHON_BUILD_ONLY=1 bash scripts/python-test.sh; then
    mkdir -p "$kit/python"
    cp target/python/wheels/parcrypt-*.whl python/bench.py python/bench_gpu.py "$kit/python/"
    cp -r python/tests "$kit/python/tests"
else
    echo "gpu-kit: the Python wheel did not build; the kit has no python/ stage" >&2
fi
strip "$kit"/parcrypt "$kit"/parcrypt-lab "$kit"/cuda_speed "$kit"/chunk_calls "$kit"/batch_speed "$kit"/tests/*
# The tests find their data files through the path they were built at.
pwd > "$kit/built-at"
du -sh "$kit"
