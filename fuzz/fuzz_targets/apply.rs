//! Fuzz target: `tokamak::edit::fuzzing::apply` (see src/edit/fuzzing.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tokamak::edit::fuzzing::apply(data));
