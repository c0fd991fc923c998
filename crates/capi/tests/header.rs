//! The committed C header (include/parcrypt.h) is what cbindgen makes of the sources now.

#![allow(clippy::disallowed_macros)]

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("crates/capi/cbindgen.toml parses");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen reads the crate")
        .write(&mut generated);
    let committed_path = crate_dir.join("include/parcrypt.h");
    if std::env::var_os("PARCRYPT_WRITE_HEADER").is_some() {
        std::fs::write(&committed_path, &generated).expect("write include/parcrypt.h");
        println!("wrote {}", committed_path.display());
        return;
    }
    let committed = std::fs::read(&committed_path).unwrap_or_default();
    assert!(
        committed == generated,
        "crates/capi/include/parcrypt.h is stale (the C ABI changed): regenerate it with \
         `PARCRYPT_WRITE_HEADER=1 cargo test -p parcrypt-capi --test header` and commit it"
    );
}
