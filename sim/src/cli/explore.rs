//! `sim explore`: write the page of the analytic models' widgets.

use sim::observe::atomic;
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Where to write the page.
    #[arg(short, long, default_value = "explore.html")]
    output: PathBuf,
    /// The preset the page opens on (it holds every preset).
    #[arg(long, default_value = "h100-sxm")]
    gpu: String,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let page = sim::analytic::explore::page(&a.gpu)?;
    let out = a.output.display();
    // Whole or not at all, as `sim report`.
    atomic::write(&a.output, page.as_bytes()).map_err(|e| anyhow::anyhow!("{out}: {e}"))?;
    // The page is written; a closed standard error only loses this note.
    let _ = writeln!(std::io::stderr(), "wrote {out}");
    Ok(())
}
