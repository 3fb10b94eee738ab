// SPDX-License-Identifier: GPL-2.0

//! See `rsiw_wire::fuzzing::rx_one`: arbitrary bytes, cut into arbitrary
//! chunks, through the receive deframer and parsers with all marker/CRC
//! combinations.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    rsiw_wire::fuzzing::rx_one(data);
});
