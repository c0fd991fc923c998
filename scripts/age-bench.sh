#!/usr/bin/env bash
# Speed of age files: parcrypt's release binary against age 1.3.2 (Go, filippo.io/age) and,
# when installed, rage, encrypting to and decrypting with one X25519 key, with a copy of the
# same bytes (dd with 4 MiB blocks: a read and a write through user memory, as every tool
# here does) as the floor. Every file is in /dev/shm (a tmpfs: memory, no disk).
#
#   scripts/age-bench.sh [PARCRYPT_BINARY]
#
# AGE_BENCH_MIB: the plaintext's size in MiB (default 1024). AGE_BENCH_RUNS: timed runs of
# each contender (default 5; the table gives medians). AGE_BENCH_THREADS: parcrypt's thread
# counts (RAYON_NUM_THREADS for age files, which every parcrypt binary honours; --threads for
# parcrypt's own format; default "1 2"; age is single-threaded by design).
# AGE_BENCH_ALSO: more parcrypt binaries as "NAME=PATH ..." (say, one built before a
# change), timed the same way as "NAME-THREADS"; AGE_BENCH_BASELINE=PATH is "base=PATH".
# AGE_INTEROP_CACHE: where age 1.3.2 is (built there by scripts/age-interop.sh, which this
# runs with a tiny matrix when it is missing). RAGE: a rage binary (default: rage on PATH or
# in ~/.cache/parcrypt/rage/bin; skipped when there is none).
#
# parcrypt's own format is timed too, at each thread count: a file under a raw key
# (`--key-file`, "key-T") against one encrypted to the same X25519 recipient ("recipient-T"),
# whose header costs one X25519 operation and nothing per byte.
#
# The contenders alternate within each round (copy, age, rage, parcrypt at each thread
# count; encryption then decryption), after one untimed warm-up round, so that a noisy
# machine slows them alike. Without PARCRYPT_BINARY, `cargo build --release --bin parcrypt`
# builds one. Prints one line per timed run and a table: median seconds, MB/s (10^6 bytes
# of plaintext per second) and the ratio to age.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mib=${AGE_BENCH_MIB:-1024}
runs=${AGE_BENCH_RUNS:-5}
threads=${AGE_BENCH_THREADS:-"1 2"}
cache=${AGE_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/parcrypt/age-1.3.2}

if [ ! -x "$cache/age" ]; then
    AGE_INTEROP_SIZES=1 "$root/scripts/age-interop.sh" >/dev/null || {
        echo "age-bench: cannot build age 1.3.2 (see scripts/age-interop.sh)" >&2
        exit 2
    }
fi
age=$cache/age
rage=${RAGE:-$(command -v rage || true)}
[ -n "$rage" ] || rage=${XDG_CACHE_HOME:-$HOME/.cache}/parcrypt/rage/bin/rage
[ -x "$rage" ] || rage=

