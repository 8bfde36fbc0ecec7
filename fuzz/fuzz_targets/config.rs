//! The driver's configuration string: any text parses to a configuration, which prints as a
//! text parsing back to it, or fails with a message; nothing panics.
#![no_main]

use h5tile_gds::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match Config::parse(&text) {
        Ok(c) => assert_eq!(Config::parse(&c.to_string()), Ok(c), "{text:?}"),
        Err(message) => assert!(!message.is_empty(), "{text:?}"),
    }
});
