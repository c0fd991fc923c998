#!/usr/bin/env bash
# The stage_* functions run through `timeout bash -c` (run_stage), which shellcheck cannot see.
# shellcheck disable=SC2329
# Runs parcrypt's GPU checks on a machine with an NVIDIA GPU and no Rust, from the kit that
# scripts/gpu-kit.sh built (target/gpu-kit), writing logs to $OUT (default /tmp/parcrypt-gpu).
#
# Stage 0 always runs first and stops the script with one line starting "gpu-verify: stage 0:"
# (exit 3) when the machine is not what the kit needs: nvidia-smi, the driver, a GPU, NVRTC,
# the kit itself. It writes summary.txt: the GPU (name, SM count, clocks, driver) and the
# design's targets scaled from the H200 (132 SMs at 1980 MHz) by SM count x SM clock.
#
# Then the stages named on the command line, each under its own time limit (seconds, from
# the environment: SPEED_S, TESTS_S, NCU_S, SANITIZE_S, PYTHON_S, FILES_S, TUNE_S, BENCH_S),
# so that one device call always comes back with the figures of the stages that ran:
#   speed     the CUDA speed example: data on the GPU (events) and pinned host -> GPU -> host
#             against the pinned copy rate of the same run; each rate is held against its
#             scaled target in summary.txt
#   tests     every CUDA test executable with PARCRYPT_REQUIRE_GPU=1: a test that would skip
#             for want of a GPU fails instead
#   ncu       Nsight Compute on the table kernels (AES, Blowfish): shared-memory bank
#             conflicts must be zero (the per-lane table layout)
#   sanitize  compute-sanitizer memcheck over one small job per kernel, racecheck over
#             segmented CTR and GHASH
#   python    the Python wheel on this machine's Python: pytest, CuPy/PyTorch arrays (DLPack)
#   files     the file batches' device calls and host steps timed (chunk_calls, batch_speed),
#             then one 4 GiB file in /dev/shm through `parcrypt encrypt|decrypt --stats` on
#             cuda and pool (only that file is stored: round trips go through pipes)
#   tune      `parcrypt tune --backend cuda` (add --full through TUNE_ARGS)
#   bench     the benchmark lab (parcrypt-lab) with the CUDA backend (docs/results/h200 is
#             made from it)
# Default: speed tests ncu sanitize (the first device call, at most 150 + 220 + 90 + 100 s);
# then `gpu-verify.sh python files` (the second, at most 240 + 300 s). On an H100
# (2026-11-26) the stages took speed 11 s, tests 70 s, ncu 5 s, python 54 s, files 54 s:
# `gpu-verify.sh speed tests sanitize ncu python files` fits one device call.
# At most 8 files come back from a device call's $OUT: every stage writes one log there and
# keeps its scratch elsewhere; `bench` writes four result files more, so run it alone.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
kit=target/gpu-kit
out=${OUT:-/tmp/parcrypt-gpu}
scratch=${TMPDIR:-/tmp}/parcrypt-gpu-work
mkdir -p "$out" "$scratch"
summary="$out/summary.txt"

stop() {
    echo "gpu-verify: stage 0: $*" | tee -a "$summary" >&2
    exit 3
}

# ---------------------------------------------------------------------------------------
# Stage 0: is this the machine the kit needs?
: >"$summary"
command -v nvidia-smi >/dev/null 2>&1 || stop "no NVIDIA GPU here (nvidia-smi not found); run this on the GPU machine"
gpus="$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,memory.total \
    --format=csv,noheader 2>&1)" || stop "nvidia-smi failed: $(echo "$gpus" | head -1)"
count="$(printf '%s\n' "$gpus" | grep -c .)"
[ "$count" -ge 1 ] || stop "nvidia-smi lists no GPU"
# NVRTC: the CUDA toolkit's, else the pip wheel's.
for directory in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
    "$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "lib"))' 2>/dev/null)"; do
    if [ -n "$directory" ] && [ -d "$directory" ]; then
        LD_LIBRARY_PATH="$directory${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
