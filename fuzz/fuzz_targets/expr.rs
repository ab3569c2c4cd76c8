//! `cargo fuzz run expr`: [`sim_fuzz::expr`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sim_fuzz::expr(data);
});
