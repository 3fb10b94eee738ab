// SPDX-License-Identifier: GPL-2.0

//! See `rsiw_wire::fuzzing::connect_one`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    rsiw_wire::fuzzing::connect_one(data);
});
