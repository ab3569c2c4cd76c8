//! `sim report`: write the HTML page of a trace.

use sim::observe::atomic;
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
    if sim::run::same_file(&a.output, &a.trace) {
        anyhow::bail!(
            "{}: -o names the trace being read, which the page would replace",
            a.output.display()
        );
    }
    let page = sim::observe::report_html::build(&a.trace)?;
    let out = a.output.display();
    // Whole or not at all, as `sim run -o`: a page a browser is reloading, or a failed write,
    // never leaves half a page.
    atomic::write(&a.output, page.as_bytes()).map_err(|e| anyhow::anyhow!("{out}: {e}"))?;
    // The page is written; a closed standard error only loses this note.
    let _ = writeln!(std::io::stderr(), "wrote {out}");
    Ok(())
}
