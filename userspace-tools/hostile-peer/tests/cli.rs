// SPDX-License-Identifier: GPL-2.0

//! The CLI without a target: listing and argument errors (also makes
//! `cargo test` build target/*/hostile-peer for the guest test).

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hostile-peer"))
}

#[test]
fn list_names_every_scenario() {
    let out = bin().arg("--list").output().unwrap();
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    for n in [
        "mpa_bad_key",
        "mpa_crc_bad_frame",
        "send_no_recv",
        "garbage_after_mpa",
    ] {
        assert!(s.contains(n), "{n} missing from --list");
    }
    assert!(s.lines().count() >= 20);
}

#[test]
fn bad_arguments() {
    assert_eq!(bin().output().unwrap().status.code(), Some(2));
    let out = bin()
        .args(["--target", "127.0.0.1:1", "--scenario", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn refused_connection_is_a_failure_not_a_hang() {
    // Nothing listens on port 1: every scenario fails fast with "got".
    let out = bin()
        .args([
            "--target",
            "127.0.0.1:1",
            "--scenario",
            "mpa_bad_key",
            "--timeout",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(
        s.starts_with("not ok 1 mpa_bad_key # got connect to"),
        "{s}"
    );
}
