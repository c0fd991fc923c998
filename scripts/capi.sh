#!/usr/bin/env bash
# The C library: builds libparcrypt.so and libparcrypt.a (release) and installs them with
# parcrypt.h and parcrypt.pc under PREFIX (default /usr/local):
#   bash scripts/capi.sh install [PREFIX]
# Then: cc app.c $(pkg-config --cflags --libs parcrypt)            (shared)
#       cc app.c $(pkg-config --cflags --libs --static parcrypt)   (static, with the .so absent)
# Or without installing: cargo build --release -p parcrypt-capi gives
# target/release/libparcrypt.{so,a}; the header is crates/capi/include/parcrypt.h.
set -euo pipefail
cd "$(dirname "$0")/.."

pc_file() { # pc_file PREFIX > parcrypt.pc
    local version
    version="$(sed -n 's/^version = "\(.*\)"/\1/p' crates/capi/Cargo.toml | head -n 1)"
    sed -e "s|@PREFIX@|$1|" -e "s|@VERSION@|$version|" crates/capi/parcrypt.pc.in
}

case "${1:-}" in
install)
    prefix="${2:-/usr/local}"
    cargo build --release --quiet -p parcrypt-capi
    target="${CARGO_TARGET_DIR:-target}/release"
    install -d "$prefix/lib" "$prefix/include" "$prefix/lib/pkgconfig"
    install -m 0755 "$target/libparcrypt.so" "$prefix/lib/"
    install -m 0644 "$target/libparcrypt.a" "$prefix/lib/"
    install -m 0644 crates/capi/include/parcrypt.h "$prefix/include/"
    pc_file "$prefix" >"$prefix/lib/pkgconfig/parcrypt.pc"
    echo "installed libparcrypt.so, libparcrypt.a, parcrypt.h and parcrypt.pc under $prefix"
    ;;
pc)
    pc_file "${2:-/usr/local}"
    ;;
*)
    echo "usage: bash scripts/capi.sh install [PREFIX] | pc [PREFIX]" >&2
    exit 2
    ;;
esac
