#!/usr/bin/env bash
# The whole test suite: formatting, lints and docs as errors, then every crate's unit tests,
# the official vectors, the differential tests against OpenSSL / pyca / RustCrypto, the
# OpenCL kernels (on PoCL when there is no GPU), the CUDA kernels' NVRTC compile check, the
# command-line tests, the C ABI from C, the JVM library, the Python package, the kernels'
# crates for aarch64 under qemu-user, and then every cargo-fuzz target for a minute
# (scripts/fuzz.sh).
# Tests that cannot run on this machine (no GPU, no OpenCL, no NVRTC, no openssl, no nightly
# or cargo-fuzz) say SKIPPED with the reason; the summary at the end lists each of them.
#
# It runs in stages, each timed; the table of stage times is printed at the end, pass or fail.
# The stages that share cargo's target/ run one after another; the Python wheel (its own
# target dir) and the fuzz build (fuzz/target) are built beside them from the start, the
# Python tests run beside the C, Java and kernel-report stages, and the fuzz targets then
# run one per core. PARCRYPT_TEST_SERIAL=1 runs every stage one after another instead.
set -euo pipefail
cd "$(dirname "$0")/.."
# NVRTC from PyPI (nvidia-cuda-nvrtc) keeps its libraries inside the Python package.
nvrtc_lib="$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "lib"))' 2>/dev/null || true)"
if [ -n "$nvrtc_lib" ] && [ -d "$nvrtc_lib" ]; then
    export LD_LIBRARY_PATH="$nvrtc_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

scratch="$(mktemp -d)"
skips="$scratch/skips"
touch "$skips"
started=$SECONDS
stage_lines=()
beside_names=()
beside_pids=()
beside_started=()

# Prints the table of stage times (also when a stage failed and set -e ends the script).
stage_table() {
    local status=$?
    echo
    echo "== stage times (wall clock; stages marked | ran beside the ones above them; CPU: the"
    echo "   share of all cores' time that was busy during the stage, whatever ran it)"
    local line
    for line in "${stage_lines[@]}"; do
        echo "   $line"
    done
    printf '   %-60s %5d s  %5s\n' "total" "$((SECONDS - started))" "$(cpu_busy "$cpu_started")"
    local pid
    for pid in "${beside_pids[@]}"; do
        kill -- "-$pid" 2>/dev/null || true
    done
    rm -rf "$scratch"
    exit "$status"
}
trap stage_table EXIT

# stage NAME COMMAND...: runs COMMAND as the stage NAME, prints and records its time; returns
# the command's status.
stage() {
    local name="$1" begun=$SECONDS status=0 cpu
    shift
    echo "== [$(date +%H:%M:%S)] stage: $name"
    cpu="$(cpu_ticks)"
    "$@" || status=$?
    record "$name" "$((SECONDS - begun))" "$status" "$(cpu_busy "$cpu")"
    return "$status"
}

# The machine's CPU time so far, as "busy total" clock ticks summed over every core (the
# first line of /proc/stat; empty where there is none), and the share of it that was busy
# since such a reading: how well a stage kept the cores at work (beside stages included).
cpu_ticks() {
    [ -r /proc/stat ] || return 0
    awk '/^cpu / { total = 0; for (i = 2; i <= NF; i++) total += $i; print total - $5 - $6, total; exit }' /proc/stat
}
cpu_busy() {
    local before="$1" now
    now="$(cpu_ticks)"
    [ -n "$before" ] && [ -n "$now" ] || return 0
    echo "$before $now" | awk '{ if ($4 > $2) printf "%3d %%", 100 * ($3 - $1) / ($4 - $2) }'
}
cpu_started="$(cpu_ticks)"

record() {
    local verdict="ok"
    [ "$3" -eq 0 ] || verdict="FAILED (status $3)"
    stage_lines+=("$(printf '%-60s %5d s  %5s  %s' "$1" "$2" "${4:-}" "$verdict")")
    echo "== stage $1: $2 s, ${4:+CPU busy $4, }$verdict"
}

# stage_beside NAME COMMAND...: starts COMMAND in the background, its output kept in a log;
# `join_beside` waits for all of them and prints each log whole, in the order they started.
stage_beside() {
    local name="$1"
    shift
    local index="${#beside_names[@]}"
    if [ "${PARCRYPT_TEST_SERIAL:-0}" = "1" ]; then
        stage "$name" "$@"
        return
    fi
    echo "== [$(date +%H:%M:%S)] stage (in the background, its output follows when it ends): $name"
    # A session of its own, so that a failing run can stop it and all it started.
    # Its end time goes to a file, so its own time is recorded, not the wait for it.
    setsid bash -c '"$@"; status=$?; date +%s >"$0"; exit "$status"' \
        "$scratch/beside-$index.end" "$@" >"$scratch/beside-$index.log" 2>&1 &
    beside_names+=("$name")
    beside_pids+=("$!")
    beside_started+=("$(date +%s)")
}

