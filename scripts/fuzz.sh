#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ (each [[bin]] that `cargo fuzz list` names, so a new
# target joins by being added to fuzz/Cargo.toml) for a bounded time, starting from its
# checked-in corpus, fuzz/corpus/TARGET.
#
#   PARCRYPT_CARGO_FUZZ_SECONDS   seconds per target (default 60; CI uses the default)
#
# Needs a nightly toolchain and cargo-fuzz:
#   rustup toolchain install nightly --profile minimal && cargo install cargo-fuzz --locked
#
# The fuzzer works on a copy of the corpus in a temporary folder, so the inputs it finds
# interesting are not added to the checkout (to keep some, run cargo fuzz by hand as
# fuzz/README.md shows and commit them). A crash, a leak, a timeout or running out of memory
# fails the script; the input that caused it is kept under fuzz/artifacts/TARGET/ (ignored by
# git) and its path is printed, with the command that replays it.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${PARCRYPT_CARGO_FUZZ_SECONDS:-60}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
    echo "scripts/fuzz.sh: PARCRYPT_CARGO_FUZZ_SECONDS must be a whole number of seconds, at least 1 (got '$seconds')" >&2
    exit 2
fi

mapfile -t targets < <(cargo +nightly fuzz list)
if [ "${#targets[@]}" -eq 0 ]; then
    echo "scripts/fuzz.sh: cargo fuzz list names no target in fuzz/" >&2
    exit 1
fi

# One false leak report from glibc is suppressed (see the file); every other leak counts.
export LSAN_OPTIONS="suppressions=$PWD/lsan-suppressions.txt${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# One build for all targets (sanitizers, release with debug assertions, in fuzz/target).
echo "== cargo fuzz build (${targets[*]})"
cargo +nightly fuzz build

failed=()
for target in "${targets[@]}"; do
    corpus="$work/corpus/$target"
    mkdir -p "$corpus" "artifacts/$target"
    if [ -d "corpus/$target" ]; then
        cp -R "corpus/$target/." "$corpus/"
    fi
    kept="$(find "$corpus" -type f | wc -l)"
    marker="$work/started-$target"
    touch "$marker"
    echo "== cargo fuzz run $target: ${seconds} s from $kept corpus inputs"
    # libFuzzer prints a status line per new input; its summary and any report are kept.
    if cargo +nightly fuzz run "$target" "$corpus" -- \
        -max_total_time="$seconds" -print_final_stats=1 >"$work/log-$target" 2>&1; then
        grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "$work/log-$target" || true
        found="$(find "$corpus" -type f | wc -l)"
        echo "   $target: no failure; $((found - kept)) new corpus inputs found (not kept)"
    else
        # The whole report: the sanitizer's or the panic's message and the stack.
        grep -vE '^#[0-9]+' "$work/log-$target" | tail -n 80
        failed+=("$target")
        while IFS= read -r artifact; do
            echo "FAILED $target: input kept in fuzz/$artifact"
            echo "   replay: (cd fuzz && cargo +nightly fuzz run $target $artifact)"
        done < <(find "artifacts/$target" -type f -newer "$marker")
    fi
done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "== fuzzing FAILED: ${failed[*]}"
    exit 1
fi
echo "== fuzzing: ${#targets[@]} targets, ${seconds} s each, no failure"
