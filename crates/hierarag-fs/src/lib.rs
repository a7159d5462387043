//! Files written whole or not at all, the one way every crate of HieraRAG replaces a file: the
//! bytes go to a temporary file in the target's directory, which is synced and renamed over
//! the target ([`tempfile::NamedTempFile::persist`]), so that a reader sees the old file or
//! the whole new one; one dropped unfinished (an error half-way through a corpus) is removed.
//!
//! [`write_atomic`] writes bytes at once; [`AtomicFile`] is a buffered [`Write`] for output
//! streamed a record at a time. Both create the file as [`File::create`] does (its mode is the
//! umask's, not tempfile's owner-only default).
//!
//! The temporary file of [`AtomicFile::create`] and [`write_atomic`] is `<name>.tmp`: one
//! writer of a file at a time (a run directory, an index), and what a killed writer left is
//! overwritten by the next attempt instead of piling up. [`AtomicFile::create_unique`] picks
//! a name of its own (`.<name>.XXXXXX.tmp`) for directories that several processes write at
//! once (the asset store).
//!
//! ```
//! use std::io::Write;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("report.md");
//! hierarag_fs::write_atomic(&path, b"# first\n")?;
//!
//! let mut file = hierarag_fs::AtomicFile::create(&path)?;
//! writeln!(file, "# second")?;
//! assert_eq!(std::fs::read(&path)?, b"# first\n", "unchanged until finished");
//! file.finish()?;
//! assert_eq!(std::fs::read(&path)?, b"# second\n");
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! [`Lock`] is the other half of "one writer": an advisory lock a process holds while it
//! writes a run directory or an annotation store, released however the process ends.
//!
//! [`Blame`] is how an error says whether it is the input's failure or not ([`Fault`]), which
//! decides the command's exit code; every crate's error type implements it.

mod fault;
mod lock;
pub mod secrets;
pub mod spreadsheet;

pub use fault::{Blame, Fault};
pub use lock::{Lock, LockError};
pub use spreadsheet::{FORMULA_STARTS, neutralize_cell, restore_cell};

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use tempfile::{Builder, NamedTempFile};

/// Writes `bytes` to `path` through `<name>.tmp`, synced and renamed into place, with every
/// registered secret scrubbed ([`secrets`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = beside(path)?;
    file.write_all(&secrets::scrub_bytes(bytes))?;
    persist(file, path)
}

/// The error of writing `path` as the caller should see it: a "not found" because the
/// directory `path` is in is gone (moved or deleted while a stage was writing it) is an I/O
/// failure of its own kind, not the missing input file "not found" usually means.
pub fn writing(path: &Path, error: io::Error) -> io::Error {
    let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty());
    match dir {
        Some(dir) if error.kind() == io::ErrorKind::NotFound && !dir.is_dir() => {
            io::Error::other(format!(
                "{}: the directory is gone (moved or deleted while it was being written)",
                dir.display()
            ))
        }
        _ => error,
    }
}

/// A file being written under a temporary name beside its final path; [`AtomicFile::finish`]
/// renames it into place, and dropping it unfinished removes it.
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    file: Sink,
}

/// What an [`AtomicFile`] writes through: text has every registered secret scrubbed; bytes
/// that are not text (vectors, a verified download) go as they are.
#[derive(Debug)]
enum Sink {
    Text(secrets::ScrubWriter<BufWriter<NamedTempFile>>),
    Bytes(BufWriter<NamedTempFile>),
}

