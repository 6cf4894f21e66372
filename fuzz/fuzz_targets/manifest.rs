//! libFuzzer over `tempora_fuzzing::manifest` (crates/fuzzing: what it reads and why).
#![no_main]
#[path = "bounded_alloc.rs"]
mod bounded_alloc;
libfuzzer_sys::fuzz_target!(|data: &[u8]| tempora_fuzzing::manifest(data));
