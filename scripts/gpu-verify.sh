#!/usr/bin/env bash
# Runs parcrypt's GPU checks on a machine with an NVIDIA GPU and no Rust, from the kit that
# scripts/gpu-kit.sh built (target/gpu-kit), writing logs to $OUT (default /tmp/parcrypt-gpu):
#   tests   every CUDA test executable (CUDA against the CPU, zero-copy, the engine, the
#           official vectors and the differential suite through every engine)
#   speed   the CUDA speed example: data on the GPU (events) and pinned host -> GPU -> host
#           against the pinned copy rate of the same run
#   tune    `parcrypt tune --backend cuda` (add --full through TUNE_ARGS)
#   files   a 4 GiB file in /dev/shm through `parcrypt encrypt|decrypt --stats` on cuda and
#           pool: the file path's rate and where its time goes (read, cipher, write)
#   python  the Python wheel on this machine's Python: its pytest suite, CuPy/PyTorch arrays
#           included (tests/test_gpu_arrays.py; skipped with the reason when neither is there)
#   bench   the benchmark lab with the CUDA backend (docs/results/h200 is made from it)
# Stages are named on the command line; default: tests speed. At most 8 files come back from
# a device call's $OUT: run `bench` (4 result files) in a call of its own.
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
        (
            failed=0
            nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
            "$kit/parcrypt" devices
            for test in "$kit"/tests/*; do
                echo "=== $(basename "$test")"
                # A test that can skip for want of a device must find one here.
                PARCRYPT_REQUIRE_GPU=1 "$test" --include-ignored --test-threads 2 || failed=1
            done
            exit $failed
        ) 2>&1 | tee "$out/tests.log" || status=1
        ;;
    python)
        # The Python package on this machine's Python (CuPy and PyTorch from its site
        # packages): every CPU test, and the CUDA array tests (tests/test_gpu_arrays.py).
        (
            [ -d "$kit/python" ] || { echo "no python/ in the kit (scripts/gpu-kit.sh builds it)"; exit 1; }
            venv="$out/python-venv"
            rm -rf "$venv"
            python3 -m venv --system-site-packages "$venv" &&
                "$venv/bin/pip" install --quiet --no-deps --no-index "$kit"/python/parcrypt-*.whl &&
                cd "$(mktemp -d)" &&
                PARCRYPT_BIN="$OLDPWD/$kit/parcrypt" "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider \
                    "$OLDPWD/$kit/python/tests" &&
                "$venv/bin/python" "$OLDPWD/$kit/python/bench_gpu.py"
        ) 2>&1 | tee "$out/python.log" || status=1
        ;;
    speed)
        "$kit/cuda_speed" 0 1024 7 2>&1 | tee "$out/speed.log" || status=1
        ;;
    tune)
        # shellcheck disable=SC2086
        PARCRYPT_TUNE_DIR="$out/tune" "$kit/parcrypt" tune --backend cuda ${TUNE_ARGS:-} 2>&1 |
            tee "$out/tune.log" || status=1
        ;;
    files)
        (
            failed=0
            key=000102030405060708090a0b0c0d0e0f
            file=/dev/shm/parcrypt-gpu-verify.bin
            head -c $((4 << 30)) /dev/urandom >"$file"
            for backend in cuda pool cuda pool; do
                "$kit/parcrypt" encrypt -q --stats --format cobblestone --key $key \
                    --backend $backend "$file" -o "$file.cb" --force || failed=1
                "$kit/parcrypt" decrypt -q --stats --format cobblestone --key $key \
                    --backend $backend "$file.cb" -o "$file.out" --force || failed=1
                cmp "$file" "$file.out" || failed=1
                rm -f "$file.cb" "$file.out"
            done
            rm -f "$file"
            exit $failed
        ) 2>&1 | tee "$out/files.log" || status=1
        ;;
    bench)
        # shellcheck disable=SC2086
        PARCRYPT_TUNE_DIR="$out/tune" "$kit/parcrypt" bench --scenario all \
            --output "$out/bench" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench.log" || status=1
        ;;
    *)
        echo "unknown stage '$stage' (tests, speed, tune, files, bench)" >&2
        exit 2
        ;;
    esac
done
exit $status
