//! A journal's lines in plan order, copied beside it while a stage runs.
//!
//! Putting a journal in plan order at the end of a stage means writing the whole file again and
//! syncing it to disk before it replaces the journal: milliseconds per megabyte, all of them
//! spent after the last reply. An [`OrderedCopy`] writes each line to a temporary file as soon
//! as every line before it in plan order is known (its item finished or failed in this pass,
//! or was done by an earlier one), and a thread of its own syncs what has been written now and
//! then; at the end only the last lines are left to write and sync before the copy is renamed
//! over the journal. The journal stays the record of what is done: the copy is removed when a
//! stage stops without finishing it, and made anew by the next pass.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;

/// Bytes written between two requests to sync the copy in the background.
const SYNC_EVERY: usize = 256 * 1024;

/// How [`OrderedCopy::finish`] ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Finished {
    /// The copy holds every line in plan order and has replaced the journal.
    Replaced,
    /// The journal's lines were in plan order already; it is left as it is.
    Unchanged,
    /// The copy could not be completed (a write failed, or lines came that it cannot place):
    /// the journal must be sorted from its file.
    Abandoned,
}

/// The lines of a journal in plan order, written to `<journal>.ordered.tmp` as they come.
#[derive(Debug)]
pub(crate) struct OrderedCopy {
    path: PathBuf,
    file: Arc<File>,
    positions: HashMap<String, usize>,
    /// Whether a line resolves the position of its id (one record per item); otherwise only
    /// [`OrderedCopy::resolve`] does (a side file's items have several lines, or none).
    lines_resolve: bool,
    resolved: Vec<bool>,
    /// Positions before this one are in the copy.
    next: usize,
    /// Lines of positions from `next` on, in the order they came, each with its number in the
    /// journal.
    waiting: HashMap<usize, Vec<(usize, Vec<u8>)>>,
    /// Lines whose id has no position: they go last, in the order they came.
    unplaced: Vec<(usize, Vec<u8>)>,
    /// Lines given to the copy so far (the next one's number in the journal).
    lines: usize,
    /// Lines written to the copy so far.
    written_lines: usize,
    /// Whether every line written so far went where it is in the journal: then the journal
    /// is in order and is left as it is (as [`crate::sort_records`] leaves a file in order).
    same_as_journal: bool,
    written_bytes: usize,
    unsynced_bytes: usize,
    syncer: Option<Syncer>,
    /// A write failed or a line came that cannot be placed any more.
    broken: bool,
    done: bool,
}

/// The thread that syncs the copy when asked.
#[derive(Debug)]
struct Syncer {
    requests: mpsc::Sender<()>,
    thread: JoinHandle<std::io::Result<()>>,
}

impl OrderedCopy {
    /// Starts a copy beside `journal`, in the order of `order`.
    pub(crate) fn create(
        journal: &Path,
        order: &HashMap<String, usize>,
        lines_resolve: bool,
    ) -> std::io::Result<OrderedCopy> {
        let mut name = journal.file_name().unwrap_or_default().to_os_string();
        name.push(".ordered.tmp");
        let path = journal.with_file_name(name);
        let file = Arc::new(File::create(&path)?);
        Ok(OrderedCopy {
            path,
            file,
            positions: order.clone(),
            lines_resolve,
            resolved: vec![false; order.len()],
            next: 0,
            waiting: HashMap::new(),
            unplaced: Vec::new(),
            lines: 0,
            written_lines: 0,
            same_as_journal: true,
            written_bytes: 0,
            unsynced_bytes: 0,
            syncer: None,
            broken: false,
            done: false,
        })
    }

    /// The next line of the journal (without its line break) and its id; writes what has
    /// become ready.
    pub(crate) fn add(&mut self, line: &[u8], id: Option<&str>) {
        let number = self.lines;
        self.lines += 1;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
        match id.and_then(|id| self.positions.get(id).copied()) {
            Some(position) if position < self.next => {
                // Its place is written already (a second line for an item that was complete).
                self.broken = true;
            }
            Some(position) => {
                self.waiting
                    .entry(position)
                    .or_default()
                    .push((number, bytes));
                if self.lines_resolve {
                    self.resolved[position] = true;
                }
            }
            None => self.unplaced.push((number, bytes)),
        }
    }