if [ $# -ge 1 ]; then
    parcrypt=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
else
    (cd "$root" && cargo build --quiet --release --bin parcrypt)
    parcrypt=${CARGO_TARGET_DIR:-$root/target}/release/parcrypt
fi
[ -x "$parcrypt" ] || { echo "age-bench: no parcrypt binary at $parcrypt" >&2; exit 2; }

work=$(mktemp -d /dev/shm/age-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
bytes=$((mib * 1024 * 1024))
head -c "$bytes" /dev/urandom >plain
"$cache/age-keygen" -o key.txt 2>/dev/null
recipient=$(sed -n 's/^# public key: //p' key.txt)
# The file every decrypter reads: age's own (parcrypt and rage read it as they read theirs).
"$age" -e -r "$recipient" -o sealed plain
# parcrypt's own format: under a raw key, and to the recipient.
head -c 32 /dev/urandom >key.bin
"$parcrypt" encrypt --key-file key.bin plain -o sealed-key
"$parcrypt" encrypt -r "$recipient" plain -o sealed-recipient
cat plain sealed sealed-key sealed-recipient >/dev/null # pre-touch

# name: the command, run with "$out" as the output path.
contenders=("copy")
[ -n "$rage" ] && contenders+=("rage")
contenders+=("age")
declare -A binaries=([parcrypt]=$parcrypt)
also=${AGE_BENCH_ALSO:-}
[ -n "${AGE_BENCH_BASELINE:-}" ] && also="base=$AGE_BENCH_BASELINE $also"
names=()
for entry in $also; do
    name=${entry%%=*}
    binaries[$name]=$(cd "$(dirname "${entry#*=}")" && pwd)/$(basename "${entry#*=}")
    [ -x "${binaries[$name]}" ] || { echo "age-bench: no binary at ${entry#*=}" >&2; exit 2; }
    names+=("$name")
done
names+=(parcrypt)
for t in $threads; do
    for name in "${names[@]}"; do contenders+=("$name-$t"); done
done
for t in $threads; do contenders+=("key-$t" "recipient-$t"); done

run() { # op name out
    local op=$1 name=$2 out=$3
    case $name in
        copy)
            if [ "$op" = encrypt ]; then
                dd if=plain of="$out" bs=4M status=none
            else
                dd if=sealed of="$out" bs=4M status=none
            fi ;;
        age)
            if [ "$op" = encrypt ]; then
                "$age" -e -r "$recipient" -o "$out" plain
            else
                "$age" -d -i key.txt -o "$out" sealed
            fi ;;
        rage)
            if [ "$op" = encrypt ]; then
                "$rage" -e -r "$recipient" -o "$out" plain
            else
                "$rage" -d -i key.txt -o "$out" sealed
            fi ;;
        key-*)
            if [ "$op" = encrypt ]; then
                "$parcrypt" encrypt --threads "${name##*-}" --key-file key.bin \
                    plain -o "$out"
            else
                "$parcrypt" decrypt --threads "${name##*-}" --key-file key.bin \
                    sealed-key -o "$out"
            fi ;;
        recipient-*)
            if [ "$op" = encrypt ]; then
                "$parcrypt" encrypt --threads "${name##*-}" -r "$recipient" \
                    plain -o "$out"
            else
                "$parcrypt" decrypt --threads "${name##*-}" -i key.txt \
                    sealed-recipient -o "$out"
            fi ;;
        *-*)
            local binary=${binaries[${name%-*}]}
            if [ "$op" = encrypt ]; then
                RAYON_NUM_THREADS=${name##*-} "$binary" encrypt --format age \
                    -r "$recipient" -o "$out" plain # RAYON_NUM_THREADS: older binaries too
            else
                RAYON_NUM_THREADS=${name##*-} "$binary" decrypt -i key.txt \
                    -o "$out" sealed
            fi ;;
    esac
}

now() { date +%s%N; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A times cpus
# bash's `time` gives the CPU seconds (user + system) the command's processes used.
TIMEFORMAT='%U %S'
for round in $(seq 0 "$runs"); do
    for op in encrypt decrypt; do
        for name in "${contenders[@]}"; do
            rm -f out
            start=$(now)
            { time run "$op" "$name" out 2>err.txt; } 2>cpu.txt
            end=$(now)
            # The result is right: a decryption gives the plaintext back, an encryption
            # decrypts (with age) to it.
            if [ "$op" = decrypt ] || [ "$name" = copy ]; then
                if [ "$name" = copy ]; then want=$([ "$op" = encrypt ] && echo plain || echo sealed); else want=plain; fi
                [ "$round" -gt 0 ] || cmp -s out "$want" || { echo "age-bench: $name $op: wrong output" >&2; exit 1; }
            elif [ "$round" = 0 ] && [ "${name%-*}" = key ]; then
                "$parcrypt" decrypt --key-file key.bin -o check out && cmp -s check plain || {
                    echo "age-bench: $name $op: parcrypt cannot read it back" >&2
                    exit 1
                }
                rm -f check
            elif [ "$round" = 0 ] && [ "${name%-*}" = recipient ]; then
                "$parcrypt" decrypt -i key.txt -o check out && cmp -s check plain || {
                    echo "age-bench: $name $op: parcrypt cannot read it back" >&2
                    exit 1
                }
                rm -f check
            elif [ "$round" = 0 ]; then
                "$age" -d -i key.txt -o check out && cmp -s check plain || {
                    echo "age-bench: $name $op: age cannot read it back" >&2
                    exit 1
                }
                rm -f check
            fi
            seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')
            cpu=$(awk '{ printf "%.3f", $1 + $2 }' cpu.txt)
            if [ "$round" -gt 0 ]; then
                times[$op,$name]+="$seconds "
                cpus[$op,$name]+="$cpu "
                printf 'round %d  %-8s %-11s %s s  (CPU %s s)\n' "$round" "$op" "$name" "$seconds" "$cpu"
            fi
        done
    done
done
rm -f out

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo
echo "age-bench: load average before: $load_before"
echo "age-bench: $mib MiB in /dev/shm, median of $runs, $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p'))"
for name in "${names[@]}"; do echo "$name: ${binaries[$name]}"; done
echo "age: $("$age" --version)${rage:+; rage: $("$rage" --version 2>/dev/null | head -n 1)}"
echo "seconds: wall clock; CPU s: user + system; MB/CPU-s: plaintext per CPU second (a core's rate)"
printf '%-8s %-11s %8s %7s %6s %7s %9s\n' op tool seconds MB/s x-age 'CPU s' 'MB/CPU-s'
for op in encrypt decrypt; do
    base=$(echo "${times[$op,age]}" | median)
    for name in "${contenders[@]}"; do
        m=$(echo "${times[$op,$name]}" | median)
        c=$(echo "${cpus[$op,$name]}" | median)
        awk -v op="$op" -v name="$name" -v m="$m" -v b="$base" -v c="$c" -v bytes="$bytes" \
            'BEGIN { printf "%-8s %-11s %8.3f %7.0f %6.2f %7.3f %9.0f\n", op, name, m, bytes / m / 1e6, b / m, c, bytes / c / 1e6 }'
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
