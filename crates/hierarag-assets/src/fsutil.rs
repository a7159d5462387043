//! Filesystem helpers: streaming sha256, atomic file writes, and staging directories.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

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

/// A name for a temporary sibling of `target` that no other live process or thread will pick.
fn sibling_tmp_name(target: &Path, attempt: u64) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let file_name = target
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(
        ".{file_name}.tmp-{}-{n}-{attempt}",
        std::process::id()
    ))
}

/// Creates the parent directory of `path` if it is missing.
pub(crate) fn create_parent(path: &Path) -> Result<(), AssetError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| AssetError::io("create directory", parent, e))?;
    }
    Ok(())
}

/// Writes `path` through a temporary file in the same directory and a rename, so readers see
/// either the old file or the complete new one, never a partial write.
pub(crate) fn write_atomic<F>(path: &Path, write: F) -> Result<(), AssetError>
where
    F: FnOnce(&mut dyn Write) -> Result<(), AssetError>,
{
    create_parent(path)?;
    let (tmp, file) = create_new_sibling(path)?;
    let result = (|| {
        let mut out = BufWriter::new(file);
        write(&mut out)?;
        let file = out
            .into_inner()
            .map_err(|e| AssetError::io("write", &tmp, e.into_error()))?;
        file.sync_all()
            .map_err(|e| AssetError::io("sync", &tmp, e))?;
        fs::rename(&tmp, path).map_err(|e| AssetError::io("rename into place", path, e))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn create_new_sibling(path: &Path) -> Result<(PathBuf, File), AssetError> {
    let mut attempt = 0;
    loop {
        let tmp = sibling_tmp_name(path, attempt);
        match File::create_new(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            // A leftover from a crashed process that had the same pid; pick another name.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            Err(e) => return Err(AssetError::io("create", tmp, e)),
        }
    }
}

/// A fresh directory next to its final location, removed on drop unless [`StagingDir::persist`]
/// renamed it into place.
#[derive(Debug)]
pub(crate) struct StagingDir {
    path: PathBuf,
    persisted: bool,
}

impl StagingDir {
    /// Creates an empty directory beside `target` (same parent, so a rename is atomic).
    pub(crate) fn beside(target: &Path) -> Result<Self, AssetError> {
        create_parent(target)?;
        let mut attempt = 0;
        loop {
            let path = sibling_tmp_name(target, attempt);
            match fs::create_dir(&path) {
                Ok(()) => {
                    return Ok(StagingDir {
                        path,
                        persisted: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
                Err(e) => return Err(AssetError::io("create directory", path, e)),
            }
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the staging directory to `target`; `target` must not exist or be an empty
    /// directory.
    pub(crate) fn persist(mut self, target: &Path) -> io::Result<()> {
        fs::rename(&self.path, target)?;
        self.persisted = true;
        Ok(())
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        if !self.persisted {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}
