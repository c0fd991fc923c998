#!/usr/bin/env bash
# Interoperability of parcrypt's age files with the reference Go tools, age and age-keygen
# 1.3.2 (filippo.io/age), and with rage (Rust, the age crate) where it is installed: files
# that they write decrypt with parcrypt, and files that parcrypt writes decrypt with them,
# byte for byte; keys that age-keygen makes work in parcrypt and the other way round.
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
# rage: RAGE names the binary (default: rage on PATH, else ~/.cache/parcrypt/rage/bin/rage,
# where `cargo install --locked --root ~/.cache/parcrypt/rage rage` puts it); without one
# the rage half is skipped, saying so. rage has no native post-quantum keys: it reaches
# them through age-plugin-pq (built here with the Go tools; recipients as they are,
# identities converted with `age-plugin-pq -identity`). Its passphrase prompt goes through
# pinentry, answered here by a stand-in that replies with $AGE_PASSPHRASE.
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
if [ ! -x "$cache/age" ] || [ ! -x "$cache/age-keygen" ] || [ ! -x "$cache/age-plugin-batchpass" ] ||
    [ ! -x "$cache/age-plugin-pq" ]; then
    if [ ! -x "$go" ]; then
        echo "age-interop: SKIPPED: no Go toolchain to build age $version" >&2
        exit 2
    fi
    mkdir -p "$cache"
    echo "age-interop: building age, age-keygen, age-plugin-batchpass and age-plugin-pq $version into $cache"
    if ! (cd "$cache" && GOFLAGS=-mod=mod GOBIN="$cache" "$go" install \
        "filippo.io/age/cmd/age@$version" \
        "filippo.io/age/cmd/age-keygen@$version" \
        "filippo.io/age/cmd/age-plugin-batchpass@$version" \
        "filippo.io/age/extra/age-plugin-pq@$version"); then
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

rage=${RAGE:-$(command -v rage || true)}
[ -n "$rage" ] || rage=${XDG_CACHE_HOME:-$HOME/.cache}/parcrypt/rage/bin/rage
tools=(age)
if [ -x "$rage" ]; then
    tools+=(rage)
    echo "age-interop: and $("$rage" --version | head -n 1) ($rage)"
    # rage's hybrid identities: the same keys as plugin identities.
    for id in age-pq pc-pq; do age-plugin-pq -identity -o "$id.plugin" "$id.txt"; done
    # A pinentry for rage's passphrase prompt (the Assuan protocol: a PIN for GETPIN).
    mkdir pinentry
    cat >pinentry/pinentry <<'PINENTRY'
#!/bin/sh
echo "OK ready"
while IFS= read -r line; do
    case $line in
        GETPIN*) printf 'D %s\nOK\n' "$AGE_PASSPHRASE" ;;
        BYE*) echo OK; exit 0 ;;
        *) echo OK ;;
    esac
done
PINENTRY
    chmod +x pinentry/pinentry
else
    echo "age-interop: SKIPPED rage: no rage binary (set RAGE, or cargo install --locked --root ~/.cache/parcrypt/rage rage)"
fi

# TOOL (age or rage) encrypts plain into OUT for KIND, both tools' keys (X25519, hybrid) or
# the passphrase (scrypt); the rest of the arguments (-a) go to the tool.
seal() { # tool kind out args...
    local tool=$1 kind=$2 out=$3
    shift 3
    case $tool:$kind in
        age:scrypt) age -e -j batchpass "$@" -o "$out" plain ;;
        rage:scrypt) PATH="$work/pinentry:$PATH" "$rage" -e -p "$@" -o "$out" plain </dev/null ;;
        age:*) age -e -r "$(public "$age_id")" -r "$(public "$pc_id")" "$@" -o "$out" plain ;;
        rage:*) "$rage" -e -r "$(public "$age_id")" -r "$(public "$pc_id")" "$@" -o "$out" plain ;;
    esac
}

