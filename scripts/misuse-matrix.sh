#!/usr/bin/env bash
# The signal/crash matrix and the misuse table of issue 13, for any parcrypt binary:
#   scripts/misuse-matrix.sh [PATH-TO-PARCRYPT]   (default: target/release/parcrypt)
# Prints Markdown tables. Each row runs the binary as a user (or an attacker) would and
# reports what is left on disk, what the exit status was and what the output held. Nothing
# here is a test (the suite's tests assert the same outcomes); it is the before/after record.
# Linux only; uses /dev/shm when it exists. Takes about a minute.
set -uo pipefail
bin="$(realpath "${1:-target/release/parcrypt}")"
[ -x "$bin" ] || { echo "no binary at $bin (cargo build --release -p parcrypt-cli)" >&2; exit 1; }
base="/dev/shm"; [ -d "$base" ] || base="${TMPDIR:-/tmp}"
work="$(mktemp -d "$base/parcrypt-matrix.XXXXXX")"
trap 'rm -rf "$work"' EXIT
key=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
marker="PLAINTEXT-MARKER-"
# Recognisable plaintext: a marker line repeated (64 MiB), so that any file holding
# plaintext is found by grep.
plain="$work/plain"
yes "$marker" | head -c $((64 << 20)) >"$plain"
printf 'secret passphrase\n' >"$work/pass"
"$bin" encrypt --key "$key" -q -o "$work/sealed" "$plain"
"$bin" raw encrypt --cipher aes-256-gcm --key "$key" --iv 000102030405060708090a0b -o "$work/raw.gcm" "$plain"

