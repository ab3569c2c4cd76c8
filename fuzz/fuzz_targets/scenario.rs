//! `cargo fuzz run scenario`: [`sim_fuzz::scenario`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sim_fuzz::scenario(data);
});
