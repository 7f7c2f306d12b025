//! Fuzz target: `tokamak::edit::fuzzing::locate_search` (see src/edit/fuzzing.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tokamak::edit::fuzzing::locate_search(data));
