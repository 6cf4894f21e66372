//! libFuzzer over `tempora_fuzzing::wal` (crates/fuzzing: what it reads and why).
#![no_main]
#[path = "bounded_alloc.rs"]
mod bounded_alloc;
libfuzzer_sys::fuzz_target!(|data: &[u8]| tempora_fuzzing::wal(data));
