#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ (each [[bin]] that `cargo fuzz list` names, so a new
# target joins by being added to fuzz/Cargo.toml) for a bounded time, starting from its
# checked-in corpus, fuzz/corpus/TARGET.
#
#   PARCRYPT_CARGO_FUZZ_SECONDS   seconds per target (default 60; CI uses the default)
#   PARCRYPT_FUZZ_LANES           targets run at once (default: the machine's cores)
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
# `--build-only` stops after it (scripts/test.sh builds while other stages run, then fuzzes).
echo "== cargo fuzz build (${targets[*]})"
cargo +nightly fuzz build
if [ "${1:-}" = "--build-only" ]; then
    exit 0
fi

# The targets run side by side, one per core (PARCRYPT_FUZZ_LANES, default: the cores this
# machine has): libFuzzer is single-threaded, so each still has a whole core for its seconds.
lanes="${PARCRYPT_FUZZ_LANES:-$(nproc)}"
if ! [[ "$lanes" =~ ^[0-9]+$ ]] || [ "$lanes" -lt 1 ]; then
    echo "scripts/fuzz.sh: PARCRYPT_FUZZ_LANES must be a whole number, at least 1 (got '$lanes')" >&2
    exit 2
fi

# One target's run: its report goes to $work/report-TARGET, its status to $work/status-TARGET.
fuzz_one() {
    local target="$1" corpus="$work/corpus/$1" report="$work/report-$1" kept found
    mkdir -p "$corpus" "artifacts/$target"
    if [ -d "corpus/$target" ]; then
        cp -R "corpus/$target/." "$corpus/"
    fi
    kept="$(find "$corpus" -type f | wc -l)"
    touch "$work/started-$target"
    echo "== cargo fuzz run $target: ${seconds} s from $kept corpus inputs" >"$report"
    # libFuzzer prints a status line per new input; its summary and any report are kept.
    if cargo +nightly fuzz run "$target" "$corpus" -- \
        -max_total_time="$seconds" -print_final_stats=1 >"$work/log-$target" 2>&1; then
        grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "$work/log-$target" >>"$report" || true
        found="$(find "$corpus" -type f | wc -l)"
        echo "   $target: no failure; $((found - kept)) new corpus inputs found (not kept)" >>"$report"
        echo 0 >"$work/status-$target"
    else
        # The whole report: the sanitizer's or the panic's message and the stack.
        grep -vE '^#[0-9]+' "$work/log-$target" | tail -n 80 >>"$report"
        echo 1 >"$work/status-$target"
    fi
}

echo "== cargo fuzz run: ${#targets[@]} targets, ${seconds} s each, $lanes at a time"
running=0
for target in "${targets[@]}"; do
    if [ "$running" -ge "$lanes" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    fuzz_one "$target" &
    running=$((running + 1))
done
wait

failed=()
for target in "${targets[@]}"; do
    cat "$work/report-$target"
    if [ "$(cat "$work/status-$target" 2>/dev/null)" != "0" ]; then
        failed+=("$target")
        while IFS= read -r artifact; do
            echo "FAILED $target: input kept in fuzz/$artifact"
            echo "   replay: (cd fuzz && cargo +nightly fuzz run $target $artifact)"
        done < <(find "artifacts/$target" -type f -newer "$work/started-$target")
    fi
done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "== fuzzing FAILED: ${failed[*]}"
    exit 1
fi
echo "== fuzzing: ${#targets[@]} targets, ${seconds} s each, no failure"
