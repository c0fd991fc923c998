#!/usr/bin/env bash
# The Python package (python/): builds the wheel (release, abi3, manylinux2014 through zig
# when it can), installs it with numpy, pytest and pyca/cryptography in a fresh virtual
# environment (with the `dask` and `s3` extras: dask, distributed, s3fs, for parcrypt.dask's
# tests, and moto's S3 server for the object-store tests), and runs python/tests on the
# installed package from outside the source tree.
# The CLI tests use PARCRYPT_BIN (default target/debug/parcrypt, which `cargo test` builds).
# Prints `== python: N passed, M failed, K skipped (wheel: TAG)`; skipped tests' reasons go to
# the file named by $1 when given (scripts/test.sh's summary). PARCRYPT_PYTHON=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
skips="${1:-/dev/null}"
if [ "${PARCRYPT_PYTHON:-1}" = "0" ]; then
    echo "== python: SKIPPED: PARCRYPT_PYTHON=0"
    echo "scripts/python-test.sh: SKIPPED: PARCRYPT_PYTHON=0" >>"$skips"
    exit 0
fi
python="${PYTHON:-python3}"
# PARCRYPT_PYTHON_DIR: where the venvs and the wheel go (default target/python), so that two
# runs in one tree (or a CARGO_TARGET_DIR of one's own) do not share them.
work="$(realpath -m "${PARCRYPT_PYTHON_DIR:-target/python}")"
build_venv="$work/build-venv"
test_venv="$work/test-venv"
wheels="$work/wheels"

echo "== python: build tools (maturin, ziglang) in $build_venv"
if [ ! -x "$build_venv/bin/maturin" ]; then
    "$python" -m venv "$build_venv"
    "$build_venv/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.16,<2" ziglang
fi
rm -rf "$wheels"
echo "== python: maturin build --release (abi3, manylinux2014 through zig)"
if ! PATH="$build_venv/bin:$PATH" maturin build --quiet --release --zig \
    --compatibility manylinux2014 -m python/Cargo.toml -o "$wheels"; then
    echo "== python: the zig build failed; building for this machine's glibc instead"
    PATH="$build_venv/bin:$PATH" maturin build --quiet --release \
        -m python/Cargo.toml -o "$wheels"
fi
wheel="$(ls "$wheels"/parcrypt-*.whl)"
tag="$(basename "$wheel" .whl | cut -d- -f3-)"
echo "   built $(basename "$wheel")"

if [ "${PARCRYPT_PYTHON_BUILD_ONLY:-0}" = "1" ]; then
    exit 0
fi

echo "== python: fresh virtual environment $test_venv"
rm -rf "$test_venv"
"$python" -m venv "$test_venv"
# aiobotocore named here is resolved first (it pins the botocore that moto's boto3 must match);
# without it pip 23 backtracks through s3fs, dask and distributed releases for many minutes.
"$test_venv/bin/pip" install --quiet --disable-pip-version-check "$wheel[dask,s3]" numpy pytest \
    "cryptography>=43" aiobotocore "moto[server]>=5" "pyrage>=1.4"

echo "== python: pytest on the installed package"
run_dir="$(mktemp -d)"
log="$(mktemp)"
trap 'rm -rf "$run_dir" "$log"' EXIT
status=0
(cd "$run_dir" && PARCRYPT_BIN="${PARCRYPT_BIN:-$root/target/debug/parcrypt}" \
    "$test_venv/bin/python" -m pytest -q -rs -p no:cacheprovider "$root/python/tests") \
    2>&1 | tee "$log" || status=$?
grep -E '^SKIPPED ' "$log" | sed 's/^SKIPPED \[[0-9]*\] /python: /' >>"$skips" || true
last="$(grep -E '^[=]* ?[0-9]+ (passed|failed)' "$log" | tail -1 | tr -d '=' | sed 's/^ *//; s/ *$//')"
echo "== python: ${last:-no pytest summary} (wheel: $tag)"
exit "$status"
