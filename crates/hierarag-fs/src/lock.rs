//! One writer at a time: an advisory lock on a file, held by a process while it writes what the
//! file guards (a run directory, an annotation store).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// An exclusive advisory lock (`flock`) on a lock file, released when dropped and by the
/// operating system when the process ends in any way, a crash or a SIGKILL included. The file
/// holds the holder's process id and command line, so that the process refused can name it.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("run.lock");
/// let held = hierarag_fs::Lock::acquire(&path, dir.path())?;
/// let refused = hierarag_fs::Lock::acquire(&path, dir.path()).unwrap_err();
/// assert!(refused.to_string().contains(&format!("process {}", std::process::id())));
/// drop(held);
/// hierarag_fs::Lock::acquire(&path, dir.path())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Lock {
    file: Option<File>,
    path: PathBuf,
}

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it: the user's doing, not a fault.
    #[error(
        "{}: in use by {holder} (its lock is {}); one process writes it at a time: wait for \
         that one to finish, or stop it",
        guarded.display(),
        path.display()
    )]
    Held {
        /// What the lock guards (a run directory, a file).
        guarded: PathBuf,
        /// The lock file.
        path: PathBuf,
        /// "process PID (COMMAND)", as the holder wrote it.
        holder: String,
    },
    #[error("{}: cannot lock: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

impl Lock {
    /// Takes the lock at `path` (creating the file) for `guarded`, or fails at once naming the
    /// process that holds it. On a file system without locks (some network mounts) it goes on
    /// without one, with a warning.
    pub fn acquire(path: &Path, guarded: &Path) -> Result<Lock, LockError> {
        let io_error = |source| LockError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io_error)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(LockError::Held {
                    guarded: guarded.to_path_buf(),
                    path: path.to_path_buf(),
                    holder: holder_of(&mut file),
                });
            }
            Err(TryLockError::Error(error)) if error.kind() == io::ErrorKind::Unsupported => {
                tracing::warn!(
                    "{}: this file system has no file locks; nothing stops a second process \
                     from writing {} at the same time",
                    path.display(),
                    guarded.display()
                );
                return Ok(Lock {
                    file: None,
                    path: path.to_path_buf(),
                });
            }
            Err(TryLockError::Error(error)) => return Err(io_error(error)),
        }
        let command: Vec<String> = std::env::args().collect();
        let holder = format!("process {} ({})\n", std::process::id(), command.join(" "));
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)).map(drop))
            .and_then(|()| file.write_all(holder.as_bytes()))
            .map_err(io_error)?;
        Ok(Lock {
            file: Some(file),
            path: path.to_path_buf(),
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            // The holder's line goes with the lock; closing the file releases it.
            let _ = file.set_len(0);
        }
    }
}

/// The holder's own line, or a stand-in when it has not written it yet.
fn holder_of(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    match text.trim() {
        "" => "another process".to_owned(),
        line => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_and_taken_once_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.lock");
        let held = Lock::acquire(&path, dir.path()).unwrap();
        let error = Lock::acquire(&path, dir.path()).unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, LockError::Held { .. }), "{message}");
        assert!(
            message.contains(&format!("in use by process {} (", std::process::id())),
            "{message}"
        );
        drop(held);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        Lock::acquire(&path, dir.path()).unwrap();
    }
}
