//! `cargo fuzz run engine`: [`sim_fuzz::engine`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sim_fuzz::engine(data);
});