impl AtomicFile {
    /// Starts `path` as `<name>.tmp` beside it (truncating one left by a killed writer); what
    /// is written has every registered secret scrubbed ([`secrets`]).
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let file = AtomicFile::buffered(beside(path)?);
        Ok(AtomicFile::new(
            path,
            Sink::Text(secrets::ScrubWriter::new(file)),
        ))
    }

    /// [`AtomicFile::create`] for bytes that are not text (vectors): written as they are.
    pub fn create_binary(path: &Path) -> io::Result<AtomicFile> {
        let file = AtomicFile::buffered(beside(path)?);
        Ok(AtomicFile::new(path, Sink::Bytes(file)))
    }

    /// Starts `path` under a temporary name no other process or thread picks,
    /// `.<name>.XXXXXX.tmp`: the stores that several processes fill (the asset store's
    /// verified downloads, shared vectors), whose bytes are written as they are.
    pub fn create_unique(path: &Path) -> io::Result<AtomicFile> {
        let file = unique_beside(path, ".tmp", |tmp| File::create_new(tmp))
            .map_err(|e| writing(path, e))?;
        Ok(AtomicFile::new(
            path,
            Sink::Bytes(AtomicFile::buffered(file)),
        ))
    }

    fn buffered(file: NamedTempFile) -> BufWriter<NamedTempFile> {
        BufWriter::with_capacity(1 << 20, file)
    }

    fn new(path: &Path, file: Sink) -> AtomicFile {
        AtomicFile {
            path: path.to_path_buf(),
            file,
        }
    }

    fn writer(&mut self) -> &mut dyn Write {
        match &mut self.file {
            Sink::Text(file) => file,
            Sink::Bytes(file) => file,
        }
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes and syncs the temporary file and renames it over the final path.
    pub fn finish(self) -> io::Result<()> {
        let buffered = match self.file {
            Sink::Text(file) => file.into_inner()?,
            Sink::Bytes(file) => file,
        };
        let file = buffered.into_inner().map_err(|e| e.into_error())?;
        persist(file, &self.path)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer().write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

/// Places the content of `from` at `to` whole or not at all: as a hard link where the
/// filesystem allows one (no bytes copied, no space taken), otherwise as a copy; either way
/// under a temporary name no other process picks, renamed over `to`. Returns whether it
/// copied. The stores that share files between run directories (the chunk embeddings) rely on
/// every writer replacing a file by rename, never writing into it, so that a link never sees
/// its content change.
pub fn link_or_copy(from: &Path, to: &Path) -> io::Result<bool> {
    // A unique name that does not exist yet: hard_link refuses to replace a file.
    let tmp = unique_beside(to, ".link", |tmp| std::fs::hard_link(from, tmp));
    match tmp {
        Ok(tmp) => {
            tmp.persist(to)
                .map(drop)
                .map_err(|e| writing(to, e.error))?;
            Ok(false)
        }
        Err(_) => {
            let mut source = File::open(from)?;
            let mut file = AtomicFile::create_unique(to)?;
            io::copy(&mut source, &mut file)?;
            file.finish()?;
            Ok(true)
        }
    }
}

/// The text of a file a user gave, as [`std::fs::read_to_string`], except that bytes that are
/// not UTF-8 are an [`io::ErrorKind::InvalidData`] error naming their line and their byte in
/// it, both from 1 ("line 3, byte 57: not valid UTF-8"), so that the caller can say where the
/// input is bad.
pub fn read_text(path: &Path) -> io::Result<String> {
    String::from_utf8(std::fs::read(path)?).map_err(|error| {
        let bytes = error.as_bytes();
        let at = error.utf8_error().valid_up_to();
        let before = &bytes[..at];
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |n| n + 1);
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("line {line}, byte {}: not valid UTF-8", at - line_start + 1),
        )
    })
}

/// `<name>.tmp` beside `path`, created as `File::create` does.
fn beside(path: &Path) -> io::Result<NamedTempFile> {
    let (dir, mut name) = split(path)?;
    name.push(".tmp");
    Builder::new()
        .prefix(&name)
        .rand_bytes(0)
        .make_in(dir, |tmp| File::create(tmp))
        .map_err(|e| writing(path, e))
}

/// `.<name>.XXXXXX<suffix>` beside `path`, a name no other process or thread picks, made by
/// `make` (which fails when the name exists, so that another is tried).
fn unique_beside<R>(
    path: &Path,
    suffix: &str,
    make: impl FnMut(&Path) -> io::Result<R>,
) -> io::Result<NamedTempFile<R>> {
    let (dir, name) = split(path)?;
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    Builder::new()
        .prefix(&prefix)
        .suffix(suffix)
        .make_in(dir, make)
}

/// Syncs `file` and renames it over `path`.
fn persist(file: NamedTempFile, path: &Path) -> io::Result<()> {
    file.as_file().sync_all()?;
    file.persist(path)
        .map(drop)
        .map_err(|e| writing(path, e.error))
}