# What is in FOLDER besides the names given: "none" or "N files (B bytes, plaintext: yes/no)".
leftovers() {
    local folder="$1"; shift
    local found=() name
    for entry in "$folder"/* "$folder"/.[!.]*; do
        [ -e "$entry" ] || continue
        name="$(basename "$entry")"
        local known=0
        for keep in "$@"; do [ "$name" = "$keep" ] && known=1; done
        [ $known = 1 ] || found+=("$entry")
    done
    if [ ${#found[@]} -eq 0 ]; then echo "none"; return; fi
    local bytes=0 leak=no
    for f in "${found[@]}"; do
        bytes=$((bytes + $(stat -c %s "$f")))
        grep -q -- "$marker" "$f" 2>/dev/null && leak=yes
    done
    echo "${#found[@]} file(s), $bytes B, plaintext: $leak"
}

# Whether any regular file PID holds open contains the marker (read through /proc/PID/fd).
held_plaintext() {
    local pid="$1" fd target
    for fd in /proc/"$pid"/fd/*; do
        target="$(readlink "$fd" 2>/dev/null)" || continue
        case "$target" in pipe:*|socket:*|anon_inode:*) continue ;; esac
        [ "$target" = "$plain" ] && continue
        [ -f "$fd" ] && grep -q -- "$marker" "$fd" 2>/dev/null && { echo yes; return; }
    done
    echo no
}

status_of() { # exit code, or the signal that ended it
    local code=$1
    if [ "$code" -gt 128 ]; then echo "killed by $(kill -l $((code - 128)))"; else echo "exit $code"; fi
}

echo "## Signals (binary: $bin)"
echo
echo "Input fed from a pipe that stalls: 'early' is 0.1 s after start, 'mid' after 16 MiB"
echo "were fed. The destination exists beforehand with --force in the 'replace' rows. The last"
echo "column: whether a regular file the process held open (read through /proc/PID/fd just"
echo "before the signal) contained plaintext. For the parcrypt format that is plaintext of chunks"
echo "whose own tag matched; for raw GCM no tag has matched yet, so it must be 'no'."
echo
echo "| job | point | signal | status | left in folder | left in TMPDIR | destination after | plaintext in a file it held |"
echo "|---|---|---|---|---|---|---|---|"
run_signal() { # job point signal
    local job="$1" point="$2" signal="$3"
    local dir="$work/sig"; rm -rf "$dir"; mkdir -p "$dir/out" "$dir/tmp"
    local source replace=""
    case "$job" in
        encrypt*) source="$plain" ;;
        decrypt*) source="$work/sealed" ;;
        raw-gcm*) source="$work/raw.gcm" ;;
    esac
    case "$job" in *replace) printf 'old destination\n' >"$dir/out/dest"; replace=--force ;; esac
    local feed=$((16 << 20)); [ "$point" = early ] && feed=0
    local args
    case "$job" in
        encrypt*) args=(encrypt --key "$key" -q $replace -o "$dir/out/dest" -) ;;
        decrypt*) args=(decrypt --key "$key" -q $replace -o "$dir/out/dest" -) ;;
        raw-gcm*) args=(raw decrypt --cipher aes-256-gcm --key "$key" --iv 000102030405060708090a0b $replace -o "$dir/out/dest" -) ;;
    esac
    rm -f "$dir/feed"; mkfifo "$dir/feed"
    ( head -c "$feed" "$source"; exec sleep 30 ) >"$dir/feed" &
    local feeder=$!
    TMPDIR="$dir/tmp" env --default-signal=INT "$bin" "${args[@]}" <"$dir/feed" 2>/dev/null &
    local pid=$!
    if [ "$point" = early ]; then sleep 0.1; else sleep 1.5; fi
    local held="n/a (encryption)"
    case "$job" in encrypt*) ;; *) held="$(held_plaintext "$pid")" ;; esac
    kill -"$signal" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null; local code=$?
    kill "$feeder" 2>/dev/null; wait "$feeder" 2>/dev/null
    local after="absent"
    if [ -e "$dir/out/dest" ]; then
        if printf 'old destination\n' | cmp -s - "$dir/out/dest"; then after="old, whole"; else after="other ($(stat -c %s "$dir/out/dest") B)"; fi
    fi
    echo "| $job | $point | $signal | $(status_of $code) | $(leftovers "$dir/out" dest) | $(leftovers "$dir/tmp") | $after | $held |"
}
for job in encrypt encrypt-replace decrypt decrypt-replace raw-gcm-decrypt; do
    for point in early mid; do
        for signal in INT TERM HUP KILL; do
            run_signal "$job" "$point" "$signal"
        done
    done
done

echo
echo "## Misuse"
echo
echo "| case | what happened |"
echo "|---|---|"
row() { echo "| $1 | $2 |"; }
one_line() { tr '\n' ' ' | sed 's/|/\\|/g' | cut -c1-150; }
m="$work/misuse"; mkdir -p "$m"

# FIFO destination, with --force.
mkfifo "$m/fifo"
( cat "$m/fifo" >"$m/fifo.read" ) & reader=$!
timeout 10 "$bin" encrypt --key "$key" -q --force -o "$m/fifo" "$work/pass" 2>"$m/err"; code=$?
sleep 0.3; kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null
kind="$(stat -c %F "$m/fifo")"
row "-o FIFO --force" "$(status_of $code); afterwards a $kind; reader got $(stat -c %s "$m/fifo.read" 2>/dev/null || echo 0) B $(one_line <"$m/err")"
# Symlink destination, with --force.
printf 'old\n' >"$m/target"; ln -s "$m/target" "$m/link"
"$bin" encrypt --key "$key" -q --force -o "$m/link" "$work/pass" 2>"$m/err"; code=$?
if [ -L "$m/link" ]; then kind="still a link; target $(stat -c %s "$m/target") B"; else kind="replaced by a $(stat -c %F "$m/link"), target $(cat "$m/target")"; fi
row "-o SYMLINK --force" "$(status_of $code); $kind $(one_line <"$m/err")"
# Dangling symlink into a missing folder.
ln -s "$m/missing/folder/file" "$m/dangling"
"$bin" encrypt --passphrase-file "$work/pass" --kdf-memory 1024 -q -o "$m/dangling" "$work/pass" 2>"$m/err"; code=$?
row "-o dangling symlink (missing folder), --kdf-memory 1024" "$(status_of $code): $(one_line <"$m/err")"
# /dev/null without --force.
"$bin" encrypt --key "$key" -q -o /dev/null "$work/pass" 2>"$m/err"; code=$?
row "-o /dev/null" "$(status_of $code); /dev/null is a $(stat -c %F /dev/null) $(one_line <"$m/err")"
# Existing destination refused: before or after the key derivation?
printf 'x' >"$m/exists"
start=$(date +%s.%N)
"$bin" encrypt --passphrase-file "$work/pass" --kdf-memory 1024 -q -o "$m/exists" "$work/pass" 2>"$m/err"; code=$?
end=$(date +%s.%N)
row "existing -o, --kdf-memory 1024" "$(status_of $code) after $(printf '%.2f' "$(echo "$end - $start" | bc)") s: $(one_line <"$m/err")"
# Self-append.
head -c 1048576 /dev/urandom >"$m/self"
timeout 5 "$bin" encrypt --key "$key" -q "$m/self" >>"$m/self" 2>"$m/err"; code=$?
row "encrypt f >> f (5 s limit)" "$(status_of $code); f grew from 1048576 to $(stat -c %s "$m/self") B $(one_line <"$m/err")"
rm -f "$m/self"
# Endless secret files, under a 2 GiB address-space limit.
for option in --passphrase-file --key-file; do
    start=$(date +%s.%N)
    ( ulimit -v 2097152; timeout 20 "$bin" encrypt $option /dev/zero -q -o "$m/zero.out" "$work/pass" ) 2>"$m/err"; code=$?
    end=$(date +%s.%N)
    row "$option /dev/zero (2 GiB limit)" "$(status_of $code) after $(printf '%.2f' "$(echo "$end - $start" | bc)") s: $(one_line <"$m/err")"
done
# Absurd --threads.
for threads in 100000 0; do
    timeout 20 "$bin" raw encrypt --cipher aes-128-ctr --key "${key:0:32}" --iv "${key:0:32}" --backend pool --threads $threads -o "$m/t.out" "$work/pass" 2>"$m/err"; code=$?
    row "--threads $threads (20 s limit)" "$(status_of $code): $(one_line <"$m/err" | cut -c1-100)"
    rm -f "$m/t.out"
done
# A full stderr on an error path.
"$bin" encrypt --key "$key" -q -o "$m/none.out" "$m/nonexistent" 2>/dev/full; code=$?
row "error with 2>/dev/full" "$(status_of $code)"
# A crafted header: argon2id at the format's limits (4 GiB, 100 passes, 64 lanes).
"$bin" encrypt --passphrase-file "$work/pass" --kdf-memory 8 --kdf-passes 1 --kdf-lanes 1 -q -o "$m/cheap" "$work/pass"
python3 - "$m/cheap" "$m/crafted" <<'EOF'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
data[12:24] = struct.pack(">III", 4 * 1024 * 1024, 100, 64)
open(sys.argv[2], "wb").write(data)
EOF
start=$(date +%s.%N)
( ulimit -v 8388608; timeout 30 "$bin" decrypt --passphrase-file "$work/pass" -q -o "$m/crafted.out" "$m/crafted" ) 2>"$m/err"; code=$?
end=$(date +%s.%N)
row "crafted header m=4 GiB t=100 p=64 (30 s limit)" "$(status_of $code) after $(printf '%.2f' "$(echo "$end - $start" | bc)") s: $(one_line <"$m/err")"
# Closed pipe.
"$bin" raw encrypt --cipher aes-128-ctr --key "${key:0:32}" --iv "${key:0:32}" "$plain" 2>"$m/err" | head -c 10 >/dev/null; code=${PIPESTATUS[0]}
row "raw encrypt \\| head -c 10" "$(status_of $code) $(one_line <"$m/err")"
"$bin" decrypt --key "$key" "$work/sealed" 2>"$m/err" | head -c 10 >/dev/null; code=${PIPESTATUS[0]}
row "decrypt \\| head -c 10" "$(status_of $code) $(one_line <"$m/err")"
# Weak KDF parameters and a short passphrase.
printf 'abc\n' >"$m/short"
"$bin" encrypt --passphrase-file "$m/short" --kdf-memory 1 --kdf-passes 1 --kdf-lanes 1 -q -o "$m/weak" "$work/pass" 2>"$m/err"; code=$?
row "--kdf-memory 1 --kdf-passes 1, passphrase 'abc'" "$(status_of $code) $(one_line <"$m/err")"
# Raw GCM decryption of a tampered message to stdout: does plaintext reach a file first?
cp "$work/raw.gcm" "$m/tampered.gcm"
printf '\x00' | dd of="$m/tampered.gcm" bs=1 seek=$(($(stat -c %s "$m/tampered.gcm") - 1)) conv=notrunc 2>/dev/null
mkdir -p "$m/tmp"
TMPDIR="$m/tmp" "$bin" raw decrypt --cipher aes-256-gcm --key "$key" --iv 000102030405060708090a0b "$m/tampered.gcm" >"$m/tampered.out" 2>"$m/err"; code=$?
row "raw GCM decrypt, bad tag, to stdout" "$(status_of $code); stdout got $(stat -c %s "$m/tampered.out") B $(one_line <"$m/err")"
# Raw to a terminal is only testable with one; say so.
echo
echo "(raw output to a terminal, progress and -q: see the suite's tests)"