join_beside() {
    local index status ended failed=0
    for index in "${!beside_pids[@]}"; do
        status=0
        wait "${beside_pids[$index]}" || status=$?
        echo "== output of the background stage: ${beside_names[$index]}"
        cat "$scratch/beside-$index.log"
        ended="$(cat "$scratch/beside-$index.end" 2>/dev/null || date +%s)"
        record "| ${beside_names[$index]}" "$((ended - beside_started[index]))" "$status"
        [ "$status" -eq 0 ] || failed=$status
    done
    beside_names=()
    beside_pids=()
    beside_started=()
    return "$failed"
}

# The cargo-fuzz targets' build (nightly, sanitizers, its own fuzz/target) runs beside the
# lints and tests, from the start: their builds leave a core idle for long stretches (one
# crate after another along the workspace's chain, single-threaded tests). The targets run
# after the other stages, a bounded time each
# (PARCRYPT_CARGO_FUZZ_SECONDS, default 60; 0 skips them). They need nightly and cargo-fuzz:
# a developer without them gets a SKIPPED line, CI (CI=true, which .ci/run installs both for)
# fails instead.
fuzz_seconds="${PARCRYPT_CARGO_FUZZ_SECONDS:-60}"
fuzz_missing=""
if [ "$fuzz_seconds" = "0" ]; then
    fuzz_missing="PARCRYPT_CARGO_FUZZ_SECONDS=0"
elif ! cargo +nightly --version >/dev/null 2>&1; then
    fuzz_missing="no nightly toolchain (rustup toolchain install nightly --profile minimal)"
elif ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    fuzz_missing="cargo-fuzz is not installed (cargo install cargo-fuzz --locked)"
fi
if [ -n "$fuzz_missing" ] && [ "${CI:-}" = "true" ] && [ "$fuzz_seconds" != "0" ]; then
    echo "== cargo fuzz: cannot run in CI: $fuzz_missing" >&2
    exit 1
fi
if [ -z "$fuzz_missing" ]; then
    stage_beside "cargo fuzz build (scripts/fuzz.sh --build-only)" bash scripts/fuzz.sh --build-only
fi

# The Python wheel's build (release, its own cargo target dir) starts beside them too; its
# tests run after `cargo test`, which builds the CLI they call. The wheel tested here is
# optimised as a release is, without the release's link-time optimisation and with more
# codegen units, which build faster on few cores (a published wheel is built by `maturin
# build --release` with the release profile, docs/PYTHON.md).
wheel_env=(env CARGO_TARGET_DIR="$PWD/target/python/cargo" CARGO_PROFILE_RELEASE_LTO=false
    CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16)
stage_beside "python wheel build (scripts/python-test.sh, build only)" \
    "${wheel_env[@]}" PARCRYPT_PYTHON_BUILD_ONLY=1 bash scripts/python-test.sh "$skips"

# The house stays clean by machine: formatting, lints as errors, documentation without warnings.
stage "cargo fmt --check" cargo fmt --all --check
stage "cargo clippy -D warnings" cargo clippy --workspace --all-targets --quiet -- -D warnings
stage "cargo clippy -D warnings (no GPU features)" \
    cargo clippy --workspace --all-targets --no-default-features --quiet -- -D warnings
doc() { RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet; }
stage "cargo doc -D warnings" doc