/// The directory to write the temporary file in, and the file's name.
fn split(path: &Path) -> io::Result<(&Path, OsString)> {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => Ok((dir, name.to_os_string())),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a file path", path.display()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn an_unfinished_file_leaves_nothing_behind_and_a_finished_one_replaces_the_old() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        std::fs::write(&path, "old\n").unwrap();
        for create in [AtomicFile::create, AtomicFile::create_unique] {
            {
                let mut file = create(&path).unwrap();
                file.write_all(b"half").unwrap();
                assert_eq!(
                    names(dir.path()).len(),
                    2,
                    "the temporary file is beside it"
                );
            }
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
            assert_eq!(names(dir.path()), ["out.jsonl"]);
        }
        let mut file = AtomicFile::create_unique(&path).unwrap();
        file.write_all(b"new\n").unwrap();
        file.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        assert_eq!(names(dir.path()), ["out.jsonl"]);
    }

    #[test]
    fn a_temporary_file_left_by_a_killed_writer_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        std::fs::write(
            dir.path().join("manifest.json.tmp"),
            "left over, and longer",
        )
        .unwrap();
        write_atomic(&path, b"{}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
        assert_eq!(names(dir.path()), ["manifest.json"]);
    }

    #[test]
    fn unique_temporary_files_do_not_meet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("asset.jsonl");
        let mut a = AtomicFile::create_unique(&path).unwrap();
        let mut b = AtomicFile::create_unique(&path).unwrap();
        a.write_all(b"a\n").unwrap();
        b.write_all(b"b\n").unwrap();
        let temporary = names(dir.path());
        assert_eq!(temporary.len(), 2);
        assert!(
            temporary
                .iter()
                .all(|n| n.starts_with(".asset.jsonl.") && n.ends_with(".tmp"))
        );
        a.finish().unwrap();
        b.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "b\n");
        assert_eq!(names(dir.path()), ["asset.jsonl"]);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_gets_the_mode_file_create_gives() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let created = dir.path().join("created");
        File::create(&created).unwrap();
        let written = dir.path().join("written");
        write_atomic(&written, b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&written), mode(&created));
    }

    #[test]
    fn text_that_is_not_utf8_is_an_error_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("import.jsonl");
        std::fs::write(&path, b"{\"a\": 1}\n{\"b\": \"caf\xe9\"}\n").unwrap();
        let error = read_text(&path).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert_eq!(error.to_string(), "line 2, byte 11: not valid UTF-8");
        std::fs::write(&path, "é\n").unwrap();
        assert_eq!(read_text(&path).unwrap(), "é\n");
    }

    #[test]
    fn writing_into_a_directory_that_is_gone_is_not_a_missing_input() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        let file = AtomicFile::create(&run.join("scores.jsonl")).unwrap();
        std::fs::rename(&run, dir.path().join("moved")).unwrap();
        let error = file.finish().unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::Other);
        assert!(
            error.to_string().contains("the directory is gone"),
            "{error}"
        );
        let error = write_atomic(&run.join("manifest.json"), b"{}").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::Other, "{error}");
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        let error = AtomicFile::create(Path::new("/")).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn link_or_copy_links_within_a_filesystem_and_copies_across() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("rows.f32");
        std::fs::write(&from, b"0123").unwrap();
        let to = dir.path().join("shared").join("rows.f32");
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(&to, b"old").unwrap();
        assert!(!link_or_copy(&from, &to).unwrap(), "one filesystem: linked");
        assert_eq!(std::fs::read(&to).unwrap(), b"0123");
        let meta = |p: &Path| std::fs::metadata(p).unwrap();
        assert_eq!(meta(&to).ino(), meta(&from).ino());
        // Replacing the source by rename (as every writer does) leaves the link's content.
        write_atomic(&from, b"4567").unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"0123");
        assert_eq!(
            names(to.parent().unwrap()),
            ["rows.f32"],
            "no temporary left"
        );

        // Across filesystems (a temporary directory in memory, where there is one): a copy.
        let other =
            tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
        let copy = other.path().join("rows.f32");
        let across = meta(other.path()).dev() != meta(dir.path()).dev();
        assert_eq!(link_or_copy(&from, &copy).unwrap(), across);
        assert_eq!(std::fs::read(&copy).unwrap(), b"4567");
        assert_eq!(names(other.path()), ["rows.f32"]);

        let missing = link_or_copy(&dir.path().join("missing"), &copy).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        assert_eq!(std::fs::read(&copy).unwrap(), b"4567", "unchanged");
    }
}
