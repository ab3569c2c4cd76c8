//! `sim report`: write the HTML page of a trace.

use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Trace file written by `sim run`.
    trace: PathBuf,
    /// Where to write the page.
    #[arg(short, long, default_value = "report.html")]
    output: PathBuf,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let page = sim::observe::report_html::build(&a.trace)?;
    let out = a.output.display();
    std::fs::write(&a.output, page).map_err(|e| anyhow::anyhow!("{out}: {e}"))?;
    // The page is written; a closed standard error only loses this note.
    let _ = writeln!(std::io::stderr(), "wrote {out}");
    Ok(())
}
