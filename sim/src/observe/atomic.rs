//! Files written whole or not at all: the bytes go to a temporary file beside the target,
//! which is renamed over it once complete. A reader sees the old file or the new one, never a
//! part, and writers of the same file never interleave (the last to finish wins).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Temporary files made by this process so far (their names differ also between threads).
static TEMPORARIES: AtomicU64 = AtomicU64::new(0);

/// A fresh name beside `path` for its temporary file: `.NAME.PID-N.tmp`, hidden, in the same
/// folder so that the rename stays on one file system.
pub fn temporary_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or("output".into(), |n| n.to_string_lossy());
    let n = TEMPORARIES.fetch_add(1, Ordering::Relaxed);
    let temporary = format!(".{name}.{}-{n}.tmp", std::process::id());
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => dir.join(temporary),
        None => PathBuf::from(temporary),
    }
}

/// Writes `bytes` to `path` through a temporary file renamed over it. On an error the
/// temporary file is removed and whatever was at `path` is left as it was.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let temporary = temporary_beside(path);
    let written = std::fs::File::create(&temporary)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_the_target_and_no_temporary() {
        let dir = std::env::temp_dir().join(format!("sim-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("out.txt");
        write(&file, b"one").unwrap();
        write(&file, b"two").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        // A folder cannot be replaced by a file: the rename fails.
        let folder = dir.join("folder");
        std::fs::create_dir_all(&folder).unwrap();
        assert!(write(&folder, b"three").is_err());
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["folder", "out.txt"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
