#!/usr/bin/env bash
# Interoperability of parcrypt's age files with the reference Go tools, age and age-keygen
# 1.3.2 (filippo.io/age): files that age writes decrypt with parcrypt, and files that
# parcrypt writes decrypt with age, byte for byte; keys that age-keygen makes work in
# parcrypt and the other way round.
#
#   scripts/age-interop.sh [PARCRYPT_BINARY]
#
# Matrix: sizes 0, 1, 64 KiB - 1, 64 KiB, 64 KiB + 1, 1 MiB and 100 MiB (AGE_INTEROP_SIZES
# replaces the list); X25519, post-quantum hybrid (mlkem768x25519) and scrypt passphrase
# recipients; binary and ASCII-armored; in both directions. X25519 and hybrid files have two
# recipients, one key made by age-keygen and one by parcrypt keygen, and each tool decrypts
# with the other tool's identity file too. Passphrases go through age-plugin-batchpass (the
# age CLI reads a passphrase only from a terminal). A tampered file must be refused by both
# (and leave no output file behind parcrypt).
#
# Needs Go (go on PATH, or /usr/local/go/bin/go) and the module proxy, once: the tools are
# built with GOFLAGS=-mod=mod into AGE_INTEROP_CACHE (default ~/.cache/parcrypt/age-1.3.2)
# and reused. Without PARCRYPT_BINARY, `cargo build --bin parcrypt` builds one.
# Prints a line per check and a summary; exits 1 on any mismatch or unexpected failure,
# 2 when the tools cannot be built.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
version=v1.3.2
cache=${AGE_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/parcrypt/age-${version#v}}
sizes=${AGE_INTEROP_SIZES:-"0 1 65535 65536 65537 1048576 104857600"}
started=$(date +%s)

go=$(command -v go || true)
[ -n "$go" ] || go=/usr/local/go/bin/go
if [ ! -x "$cache/age" ] || [ ! -x "$cache/age-keygen" ] || [ ! -x "$cache/age-plugin-batchpass" ]; then
    if [ ! -x "$go" ]; then
        echo "age-interop: SKIPPED: no Go toolchain to build age $version" >&2
        exit 2
    fi
    mkdir -p "$cache"
    echo "age-interop: building age, age-keygen and age-plugin-batchpass $version into $cache"
    if ! (cd "$cache" && GOFLAGS=-mod=mod GOBIN="$cache" "$go" install \
        "filippo.io/age/cmd/age@$version" \
        "filippo.io/age/cmd/age-keygen@$version" \
        "filippo.io/age/cmd/age-plugin-batchpass@$version"); then
        echo "age-interop: cannot build age $version (is the Go module proxy reachable?)" >&2
        exit 2
    fi
fi
export PATH="$cache:$PATH"
got=$(age --version)
if [ "$got" != "$version" ]; then
    echo "age-interop: $cache/age is $got, not $version" >&2
    exit 2
fi

if [ $# -ge 1 ]; then
    parcrypt=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
else
    (cd "$root" && cargo build --quiet --bin parcrypt)
    parcrypt=${CARGO_TARGET_DIR:-$root/target}/debug/parcrypt
fi
[ -x "$parcrypt" ] || { echo "age-interop: no parcrypt binary at $parcrypt" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/age-interop.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

passed=0
failed=0
pass() { passed=$((passed + 1)); printf 'PASS  %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %s\n' "$*"; }

# Runs a command; on success compares OUT with the plaintext.
check() { # name out command...
    local name=$1 out=$2
    shift 2
    rm -f "$out"
    if "$@" 2>err.txt && cmp -s plain "$out"; then
        pass "$name"
    else
        fail "$name: $(head -c 300 err.txt | tr '\n' ' ')"
    fi
    rm -f "$out"
}

# Expects a command to fail; with STRICT=1, also to leave no output (parcrypt's promise: age
# itself streams to -o and leaves the authenticated part before a failure, by design).
refuse() { # name out command...
    local name=$1 out=$2
    shift 2
    rm -f "$out"
    if "$@" 2>err.txt; then
        fail "$name: accepted"
    elif [ "${STRICT:-0}" = 1 ] && [ -e "$out" ]; then
        fail "$name: refused but left output"
    else
        pass "$name ($(head -n 1 err.txt | cut -c 1-90))"
    fi
    rm -f "$out"
}

public() { sed -n 's/^# public key: //p' "$1"; }

age-keygen -o age-x.txt 2>/dev/null
age-keygen -pq -o age-pq.txt 2>/dev/null
"$parcrypt" keygen -o pc-x.txt >/dev/null
"$parcrypt" keygen --pq -o pc-pq.txt >/dev/null
printf 'correct horse battery staple\n' >pass.txt
export AGE_PASSPHRASE='correct horse battery staple'

for size in $sizes; do
    head -c "$size" /dev/urandom >plain
    for kind in x25519 hybrid scrypt; do
        case $kind in
            x25519) age_id=age-x.txt pc_id=pc-x.txt ;;
            hybrid) age_id=age-pq.txt pc_id=pc-pq.txt ;;
            scrypt) age_id='' pc_id='' ;;
        esac
        for armor in binary armored; do
            a=()
            [ "$armor" = armored ] && a=(-a)
            tag="$kind $armor $size"

            # age encrypts, parcrypt decrypts.
            if [ "$kind" = scrypt ]; then
                age -e -j batchpass "${a[@]}" -o by-age plain
                check "age->parcrypt $tag (passphrase)" out \
                    "$parcrypt" decrypt --passphrase-file pass.txt by-age -o out
            else
                age -e -r "$(public "$age_id")" -r "$(public "$pc_id")" "${a[@]}" -o by-age plain
                check "age->parcrypt $tag (parcrypt's key)" out \
                    "$parcrypt" decrypt -i "$pc_id" by-age -o out
                check "age->parcrypt $tag (age-keygen's key)" out \
                    "$parcrypt" decrypt -i "$age_id" by-age -o out
            fi

            # parcrypt encrypts, age decrypts.
            if [ "$kind" = scrypt ]; then
                "$parcrypt" encrypt --format age -p --passphrase-file pass.txt "${a[@]}" plain -o by-pc
                check "parcrypt->age $tag (passphrase)" out \
                    age -d -j batchpass -o out by-pc
            else
                "$parcrypt" encrypt --format age -r "$(public "$age_id")" -r "$(public "$pc_id")" \
                    "${a[@]}" plain -o by-pc
                check "parcrypt->age $tag (age-keygen's key)" out age -d -i "$age_id" -o out by-pc
                check "parcrypt->age $tag (parcrypt's key)" out age -d -i "$pc_id" -o out by-pc
            fi

            # A byte 50 from the end (in the payload) with every bit flipped is refused by both.
            if [ "$size" = 1048576 ] && [ "$armor" = binary ]; then
                for file in by-age by-pc; do
                    cp "$file" damaged
                    len=$(stat -c %s damaged)
                    byte=$(od -An -tu1 -j $((len - 50)) -N 1 damaged | tr -d ' ')
                    # shellcheck disable=SC2059 # the format is the flipped byte
                    printf "\\x$(printf %02x $((byte ^ 0xff)))" |
                        dd of=damaged bs=1 seek=$((len - 50)) conv=notrunc status=none
                    if [ "$kind" = scrypt ]; then
                        STRICT=1 refuse "parcrypt refuses damaged $file $tag, leaves nothing" out \
                            "$parcrypt" decrypt --passphrase-file pass.txt damaged -o out
                        refuse "age refuses damaged $file $tag" out age -d -j batchpass -o out damaged
                    else
                        STRICT=1 refuse "parcrypt refuses damaged $file $tag, leaves nothing" out \
                            "$parcrypt" decrypt -i "$pc_id" damaged -o out
                        refuse "age refuses damaged $file $tag" out age -d -i "$age_id" -o out damaged
                    fi
                done
            fi
            rm -f by-age by-pc
        done
    done
done

# A file for other recipients is refused by both, with one line.
head -c 1000 /dev/urandom >plain
age-keygen -o other.txt 2>/dev/null
age -e -r "$(public other.txt)" -o by-age plain
"$parcrypt" encrypt --format age -r "$(public other.txt)" plain -o by-pc
STRICT=1 refuse "parcrypt refuses a file for other recipients, leaves nothing" out "$parcrypt" decrypt -i pc-x.txt by-age -o out
refuse "age refuses a parcrypt file for other recipients" out age -d -i age-x.txt -o out by-pc

elapsed=$(($(date +%s) - started))
echo "age-interop: $passed passed, $failed failed ($parcrypt against age $version, ${elapsed} s)"
[ "$failed" -eq 0 ]
