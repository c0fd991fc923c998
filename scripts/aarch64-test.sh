#!/usr/bin/env bash
# The crates that hold the CPU kernels (parcrypt-ciphers, parcrypt-modes), built for
# aarch64-unknown-linux-gnu and their unit and integration tests run under qemu-user, so
# that the aarch64 build (Portable today, the ARMv8 kernels as they come) is tested on an
# x86-64 machine. qemu runs with `-cpu max`, which has the ARMv8 AES and PMULL instructions.
#
# Needs, all from the registries:
#   apt-get install -y --no-install-recommends qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross
#   rustup target add aarch64-unknown-linux-gnu
# The linker and runner are set here, by environment (no .cargo/config.toml), and the build
# goes to its own target dir, target/aarch64 (PARCRYPT_AARCH64_TARGET_DIR), so the x86-64
# build's artifacts are untouched.
#
# Without the tools it prints SKIPPED and exits 0, except under CI=true, where it fails.
# Prints `== aarch64 (qemu): N passed, M failed`; skip reasons go to the file named by $1
# when given (scripts/test.sh's summary). PARCRYPT_AARCH64=0 skips it.
#
# Not run here: the doctests (cargo runs none for another target; the x86-64 run has them),
# the examples (speed tools; `cargo clippy --target aarch64-unknown-linux-gnu --all-targets`
# builds them), and parcrypt-engine, whose tests need OpenSSL built for aarch64 (the
# `openssl` dev-dependency of one example); its library builds for aarch64.
set -euo pipefail
cd "$(dirname "$0")/.."
skips="${1:-/dev/null}"
target=aarch64-unknown-linux-gnu
sysroot=/usr/aarch64-linux-gnu

skip() {
    if [ "${CI:-}" = "true" ]; then
        echo "== aarch64 (qemu): cannot run in CI: $1" >&2
        exit 1
    fi
    echo "== aarch64 (qemu): SKIPPED: $1"
    echo "scripts/aarch64-test.sh: SKIPPED: $1" >>"$skips"
    exit 0
}

if [ "${PARCRYPT_AARCH64:-1}" = "0" ]; then
    echo "== aarch64 (qemu): SKIPPED: PARCRYPT_AARCH64=0"
    echo "scripts/aarch64-test.sh: SKIPPED: PARCRYPT_AARCH64=0" >>"$skips"
    exit 0
fi

apt_hint="apt-get install -y --no-install-recommends qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
command -v qemu-aarch64 >/dev/null 2>&1 || skip "qemu-aarch64 is not installed ($apt_hint)"
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || skip "aarch64-linux-gnu-gcc is not installed ($apt_hint)"
[ -e "$sysroot/lib/ld-linux-aarch64.so.1" ] || skip "no aarch64 C library in $sysroot ($apt_hint)"
if command -v rustup >/dev/null 2>&1; then
    rustup target list --installed 2>/dev/null | grep -qx "$target" ||
        skip "the Rust standard library for $target is not installed (rustup target add $target)"
elif ! [ -d "$(rustc --print sysroot)/lib/rustlib/$target" ]; then
    skip "the Rust standard library for $target is not installed (rustup target add $target)"
fi

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L $sysroot -cpu max"
target_dir="${PARCRYPT_AARCH64_TARGET_DIR:-target/aarch64}"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

# The lints first: the aarch64-only code (the ARMv8 kernels) is linted nowhere else.
echo "== aarch64: cargo clippy --target $target -p parcrypt-ciphers -p parcrypt-modes -D warnings"
cargo clippy --quiet --target "$target" --target-dir "$target_dir" \
    -p parcrypt-ciphers -p parcrypt-modes --all-targets -- -D warnings

echo "== aarch64 (qemu): cargo test --target $target -p parcrypt-ciphers -p parcrypt-modes (under qemu-aarch64 -cpu max)"
status=0
cargo test --target "$target" --target-dir "$target_dir" --no-fail-fast \
    -p parcrypt-ciphers -p parcrypt-modes --lib --tests 2>&1 | tee "$log" || status=$?

# Every test binary ends with `test result: ok. N passed; M failed; ...`.
read -r passed failed < <(awk '/^test result:/ {
        for (i = 1; i < NF; i++) {
            if ($(i + 1) ~ /^passed/) p += $i
            if ($(i + 1) ~ /^failed/) f += $i
        }
    } END { print p + 0, f + 0 }' "$log")
echo "== aarch64 (qemu): $passed passed, $failed failed"
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ]; then
    echo "== aarch64 (qemu): FAILED (cargo test status $status)" >&2
    exit 1
fi
if [ "$passed" -eq 0 ]; then
    echo "== aarch64 (qemu): FAILED: no test ran" >&2
    exit 1
fi