# libtest hides what a passing test printed; --show-output keeps it, and the filter below
# shows only the SKIPPED lines from it (with the test's name), so a skip is never a silent
# pass. Failures are printed in full, as cargo prints them.
cargo_test() {
    # Every target is built first; then the tests run in two lanes, one per core (cargo
    # releases target/ once its build is done): the CUDA and HIP compile checks (NVRTC and
    # hiprtc, CPU-bound) with the unit tests in one, every other integration test in the
    # other; then the documentation's examples (--all-targets leaves those out). Each lane's
    # output is printed whole, one after the other. The status is the worst of them.
    # PARCRYPT_TEST_SERIAL=1 runs the tests in one lane, as `cargo test --workspace
    # --all-targets` does.
    {
        status=0
        if [ "${PARCRYPT_TEST_SERIAL:-0}" = "1" ]; then
            cargo test --workspace --all-targets "$@" -- --show-output 2>&1 || status=$?
        elif cargo test --workspace --all-targets --no-run "$@" 2>&1; then
            local heavy=(cuda_nvrtc hip_compile) lane_one=(--lib --bins) lane_two=() name
            for name in "${heavy[@]}"; do lane_one+=(--test "$name"); done
            while read -r name; do
                [[ " ${heavy[*]} " == *" $name "* ]] || lane_two+=(--test "$name")
            done < <(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
for package in json.load(sys.stdin)["packages"]:
    for target in package["targets"]:
        if target["kind"] == ["test"]:
            print(target["name"])' | sort -u)
            cargo test --workspace "${lane_one[@]}" "$@" -- --show-output >"$scratch/lane-1.log" 2>&1 &
            local lane_one_pid=$!
            cargo test --workspace "${lane_two[@]}" "$@" -- --show-output >"$scratch/lane-2.log" 2>&1 \
                || status=$?
            wait "$lane_one_pid" || status=$?
            cat "$scratch/lane-1.log" "$scratch/lane-2.log"
        else
            status=1
        fi
        cargo test --workspace --doc "$@" -- --show-output 2>&1 || status=$?
        exit "$status"
    } | awk -v skips="$skips" '
        /^successes:$/ { quiet = 1; next }
        /^failures:$/ || /^test result:/ { quiet = 0 }
        quiet && /^---- .* stdout ----$/ { name = $2; next }
        quiet && /SKIPPED/ { sub(/^[[:space:]]+/, ""); line = name ": " $0; if (length(line) > 180) line = substr(line, 1, 177) "..."; print line >> skips; next }
        /^test result:/ { passed += $4; failed += $6; ignored += $8 }
        !quiet { print }
        END { printf "\n== tests: %d passed, %d failed, %d ignored (run by hand: see each #[ignore] reason)\n", passed, failed, ignored }
    '
}
stage "cargo test (every crate, then the doctests)" cargo_test "$@"

# The builds that ran beside end here (they are done by now on a 2-core machine); a failure
# of one is reported after the fuzz runs, so one run shows every failing stage.
beside_status=0
join_beside || beside_status=$?

# The Python package: the wheel (built above), a fresh virtual environment, pytest on the
# installed package, beside the stages below.
stage_beside "python (scripts/python-test.sh)" "${wheel_env[@]}" bash scripts/python-test.sh "$skips"

# The static kernel report: every CUDA kernel compiled by NVRTC for sm_90 and sm_100 and read
# with cuobjdump (registers, shared memory, spills, SASS instructions per 16 bytes and the
# throughput a simple issue model gives them), against the kernels as they were before the
# speed work (docs/kernel-report/baseline-main.json). A model, not a measurement. Without
# NVRTC or cuobjdump it says SKIPPED; under CI=true it fails instead.
kernel_report() {
    local log="$scratch/kernel-report.log"
    python3 scripts/kernel-report.py --baseline docs/kernel-report/baseline-main.json | tee "$log"
    grep SKIPPED "$log" | sed 's|^|scripts/kernel-report.py: |' >>"$skips" || true
}
stage "static kernel report (a model, not a measurement)" kernel_report

# The C ABI from C: the test program against the shared and the static library (and the
# pkg-config file where pkg-config is installed), each printing its own count.
capi() {
    local log="$scratch/capi.log"
    bash scripts/capi_test.sh | tee "$log"
    grep SKIPPED "$log" | sed 's|^|scripts/capi_test.sh: |' >>"$skips" || true
}
stage "C ABI (scripts/capi_test.sh)" capi

# The JVM library: JUnit through Maven on a JDK 22+ (SKIPPED without one, except in CI).
stage "java (scripts/java-test.sh)" bash scripts/java-test.sh "$skips"

# The CPU kernels' crates for aarch64: linted, built and tested under qemu-user (`-cpu max`,
# with the ARMv8 AES and PMULL instructions); SKIPPED without qemu, the cross compiler or the
# target's standard library, except in CI.
stage "aarch64 under qemu (scripts/aarch64-test.sh)" bash scripts/aarch64-test.sh "$skips"

# age files against the Go reference tools, age and age-keygen 1.3.2 (built once from the Go
# module proxy into a cache): both directions, every recipient type, armored and not, sizes
# 0 to 100 MiB, with the CLI that `cargo test` built. Without Go or the proxy it says
# SKIPPED; under CI=true it fails instead.
age_interop() {
    local status=0
    bash scripts/age-interop.sh "${CARGO_TARGET_DIR:-target}/debug/parcrypt" || status=$?
    if [ "$status" = 2 ]; then
        if [ "${CI:-}" = "true" ]; then
            echo "== age interop: cannot run in CI (no Go toolchain or module proxy)" >&2
            return 1
        fi
        echo "scripts/age-interop.sh: SKIPPED: no Go toolchain or module proxy" >>"$skips"
        return 0
    fi
    return "$status"
}
stage "age interop (scripts/age-interop.sh)" age_interop

# The Python tests end here.
join_beside || beside_status=$?

if [ -z "$fuzz_missing" ]; then
    stage "cargo fuzz run (scripts/fuzz.sh, ${fuzz_seconds} s a target, one per core)" bash scripts/fuzz.sh
else
    echo "== cargo fuzz: SKIPPED: $fuzz_missing"
    echo "scripts/fuzz.sh: SKIPPED: $fuzz_missing" >>"$skips"
fi

count="$(sort -u "$skips" | wc -l)"
if [ "$count" -eq 0 ]; then
    echo "== skipped: none (every test ran in full)"
else
    echo "== skipped: $count tests passed without running their subject here, and why:"
    sort -u "$skips" | sed 's/^/   /'
fi
if [ "$beside_status" -ne 0 ]; then
    echo "== a background stage failed (its output is above)" >&2
    exit "$beside_status"
fi
