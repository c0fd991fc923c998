//! `PARCRYPT_PASSPHRASE` leaves the environment once read, so that no child process inherits
//! it (issue 31 finding 7). Its own test binary with one test: the process environment is
//! global, and no other test may read it meanwhile.

use std::process::Command;

use parcrypt_format::secrets::{
    passphrase_from_environment, read_passphrase, take_passphrase_variable, PassphraseSource,
    PASSPHRASE_VARIABLE,
};

fn child_environment() -> String {
    let output = Command::new("env").output().expect("run env");
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_variable_is_moved_out_of_the_environment_once_read() {
    // Set here, before any thread of this test binary reads the environment.
    std::env::set_var(PASSPHRASE_VARIABLE, "correct horse battery");
    assert!(child_environment().contains(PASSPHRASE_VARIABLE));

    assert!(take_passphrase_variable());
    assert_eq!(std::env::var_os(PASSPHRASE_VARIABLE), None);
    assert!(
        !child_environment().contains(PASSPHRASE_VARIABLE),
        "a child process still sees {PASSPHRASE_VARIABLE}"
    );
    // A second move finds nothing to move, and keeps what the first one took.
    assert!(!take_passphrase_variable());

    let (passphrase, source) = read_passphrase(None, false).expect("the moved passphrase");
    assert_eq!(passphrase.as_slice(), b"correct horse battery");
    assert_eq!(source, PassphraseSource::Environment);
    // Handed out once: the copy in memory went with it (and is wiped when dropped).
    assert!(passphrase_from_environment().unwrap().is_none());
}
