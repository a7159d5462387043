//! Filesystem helpers: streaming sha256, atomic file writes, and staging directories.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::Path;

use hierarag_fs::AtomicFile;
use sha2::{Digest, Sha256};
use tempfile::TempDir;

use crate::AssetError;

/// Hashes a file in fixed-size blocks, so memory stays flat whatever the file's size.
pub(crate) fn sha256_file(path: &Path) -> Result<String, AssetError> {
    let mut file = File::open(path).map_err(|e| AssetError::io("open", path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(AssetError::io("read", path, e)),
        };
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Creates the parent directory of `path` if it is missing.
pub(crate) fn create_parent(path: &Path) -> Result<(), AssetError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| AssetError::io("create directory", parent, e))?;
    }
    Ok(())
}

/// Writes `path` with `write` through [`AtomicFile::create_unique`] (a temporary file of its
/// own in the same directory, then a rename), so readers see either the old file or the
/// complete new one, never a partial write, and two processes writing it at once do not meet.
pub(crate) fn write_with<F>(path: &Path, write: F) -> Result<(), AssetError>
where
    F: FnOnce(&mut dyn Write) -> Result<(), AssetError>,
{
    create_parent(path)?;
    let mut file =
        AtomicFile::create_unique(path).map_err(|e| AssetError::io("create", path, e))?;
    write(&mut file)?;
    file.finish().map_err(|e| AssetError::io("write", path, e))
}

/// A fresh directory next to its final location (`.<name>.XXXXXX.tmp`), removed on drop unless
/// [`StagingDir::persist`] renamed it into place.
#[derive(Debug)]
pub(crate) struct StagingDir(TempDir);

impl StagingDir {
    /// Creates an empty directory beside `target` (same parent, so a rename is atomic).
    pub(crate) fn beside(target: &Path) -> Result<Self, AssetError> {
        create_parent(target)?;
        let name = target.file_name().unwrap_or_default().to_string_lossy();
        tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempdir_in(target.parent().unwrap_or(Path::new(".")))
            .map(StagingDir)
            .map_err(|e| AssetError::io("create directory", target, e))
    }

    pub(crate) fn path(&self) -> &Path {
        self.0.path()
    }

    /// Renames the staging directory to `target`; `target` must not exist or be an empty
    /// directory.
    pub(crate) fn persist(mut self, target: &Path) -> io::Result<()> {
        fs::rename(self.0.path(), target)?;
        self.0.disable_cleanup(true);
        Ok(())
    }
}