    /// Marks items whose lines are all in the journal (or that failed, with none): their
    /// lines may go into the copy once those before them have.
    pub(crate) fn resolve<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>) {
        for id in ids {
            if let Some(&position) = self.positions.get(id) {
                self.resolved[position] = true;
            }
        }
    }

    /// Writes the lines of every resolved position from `next` on, up to the first one not
    /// resolved, and asks for a sync when enough has been written since the last.
    pub(crate) fn write_ready(&mut self) {
        let mut ready = Vec::new();
        while self.next < self.resolved.len() && self.resolved[self.next] {
            if let Some(lines) = self.waiting.remove(&self.next) {
                self.take(lines, &mut ready);
            }
            self.next += 1;
        }
        self.write(&ready);
        if self.unsynced_bytes >= SYNC_EVERY {
            self.request_sync();
        }
    }

    /// Moves `lines` to `out`, noting whether they go where the journal has them.
    fn take(&mut self, lines: Vec<(usize, Vec<u8>)>, out: &mut Vec<u8>) {
        for (number, bytes) in lines {
            self.same_as_journal &= number == self.written_lines;
            self.written_lines += 1;
            out.extend_from_slice(&bytes);
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        if self.broken || bytes.is_empty() {
            return;
        }
        match (&*self.file).write_all(bytes) {
            Ok(()) => {
                self.written_bytes += bytes.len();
                self.unsynced_bytes += bytes.len();
            }
            Err(_) => self.broken = true,
        }
    }

    /// Asks the sync thread (started the first time) to sync what is written so far.
    fn request_sync(&mut self) {
        self.unsynced_bytes = 0;
        if self.syncer.is_none() {
            let (requests, pending) = mpsc::channel::<()>();
            let file = Arc::clone(&self.file);
            let thread = std::thread::Builder::new()
                .name("hierarag-journal-sync".into())
                .spawn(move || {
                    while pending.recv().is_ok() {
                        // Requests that queued meanwhile are served by this one sync.
                        while pending.try_recv().is_ok() {}
                        file.sync_data()?;
                    }
                    Ok(())
                });
            match thread {
                Ok(thread) => self.syncer = Some(Syncer { requests, thread }),
                // Without the thread, everything is synced at the end.
                Err(_) => return,
            }
        }
        if let Some(syncer) = &self.syncer {
            let _ = syncer.requests.send(());
        }
    }

    /// Writes what is left (every position in order, then the lines without one), syncs the
    /// copy and renames it over `journal`, which holds `journal_lines` lines.
    pub(crate) fn finish(mut self, journal: &Path, journal_lines: usize) -> Finished {
        self.done = true;
        let mut rest = Vec::new();
        let mut left: Vec<usize> = self.waiting.keys().copied().collect();
        left.sort_unstable();
        for position in left {
            let lines = self.waiting.remove(&position).expect("listed");
            self.take(lines, &mut rest);
        }
        let unplaced = std::mem::take(&mut self.unplaced);
        self.take(unplaced, &mut rest);
        self.write(&rest);
        let synced = match self.syncer.take() {
            Some(Syncer { requests, thread }) => {
                drop(requests);
                matches!(thread.join(), Ok(Ok(())))
            }
            None => true,
        };
        let complete = !self.broken && synced && self.written_lines == journal_lines;
        if complete && self.same_as_journal {
            let _ = std::fs::remove_file(&self.path);
            return Finished::Unchanged;
        }
        if complete && self.file.sync_data().is_ok() && std::fs::rename(&self.path, journal).is_ok()
        {
            return Finished::Replaced;
        }
        let _ = std::fs::remove_file(&self.path);
        Finished::Abandoned
    }
}

impl Drop for OrderedCopy {
    fn drop(&mut self) {
        if !self.done {
            // A stage that stopped early: the next pass makes the copy again.
            if let Some(Syncer { requests, thread }) = self.syncer.take() {
                drop(requests);
                let _ = thread.join();
            }
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
