#!/usr/bin/env bash
# The whole test suite: formatting, lints and docs as errors, then every crate's unit tests,
# the official vectors, the differential tests against OpenSSL / pyca / RustCrypto, the
# OpenCL kernels (on PoCL when there is no GPU), the CUDA kernels' NVRTC compile check, the
# command-line tests, and then every cargo-fuzz target for a minute (scripts/fuzz.sh).
# Tests that cannot run on this machine (no GPU, no OpenCL, no NVRTC, no openssl, no nightly
# or cargo-fuzz) say SKIPPED with the reason; the summary at the end lists each of them.
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
echo "== cargo clippy -D warnings, CPU-only build (no GPU features)"
cargo clippy --workspace --all-targets --no-default-features --quiet -- -D warnings
echo "== cargo doc -D warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

echo "== cargo test"
# libtest hides what a passing test printed; --show-output keeps it, and the filter below
# shows only the SKIPPED lines from it (with the test's name), so a skip is never a silent
# pass. Failures are printed in full, as cargo prints them.
skips="$(mktemp)"
trap 'rm -f "$skips"' EXIT
# Every target's tests, then the documentation's examples (--all-targets leaves those out);
# the status is the worse of the two.
{
    status=0
    cargo test --workspace --all-targets "$@" -- --show-output 2>&1 || status=$?
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
# The static kernel report: every CUDA kernel compiled by NVRTC for sm_90 and sm_100 and read
# with cuobjdump (registers, shared memory, spills, SASS instructions per 16 bytes and the
# throughput a simple issue model gives them), against the kernels as they were before the
# speed work (docs/kernel-report/baseline-main.json). A model, not a measurement. Without
# NVRTC or cuobjdump it says SKIPPED; under CI=true it fails instead.
echo "== static kernel report (scripts/kernel-report.py; a model, not a measurement)"
report_log="$(mktemp)"
trap 'rm -f "$skips" "$report_log"' EXIT
python3 scripts/kernel-report.py --baseline docs/kernel-report/baseline-main.json | tee "$report_log"
grep SKIPPED "$report_log" | sed 's|^|scripts/kernel-report.py: |' >>"$skips" || true
# The C ABI from C: the test program against the shared and the static library (and the
# pkg-config file where pkg-config is installed), each printing its own count.
echo "== C ABI: crates/capi/tests/c/test_parcrypt.c (scripts/capi_test.sh)"
capi_log="$(mktemp)"
trap 'rm -f "$skips" "$report_log" "$capi_log"' EXIT
bash scripts/capi_test.sh | tee "$capi_log"
grep SKIPPED "$capi_log" | sed 's|^|scripts/capi_test.sh: |' >>"$skips" || true
# The JVM library: JUnit through Maven on a JDK 22+ (SKIPPED without one, except in CI).
bash scripts/java-test.sh "$skips"
# The Python package: wheel, fresh virtual environment, pytest on the installed package.
python_status=0
bash scripts/python-test.sh "$skips" || python_status=$?
# The cargo-fuzz targets, a bounded time each (PARCRYPT_CARGO_FUZZ_SECONDS, default 60; 0
# skips them). They need nightly and cargo-fuzz: a developer without them gets a SKIPPED
# line, CI (CI=true, which .ci/run installs both for) fails instead.
fuzz_seconds="${PARCRYPT_CARGO_FUZZ_SECONDS:-60}"
fuzz_missing=""
if [ "$fuzz_seconds" = "0" ]; then
    fuzz_missing="PARCRYPT_CARGO_FUZZ_SECONDS=0"
elif ! cargo +nightly --version >/dev/null 2>&1; then
    fuzz_missing="no nightly toolchain (rustup toolchain install nightly --profile minimal)"
elif ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    fuzz_missing="cargo-fuzz is not installed (cargo install cargo-fuzz --locked)"
fi
if [ -z "$fuzz_missing" ]; then
    echo "== cargo fuzz: every target, ${fuzz_seconds} s each (scripts/fuzz.sh)"
    bash scripts/fuzz.sh
elif [ "${CI:-}" = "true" ] && [ "$fuzz_seconds" != "0" ]; then
    echo "== cargo fuzz: cannot run in CI: $fuzz_missing" >&2
    exit 1
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
if [ "$python_status" -ne 0 ]; then
    echo "== python tests failed (scripts/python-test.sh)" >&2
    exit "$python_status"
fi
