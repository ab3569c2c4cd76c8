//! Command examples in the docs run as tests: trycmd runs every ```console block of the files
//! below (`$ sim ARGS`, then what it prints on stdout and stderr together, `? N` for a non-zero
//! exit status, `...` and `[..]` for what varies) and fails on any difference. The commands run
//! from the repository root and write only under `traces/`. To take the binary's current output
//! into the docs after a deliberate change: `TRYCMD=overwrite cargo test --test docs`, then
//! review `git diff docs` (the elisions are kept where trycmd can).

mod common;

#[test]
fn command_examples_in_the_docs() {
    // The examples' paths are relative to the repository root, and their output is that of a
    // plain run: no log lines, no colour. This is the target's only test, so nothing else sees
    // the process's directory or environment change.
    std::env::set_current_dir(common::root()).unwrap();
    std::env::remove_var("RUST_LOG");
    trycmd::TestCases::new()
        .register_bin("sim", std::path::Path::new(env!("CARGO_BIN_EXE_sim")))
        .env("NO_COLOR", "1")
        .case("docs/cli.md")
        .case("docs/scenario-format.md")
        .case("docs/stalls.md")
        .case("docs/tune.md")
        .run();
}