# TOOL decrypts IN into OUT with the identity file ID (KIND scrypt: the passphrase). rage
# writes to stdout here: with -o it makes no file at all for an empty plaintext.
open_with() { # tool kind id in out
    local tool=$1 kind=$2 id=$3 in=$4 out=$5
    case $tool:$kind in
        age:scrypt) age -d -j batchpass -o "$out" "$in" ;;
        rage:scrypt) PATH="$work/pinentry:$PATH" "$rage" -d "$in" </dev/null >"$out" ;;
        age:*) age -d -i "$id" -o "$out" "$in" ;;
        rage:hybrid) "$rage" -d -i "${id%.txt}.plugin" "$in" >"$out" ;;
        rage:*) "$rage" -d -i "$id" "$in" >"$out" ;;
    esac
}

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

            # parcrypt encrypts (once for every tool).
            if [ "$kind" = scrypt ]; then
                "$parcrypt" encrypt --format age -p --passphrase-file pass.txt "${a[@]}" plain -o by-pc
            else
                "$parcrypt" encrypt --format age -r "$(public "$age_id")" -r "$(public "$pc_id")" \
                    "${a[@]}" plain -o by-pc
            fi
            for tool in "${tools[@]}"; do
                # The tool encrypts, parcrypt decrypts.
                seal "$tool" "$kind" by-tool "${a[@]}"
                if [ "$kind" = scrypt ]; then
                    check "$tool->parcrypt $tag (passphrase)" out \
                        "$parcrypt" decrypt --passphrase-file pass.txt by-tool -o out
                else
                    check "$tool->parcrypt $tag (parcrypt's key)" out \
                        "$parcrypt" decrypt -i "$pc_id" by-tool -o out
                    check "$tool->parcrypt $tag (age-keygen's key)" out \
                        "$parcrypt" decrypt -i "$age_id" by-tool -o out
                fi

                # parcrypt's file, the tool decrypts.
                if [ "$kind" = scrypt ]; then
                    check "parcrypt->$tool $tag (passphrase)" out open_with "$tool" scrypt '' by-pc out
                else
                    check "parcrypt->$tool $tag (age-keygen's key)" out \
                        open_with "$tool" "$kind" "$age_id" by-pc out
                    check "parcrypt->$tool $tag (parcrypt's key)" out \
                        open_with "$tool" "$kind" "$pc_id" by-pc out
                fi

                # A byte 50 from the end (in the payload) with every bit flipped is refused by
                # both.
                if [ "$size" = 1048576 ] && [ "$armor" = binary ]; then
                    for file in by-tool by-pc; do
                        cp "$file" damaged
                        len=$(stat -c %s damaged)
                        byte=$(od -An -tu1 -j $((len - 50)) -N 1 damaged | tr -d ' ')
                        # shellcheck disable=SC2059 # the format is the flipped byte
                        printf "\\x$(printf %02x $((byte ^ 0xff)))" |
                            dd of=damaged bs=1 seek=$((len - 50)) conv=notrunc status=none
                        name=${file/by-tool/by-$tool}
                        if [ "$kind" = scrypt ]; then
                            STRICT=1 refuse "parcrypt refuses damaged $name $tag, leaves nothing" out \
                                "$parcrypt" decrypt --passphrase-file pass.txt damaged -o out
                        else
                            STRICT=1 refuse "parcrypt refuses damaged $name $tag, leaves nothing" out \
                                "$parcrypt" decrypt -i "$pc_id" damaged -o out
                        fi
                        refuse "$tool refuses damaged $name $tag" out \
                            open_with "$tool" "$kind" "$age_id" damaged out
                    done
                fi
                rm -f by-tool
            done
            rm -f by-pc
        done
    done
done

# A file for other recipients is refused by every tool, with one line.
head -c 1000 /dev/urandom >plain
age-keygen -o other.txt 2>/dev/null
age-keygen -o other2.txt 2>/dev/null
"$parcrypt" encrypt --format age -r "$(public other.txt)" plain -o by-pc
for tool in "${tools[@]}"; do
    age_id=other.txt pc_id=other2.txt seal "$tool" x25519 by-tool
    STRICT=1 refuse "parcrypt refuses a $tool file for other recipients, leaves nothing" out \
        "$parcrypt" decrypt -i pc-x.txt by-tool -o out
    refuse "$tool refuses a parcrypt file for other recipients" out \
        open_with "$tool" x25519 age-x.txt by-pc out
done

elapsed=$(($(date +%s) - started))
echo "age-interop: $passed passed, $failed failed ($parcrypt against ${tools[*]}; age $version, ${elapsed} s)"
[ "$failed" -eq 0 ]
