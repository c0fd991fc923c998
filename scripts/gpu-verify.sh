#!/usr/bin/env bash
# Runs parcrypt's GPU checks on a machine with an NVIDIA GPU and no Rust, from the kit that
# scripts/gpu-kit.sh built (target/gpu-kit), writing logs to $OUT (default /tmp/parcrypt-gpu):
#   tests   every CUDA test executable (CUDA against the CPU, zero-copy, the engine, the
#           official vectors and the differential suite through every engine)
#   speed   the CUDA speed example: data on the GPU (events) and pinned host -> GPU -> host
#           against the pinned copy rate of the same run
#   tune    `parcrypt tune --backend cuda` (add --full through TUNE_ARGS)
#   bench   the benchmark lab with the CUDA backend (docs/results/h200 is made from it)
# Stages are named on the command line; default: tests speed.
set -uo pipefail
cd "$(dirname "$0")/.."
kit=target/gpu-kit
out=${OUT:-/tmp/parcrypt-gpu}
mkdir -p "$out"
[ -x "$kit/parcrypt" ] || { echo "no kit: run scripts/gpu-kit.sh where Rust is, and carry target/gpu-kit" >&2; exit 2; }

# Test data is found through the path the tests were built at.
built_at=$(cat "$kit/built-at")
if [ "$built_at" != "$PWD" ] && [ ! -e "$built_at" ]; then
    mkdir -p "$(dirname "$built_at")" && ln -s "$PWD" "$built_at"
fi
# NVRTC: the CUDA toolkit's, else the pip wheel's.
for directory in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
    "$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "lib"))' 2>/dev/null)"; do
    if [ -n "$directory" ] && [ -d "$directory" ]; then
        LD_LIBRARY_PATH="$directory${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
done
export LD_LIBRARY_PATH

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(tests speed)
status=0
for stage in "${stages[@]}"; do
    case "$stage" in
    tests)
        {
            nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
            "$kit/parcrypt" devices
            for test in "$kit"/tests/*; do
                echo "=== $(basename "$test")"
                "$test" --include-ignored --test-threads 2 || status=1
            done
        } 2>&1 | tee "$out/tests.log"
        ;;
    speed)
        "$kit/cuda_speed" 0 1024 7 2>&1 | tee "$out/speed.log" || status=1
        ;;
    tune)
        # shellcheck disable=SC2086
        PARCRYPT_TUNE_DIR="$out/tune" "$kit/parcrypt" tune --backend cuda ${TUNE_ARGS:-} 2>&1 |
            tee "$out/tune.log" || status=1
        ;;
    bench)
        # shellcheck disable=SC2086
        PARCRYPT_TUNE_DIR="$out/tune" "$kit/parcrypt" bench --scenario all \
            --output "$out/bench" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench.log" || status=1
        ;;
    *)
        echo "unknown stage '$stage' (tests, speed, tune, bench)" >&2
        exit 2
        ;;
    esac
done
exit $status