done
export LD_LIBRARY_PATH
nvrtc_found=""
for directory in ${LD_LIBRARY_PATH//:/ }; do
    if compgen -G "$directory/libnvrtc.so*" >/dev/null; then
        nvrtc_found="$directory"
        break
    fi
done
[ -n "$nvrtc_found" ] || ldconfig -p 2>/dev/null | grep -q libnvrtc || stop "NVRTC not found (no libnvrtc.so in /usr/local/cuda or the nvidia-cuda-nvrtc wheel)"
[ -x "$kit/parcrypt" ] || stop "no kit in $kit: run scripts/gpu-kit.sh where Rust is, and carry target/gpu-kit"
# Test data is found through the path the tests were built at.
built_at=$(cat "$kit/built-at")
if [ "$built_at" != "$PWD" ] && [ ! -e "$built_at" ]; then
    mkdir -p "$(dirname "$built_at")" && ln -s "$PWD" "$built_at"
fi
devices="$(timeout 60 "$kit/parcrypt" devices 2>&1)" || stop "parcrypt devices failed: $(echo "$devices" | tail -1)"
cuda_line="$(printf '%s\n' "$devices" | grep -m1 'CUDA, compute capability')" ||
    stop "the driver sees no CUDA GPU (parcrypt devices: $(printf '%s' "$devices" | tr '\n' ' ' | cut -c1-200))"
sms="$(printf '%s\n' "$cuda_line" | sed -n 's/.*; \([0-9][0-9]*\) multiprocessors.*/\1/p')"
max_clock="$(printf '%s\n' "$gpus" | head -1 | awk -F', ' '{print $3}' | tr -dc 0-9)"
[ -n "$sms" ] && [ -n "$max_clock" ] || stop "cannot read the SM count or clock (devices: $cuda_line; nvidia-smi: $gpus)"
{
    echo "gpus ($count): $gpus"
    echo "device 0: $cuda_line"
    echo "NVRTC: ${nvrtc_found:-from ldconfig}"
    echo "targets scaled by SM count x max SM clock against the H200 (132 SMs at 1980 MHz):"
    awk -v sms="$sms" -v clock="$max_clock" 'BEGIN {
        scale = sms * clock / (132 * 1980)
        printf "  scale %.3f (%d SMs x %d MHz)\n", scale, sms, clock
        split("aes-128-ctr:400 aes-256-ctr:290 aes-128-gcm:250 bf-ctr:300 rc6-128-ctr:800", rows, " ")
        for (i = 1; i <= 5; i++) { split(rows[i], pair, ":"); printf "  target %-12s %6.0f GB/s\n", pair[1], pair[2] * scale }
    }'
} | tee -a "$summary"

