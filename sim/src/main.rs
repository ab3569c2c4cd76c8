//! The `sim` command line: logging, argument parsing and the exit code. The subcommands are in
//! `cli/`, one file each.

mod cli;

use anstream::{AutoStream, ColorChoice};
use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Escape codes only where they are shown: a terminal, with NO_COLOR unset.
    let ansi = AutoStream::choice(&std::io::stderr()) != ColorChoice::Never;
    tracing_subscriber::fmt()
        .with_ansi(ansi)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    // Usage errors exit with 2 here, through clap.
    let args = cli::Cli::parse();
    match cli::execute(args.command) {
        Ok(code) => code,
        Err(e) => {
            // The error's own text only: the library errors carry their causes in it. A closed
            // standard error loses the message, not the exit status (eprintln! would panic).
            let _ = writeln!(std::io::stderr(), "error: {e}");
            ExitCode::FAILURE
        }
    }
}
