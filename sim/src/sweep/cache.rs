//! Results of points already simulated, on disk: one JSON file per point, named by the SHA-256
//! of its key (simulator version and build, preset and its text, scenario text, parameters, seed
//! and run options) and holding the key itself, so that a different key never reads as a hit. Files
//! are written whole or not at all (`observe::atomic`): parallel sweeps sharing the folder
//! never see half an entry.

use super::{Metrics, Outcome};
use crate::gpu::preset::Preset;
use crate::observe::atomic;
use crate::run::RunOptions;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The folder entries go to: `$XDG_CACHE_HOME/sim` when that is set, else `traces/.cache`
/// (beside the traces `sim run` writes, in the working directory).
pub fn default_dir() -> PathBuf {
    match std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join("sim"),
        None => PathBuf::from("traces/.cache"),
    }
}

fn sha256(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

static BUILD: OnceLock<String> = OnceLock::new();

/// The SHA-256 of the file that holds the simulator's code, read once: the version number
/// stays while the model changes between releases, and a rebuilt simulator must not read
/// results of the one before. The running executable, unless [`set_build_file`] named another.
fn build() -> &'static str {
    BUILD.get_or_init(|| {
        std::env::current_exe().map_or_else(|e| format!("unknown ({e})"), hash_file)
    })
}

fn hash_file(path: PathBuf) -> String {
    std::fs::read(&path).map_or_else(
        |e| format!("unknown ({e})"),
        |bytes| format!("{:x}", Sha256::digest(&bytes)),
    )
}

/// Keys the cache by `path`'s contents instead of the executable's: the library loaded into
/// another program (the Python module, which runs inside the Python interpreter) names its
/// own file. Only before the first key is made; false if the build was already fixed.
pub fn set_build_file(path: &Path) -> bool {
    BUILD.set(hash_file(path.to_path_buf())).is_ok()
}

/// Everything a point's result depends on, as text: equal keys give equal results.
pub fn key(preset: &str, scenario: &str, opts: &RunOptions) -> String {
    let sets: Vec<String> = opts.sets.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "sim {} build {}\npreset {preset} {}\nscenario {}\nsets {}\nseed {}\nmax_cycles {}\nlivelock_cycles {}\nclock_mhz {:?}\ncheck {}\n",
        env!("CARGO_PKG_VERSION"),
        build(),
        sha256(Preset::source(preset).unwrap_or_default()),
        sha256(scenario),
        sets.join(" "),
        opts.seed,
        opts.max_cycles,
        opts.livelock_cycles,
        opts.clock_mhz,
        opts.check,
    )
}

#[derive(Serialize, Deserialize)]
struct Entry {
    key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metrics: Option<Metrics>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// A cache folder.
#[derive(Clone, Debug)]
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub fn new(dir: &Path) -> Cache {
        Cache {
            dir: dir.join("sweep"),
        }
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{}.json", sha256(key)))
    }

    /// The result stored under `key`; none if absent, unreadable or another key's.
    pub fn get(&self, key: &str) -> Option<Outcome> {
        let text = std::fs::read_to_string(self.path(key)).ok()?;
        let e: Entry = serde_json::from_str(&text).ok()?;
        if e.key != key {
            return None;
        }
        match (e.metrics, e.error) {
            (Some(m), None) => Some(Ok(m)),
            (None, Some(err)) => Some(Err(err)),
            _ => None,
        }
    }

    pub fn put(&self, key: &str, outcome: &Outcome) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let (metrics, error) = match outcome {
            Ok(m) => (Some(m.clone()), None),
            Err(e) => (None, Some(e.clone())),
        };
        let entry = Entry {
            key: key.to_string(),
            metrics,
            error,
        };
        let text = serde_json::to_string(&entry).map_err(std::io::Error::other)?;
        atomic::write(&self.path(key), text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_found_only_under_its_own_key() {
        let dir = std::env::temp_dir().join(format!("sim-cache-test-{}", std::process::id()));
        let c = Cache::new(&dir);
        let opts = RunOptions::default();
        let k = key("h100-sxm", "Scenario()", &opts);
        assert_eq!(c.get(&k), None);
        c.put(&k, &Err("deadlock".into())).unwrap();
        assert_eq!(c.get(&k), Some(Err("deadlock".to_string())));
        let other = key("h200-sxm", "Scenario()", &opts);
        assert_ne!(k, other);
        assert_eq!(c.get(&other), None);
        // A file whose key differs from the one asked for (a hash collision) is a miss.
        std::fs::copy(c.path(&k), c.path(&other)).unwrap();
        assert_eq!(c.get(&other), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