# ---------------------------------------------------------------------------------------
# Stage helpers: each stage under its own limit; a stage that times out is a failure, and
# the next stage still runs.
status=0
run_stage() {
    local name=$1 limit=$2
    shift 2
    echo "== stage $name (limit ${limit} s)" | tee -a "$summary"
    local started=$SECONDS code=0
    # timeout runs programs, not shell functions: the stage runs in a child bash that has
    # the exported functions and settings.
    timeout --kill-after=10 "$limit" bash -c '"$@"' stage "$@" >"$out/$name.log" 2>&1 || code=$?
    local verdict=passed
    if [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then
        verdict="TIMED OUT after ${limit} s"
    elif [ "$code" -ne 0 ]; then
        verdict="FAILED (exit $code)"
    fi
    echo "   $name: $verdict in $((SECONDS - started)) s (log: $name.log)" | tee -a "$summary"
    [ "$verdict" = passed ] || status=1
}

stage_speed() {
    "$kit/cuda_speed" 0 1024 7
}

stage_tests() {
    local failed=0
    for test in "$kit"/tests/*; do
        echo "=== $(basename "$test")"
        # A test that can skip for want of a device must find one here.
        PARCRYPT_REQUIRE_GPU=1 "$test" --include-ignored --test-threads 2 || failed=1
    done
    return "$failed"
}

# The table kernels read shared memory at data-dependent indices; with one table copy per
# lane no two lanes of a warp may ever share a bank. One small run of every table kernel.
stage_ncu() {
    command -v ncu >/dev/null 2>&1 || { echo "ncu not found"; return 1; }
    local metrics=l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum
    local csv="$scratch/ncu.csv"
    PARCRYPT_REQUIRE_GPU=1 ncu --clock-control none --csv --metrics "$metrics" \
        --kernel-name regex:'^(aes|blowfish)_' --launch-count 60 \
        "$kit/tests/cuda_vs_cpu" every_cipher_operation_and_size_matches_the_cpu \
        ctr_segments_match_the_cpu --test-threads 1 >"$csv" || return 1
    grep -c '"Metric Name"' "$csv" >/dev/null || { echo "no ncu rows"; return 1; }
    python3 - "$csv" <<'PYTHON'
import csv, sys
rows = [row for row in csv.reader(line for line in open(sys.argv[1]) if line.startswith('"'))]
header, rows = rows[0], rows[1:]
name, metric, value = (header.index(column) for column in ("Kernel Name", "Metric Name", "Metric Value"))
kernels, conflicts = {}, 0
for row in rows:
    number = float(row[value].replace(",", "") or 0)
    kernel = row[name].split("(")[0]
    kernels.setdefault(kernel, {}).setdefault(row[metric], 0.0)
    kernels[kernel][row[metric]] += number
for kernel, values in sorted(kernels.items()):
    loads = values.get("smsp__inst_executed_op_shared_ld.sum", 0)
    bank = sum(v for k, v in values.items() if "bank_conflicts" in k)
    conflicts += bank
    print(f"{kernel:28} shared loads {loads:14.0f}  bank conflicts {bank:10.0f}")
print(f"kernels profiled: {len(kernels)}; bank conflicts in all: {conflicts:.0f}")
sys.exit(0 if kernels and conflicts == 0 else 1)
PYTHON
}

# memcheck (out-of-bounds and misaligned accesses) over one small job per kernel: every
# cipher, operation and awkward length, segmented CTR and GHASH; racecheck (shared-memory
# hazards: the table copy, barrier and wipe; GHASH's work-group join) over segmented CTR
# (AES and Blowfish table kernels) and GHASH. Racecheck over every cipher and size ran
# past 190 s on an H100 (2026-11-26), so it takes those two tests only.
stage_sanitize() {
    command -v compute-sanitizer >/dev/null 2>&1 || { echo "compute-sanitizer not found"; return 1; }
    local failed=0
    echo "=== compute-sanitizer --tool memcheck"
    PARCRYPT_REQUIRE_GPU=1 compute-sanitizer --tool memcheck --error-exitcode 99 \
        "$kit/tests/cuda_vs_cpu" every_cipher_operation_and_size_matches_the_cpu \
        ctr_segments_match_the_cpu ghash_partial_sums_join_to_the_cpu_ghash \
        --test-threads 1 || failed=1
    echo "=== compute-sanitizer --tool racecheck"
    PARCRYPT_REQUIRE_GPU=1 compute-sanitizer --tool racecheck --error-exitcode 99 \
        "$kit/tests/cuda_vs_cpu" ctr_segments_match_the_cpu \
        ghash_partial_sums_join_to_the_cpu_ghash --test-threads 1 || failed=1
    return "$failed"
}

# The Python package on this machine's Python (CuPy and PyTorch from its site packages):
# every CPU test, and the CUDA array tests (tests/test_gpu_arrays.py, DLPack).
stage_python() {
    [ -d "$kit/python" ] || { echo "no python/ in the kit (scripts/gpu-kit.sh builds it)"; return 1; }
    # The wheel goes into a folder of its own on python3's path, not into a virtual
    # environment: python3 there may itself be a virtual environment (the one with CuPy and
    # PyTorch), whose packages a new environment would not see.
    local site="$scratch/python-site" tests_dir
    rm -rf "$site"
    python3 -m pip install --quiet --no-deps --no-index --target "$site" "$kit"/python/parcrypt-*.whl ||
        return 1
    tests_dir="$(mktemp -d)"
    (cd "$tests_dir" && export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" &&
        python3 -c 'import parcrypt, sys; print("parcrypt from", parcrypt.__file__, "on", sys.executable)' &&
        PARCRYPT_BIN="$OLDPWD/$kit/parcrypt" python3 -m pytest -q -rs \
            -p no:cacheprovider "$OLDPWD/$kit/python/tests" &&
        python3 "$OLDPWD/$kit/python/bench_gpu.py")
}

# One 4 GiB file in /dev/shm and nothing else stored: encryption timed into /dev/null, the
# round trip checked through pipes against the file.
stage_files() {
    local key=000102030405060708090a0b0c0d0e0f file=/dev/shm/parcrypt-gpu-verify.bin
    local size=$((4 << 30)) failed=0 backend available
    available="$(df -B1 --output=avail /dev/shm | tail -1 | tr -dc 0-9)"
    if [ "${available:-0}" -lt $((size + (256 << 20))) ]; then
        echo "/dev/shm has ${available:-0} bytes free; the files stage needs 4 GiB and a margin"
        return 1
    fi
    # Where a file batch's time goes: the device calls of the GPU batcher one by one, then
    # its seal and open per batch beside its host-only steps.
    echo "=== chunk_calls cuda; batch_speed cuda"
    "$kit/chunk_calls" cuda 4,64 5 || failed=1
    "$kit/batch_speed" cuda 256,4096 5 || failed=1
    trap 'rm -f "$file"' RETURN
    if ! head -c "$size" /dev/urandom >"$file"; then
        echo "could not write the 4 GiB test file in /dev/shm"
        return 1
    fi
    [ "$(stat -c %s "$file")" -eq "$size" ] || { echo "the test file is short"; return 1; }
    for backend in cuda pool cuda pool; do
        echo "=== $backend: encrypt to /dev/null (the file path's rate)"
        "$kit/parcrypt" encrypt -q --stats --format cobblestone --key "$key" \
            --backend "$backend" "$file" -o /dev/null --force || failed=1
        echo "=== $backend: encrypt | decrypt | cmp (the round trip)"
        "$kit/parcrypt" encrypt -q --format cobblestone --key "$key" --backend "$backend" \
            "$file" -o - |
            "$kit/parcrypt" decrypt -q --stats --format cobblestone --key "$key" \
                --backend "$backend" - -o - |
            cmp - "$file" || failed=1
    done
    return "$failed"
}

stage_tune() {
    # shellcheck disable=SC2086
    PARCRYPT_TUNE_DIR="$scratch/tune" "$kit/parcrypt" tune --backend cuda ${TUNE_ARGS:-}
}

stage_bench() {
    # shellcheck disable=SC2086
    PARCRYPT_TUNE_DIR="$scratch/tune" "$kit/parcrypt-lab" --scenario all \
        --output "$out/bench" ${BENCH_ARGS:-}
}

# The speed log's GB/s against the scaled targets (a figure below its target is reported,
# not failed: targets are goals, and the log has the numbers).
compare_speed() {
    [ -f "$out/speed.log" ] || return 0
    echo "speed against the scaled targets:" | tee -a "$summary"
    awk -v sms="$sms" -v clock="$max_clock" '
        BEGIN { scale = sms * clock / (132 * 1980)
                target["aes-128-ctr"] = 400; target["aes-256-ctr"] = 290
                target["bf-ctr"] = 300; target["rc6-128-ctr"] = 800
                target["aes-128-gcm"] = 250 }
        $1 in target && $3 == "GB/s" && $6 == "GPU" {
            goal = target[$1] * scale
            printf "  %-12s %8.1f GB/s on the GPU, target %6.0f: %s\n", $1, $2, goal, ($2 >= goal ? "met" : "below")
        }
        # GCM on device memory: the whole synchronised call (CTR, GHASH, the host join).
        $1 in target && $3 == "GB/s" && $4 == "whole" && $5 == "call" {
            goal = target[$1] * scale
            printf "  %-12s %8.1f GB/s whole call,  target %6.0f: %s\n", $1, $2, goal, ($2 >= goal ? "met" : "below")
        }' "$out/speed.log" | tee -a "$summary"
}

export kit out scratch
export -f stage_speed stage_tests stage_ncu stage_sanitize stage_python stage_files stage_tune \
    stage_bench

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(speed tests ncu sanitize)
for stage in "${stages[@]}"; do
    case "$stage" in
    speed) run_stage speed "${SPEED_S:-150}" stage_speed && compare_speed ;;
    tests) run_stage tests "${TESTS_S:-220}" stage_tests ;;
    ncu) run_stage ncu "${NCU_S:-90}" stage_ncu ;;
    sanitize) run_stage sanitize "${SANITIZE_S:-100}" stage_sanitize ;;
    python) run_stage python "${PYTHON_S:-240}" stage_python ;;
    files) run_stage files "${FILES_S:-300}" stage_files ;;
    tune) run_stage tune "${TUNE_S:-300}" stage_tune ;;
    bench) run_stage bench "${BENCH_S:-580}" stage_bench ;;
    *)
        echo "unknown stage '$stage' (speed, tests, ncu, sanitize, python, files, tune, bench)" >&2
        exit 2
        ;;
    esac
done
files_out="$(find "$out" -type f | wc -l)"
echo "gpu-verify: $files_out files in $out; status $status" | tee -a "$summary"
[ "$files_out" -le 8 ] || echo "gpu-verify: more than 8 files in $out: a device call returns only 8" >&2
exit $status
