//! `PARCRYPT_PASSPHRASE` leaves the environment once read, so that no child process inherits
//! it (issue 31 finding 7); the front ends read it through `parcrypt::environment`. Its own
//! test binary with one test: the process environment is global, and no other test may read
//! it meanwhile.

use std::process::Command;

use parcrypt::environment::{passphrase, take_passphrase_variable, PASSPHRASE};
use parcrypt::secrets::{read_passphrase, PassphraseSource};

fn child_environment() -> String {
    let output = Command::new("env").output().expect("run env");
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_variable_is_moved_out_of_the_environment_once_read() {
    // Set here, before any thread of this test binary reads the environment.
    std::env::set_var(PASSPHRASE, "correct horse battery");
    assert!(child_environment().contains(PASSPHRASE));

    assert!(take_passphrase_variable());
    assert_eq!(std::env::var_os(PASSPHRASE), None);
    assert!(
        !child_environment().contains(PASSPHRASE),
        "a child process still sees {PASSPHRASE}"
    );
    // A second move finds nothing to move, and keeps what the first one took.
    assert!(!take_passphrase_variable());

    let moved = passphrase().expect("the moved passphrase");
    let (passphrase_read, source) = read_passphrase(None, moved, false).unwrap();
    assert_eq!(passphrase_read.as_slice(), b"correct horse battery");
    assert_eq!(source, PassphraseSource::Environment);
    // Handed out once: the copy in memory went with it (and is wiped when dropped).
    assert!(passphrase().unwrap().is_none());
    // A passphrase file comes first; an empty variable is refused, not taken as "".
    let empty = Some(parcrypt::SecretBytes::new(Vec::new()));
    assert!(read_passphrase(None, empty, false).is_err());
}
