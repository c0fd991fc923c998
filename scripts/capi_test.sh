#!/usr/bin/env bash
# The C ABI from C (run by scripts/test.sh): builds libparcrypt and the parcrypt binary (the
# test profile, over the whole workspace with every target, so that cargo's features come out
# as in scripts/test.sh's `cargo test` and the crates it compiled are used as they are; a
# build of these two packages alone would compile the engine and GPU crates again), compiles
# crates/capi/tests/c/test_parcrypt.c with plain cc against the committed header, once
# against the shared library (rpath) and once against the static one, and runs both. Each
# run prints "c api: N checks passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --profile test --workspace --all-targets
target="${CARGO_TARGET_DIR:-$PWD/target}/debug"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
flags=(-std=c11 -Wall -Wextra -Werror -D_DEFAULT_SOURCE -Icrates/capi/include)
source=crates/capi/tests/c/test_parcrypt.c
cc "${flags[@]}" "$source" -o "$scratch/test_shared" \
    -L"$target" -lparcrypt -Wl,-rpath,"$target" -lpthread
# The static library by its path, with what Rust's standard library needs (as parcrypt.pc's
# Libs.private says).
cc "${flags[@]}" "$source" -o "$scratch/test_static" \
    "$target/libparcrypt.a" -lpthread -ldl -lm -lrt -lutil -lgcc_s
if ldd "$scratch/test_static" | grep -q libparcrypt; then
    echo "test_static links libparcrypt dynamically" >&2
    exit 1
fi
kinds=(shared static)
# parcrypt.pc, as scripts/capi.sh installs it, over a prefix of links to the built files.
if command -v pkg-config >/dev/null; then
    prefix="$scratch/prefix"
    mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
    ln -s "$target/libparcrypt.so" "$target/libparcrypt.a" "$prefix/lib/"
    ln -s "$PWD/crates/capi/include/parcrypt.h" "$prefix/include/"
    bash scripts/capi.sh pc "$prefix" >"$prefix/lib/pkgconfig/parcrypt.pc"
    # shellcheck disable=SC2046
    cc "${flags[@]}" "$source" -o "$scratch/test_pkg-config" -Wl,-rpath,"$prefix/lib" \
        $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs parcrypt) -lpthread
    kinds+=(pkg-config)
else
    echo "pkg-config: SKIPPED: pkg-config is not installed (parcrypt.pc not checked)"
fi
for kind in "${kinds[@]}"; do
    mkdir "$scratch/$kind.files"
    printf '%s library: ' "$kind"
    "$scratch/test_$kind" "$target/parcrypt" "$scratch/$kind.files"
done
