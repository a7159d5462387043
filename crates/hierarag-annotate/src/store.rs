//! The annotation store: one SQLite file per run (`annotations.sqlite`) with the sampled items,
//! the annotators and their ratings, safe to share between threads and processes.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hierarag_taxonomy::Granularity;
use rand::TryRngCore;
use rand::rngs::OsRng;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

pub use hierarag_records::ANNOTATIONS_FILE;

/// The schema version kept in SQLite's `user_version`; bumped when the tables change.
const SCHEMA_VERSION: i64 = 2;

/// What turns a store of an earlier schema version into the next one: version 2 added the
/// answer items (`items.answer`).
const MIGRATIONS: [(i64, &str); 1] = [(1, "ALTER TABLE items ADD COLUMN answer TEXT;")];

/// How long a writer waits for another connection's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The highest value of each rating scale (all start at 0).
pub const MAX_CORRECTNESS: u8 = 3;
pub const MAX_HALLUCINATION: u8 = 2;
pub const MAX_ANSWERABILITY: u8 = 3;

const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE items (
  item_id TEXT PRIMARY KEY, position INTEGER NOT NULL UNIQUE, set_name TEXT NOT NULL,
  dimension TEXT NOT NULL, level TEXT NOT NULL, category TEXT NOT NULL, parent TEXT,
  category_task INTEGER NOT NULL, question TEXT NOT NULL, reference TEXT NOT NULL,
  documents TEXT NOT NULL,
  choices TEXT NOT NULL,
  answer TEXT
);
CREATE TABLE annotators (name TEXT PRIMARY KEY, token TEXT NOT NULL UNIQUE, created_unix_s INTEGER NOT NULL);
CREATE TABLE ratings (
  item_id TEXT NOT NULL REFERENCES items(item_id), annotator TEXT NOT NULL REFERENCES annotators(name),
  correctness INTEGER CHECK (correctness BETWEEN 0 AND 3),
  hallucination INTEGER CHECK (hallucination BETWEEN 0 AND 2),
  answerability INTEGER CHECK (answerability BETWEEN 0 AND 3),
  category_pick TEXT, note TEXT, updated_unix_s INTEGER NOT NULL,
  PRIMARY KEY (item_id, annotator));
";

/// One question to annotate: the benchmark question with its reference answer and source
/// documents, and, when it carries the category task, the categories offered for a blind pick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// The benchmark question's id.
    pub item_id: String,
    /// Where the item comes in the annotation order (0-based, a seeded shuffle).
    pub position: u32,
    /// The benchmark set the question belongs to.
    pub set: String,
    /// The dimension, level and category the question was generated for (for factorial
    /// questions the first of their categories).
    pub dimension: String,
    pub level: Granularity,
    pub category: String,
    /// The intended category's parent one level up, if it has one.
    pub parent: Option<String>,
    /// Whether annotators are asked which category the question belongs to.
    pub category_task: bool,
    pub question: String,
    pub reference: String,
    /// The source documents, as (doc_id, text).
    pub documents: Vec<(String, String)>,
    /// The categories offered for the blind pick, in display order; empty without a category
    /// task.
    pub choices: Vec<String>,
    /// For an item of the answer task: the system answer rated (correctness and hallucination
    /// only); `None` for an item of the benchmark task, which rates the question and its
    /// reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<SystemAnswer>,
}

/// One system's answer to a benchmark question, as an item of the answer task shows it; the
/// annotators are not told the system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemAnswer {
    /// The benchmark question answered (the item's own id hides the system).
    pub question_id: String,
    pub system: String,
    pub text: String,
}

impl Item {
    /// The benchmark question the item is about: its own id, or the answered question's.
    pub fn question_id(&self) -> &str {
        self.answer
            .as_ref()
            .map_or(self.item_id.as_str(), |a| a.question_id.as_str())
    }
}

/// A person who rates items; the token is their secret link (`/a/<token>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Annotator {
    pub name: String,
    pub token: String,
}

/// One annotator's ratings of one item; `None` means "not rated (yet)".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rating {
    pub item_id: String,
    pub annotator: String,
    /// 0 wrong … 3 fully correct.
    pub correctness: Option<u8>,
    /// 0 none … 2 severe.
    pub hallucination: Option<u8>,
    /// 0 not answerable from the documents … 3 fully answerable.
    pub answerability: Option<u8>,
    /// The category the annotator thinks the question belongs to; one of the item's choices.
    pub category_pick: Option<String>,
    pub note: Option<String>,
    /// When the rating was last saved (seconds since the Unix epoch; see [`now_unix_s`]).
    pub updated_unix_s: u64,
}

/// What can go wrong with the annotation store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: no annotation store here; run `hierarag annotate sample` first", path.display())]
    Missing { path: PathBuf },
    #[error("{}: already exists; remove it (or pass --overwrite) to sample again", path.display())]
    Exists { path: PathBuf },
    #[error("{}: cannot open the annotation store", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{}: {message}", path.display())]
    Corrupt { path: PathBuf, message: String },
    #[error("annotation store")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("cannot draw a random token from the operating system: {0}")]
    Token(String),
}

impl hierarag_fs::Blame for StoreError {
    /// SQLite and a store that cannot be opened or is damaged are the machine's, as is the
    /// operating system's randomness; a store missing or already there, and an invalid value,
    /// are the input's.
    fn fault(&self) -> hierarag_fs::Fault {
        use hierarag_fs::Fault;
        match self {
            StoreError::Open { .. }
            | StoreError::Sqlite(_)
            | StoreError::Corrupt { .. }
            | StoreError::Token(_) => Fault::Internal,
            StoreError::Missing { .. } | StoreError::Exists { .. } | StoreError::Invalid { .. } => {
                Fault::Input
            }
        }
    }
}

impl StoreError {
    fn invalid(field: &str, message: impl Into<String>) -> StoreError {
        StoreError::Invalid {
            field: field.to_string(),
            message: message.into(),
        }
    }
}

/// The seconds since the Unix epoch now, for [`Rating::updated_unix_s`].
pub fn now_unix_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The lock of the store at `path` (`annotations.sqlite.lock` beside it): the annotation app
/// holds it while it serves the store, and a change that replaces the store (sampling again
/// over it) takes it first, so that the app never goes on saving ratings into a store that
/// is gone. Ordinary writes (ratings, annotators, a CSV import) go through SQLite's own
/// locking beside a server and need no lock.
pub fn lock_store(path: &Path) -> Result<hierarag_fs::Lock, hierarag_fs::LockError> {
    let mut lock = path.as_os_str().to_owned();
    lock.push(".lock");
    hierarag_fs::Lock::acquire(Path::new(&lock), path)
}

/// An open annotation store: one SQLite connection (WAL, foreign keys on, a 5 s busy timeout).
///
/// `Store` is `Send` but not `Sync`: share one behind a mutex, or open one per thread or request;
/// WAL lets readers run beside a writer, and writers wait for each other.
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    connection: Connection,
}

impl Store {
    /// Creates the store at `path` with these items and meta entries (e.g. the seed), refusing a
    /// file that exists. The file appears complete or not at all: it is built under a temporary
    /// name beside it and renamed into place (never over a file that appeared meanwhile). It is
    /// readable by its owner only, since it holds the annotators' tokens.
    pub fn create(
        path: &Path,
        items: &[Item],
        meta: &[(&str, String)],
    ) -> Result<Store, StoreError> {
        let exists = || StoreError::Exists {
            path: path.to_path_buf(),
        };
        let corrupt = |message: String| StoreError::Corrupt {
            path: path.to_path_buf(),
            message,
        };
        if path.exists() {
            return Err(exists());
        }
        // tempfile's own mode, owner-only, and a name no other process picks.
        let tmp = tempfile::Builder::new()
            .prefix(".annotations.")
            .suffix(".tmp")
            .tempfile_in(path.parent().unwrap_or(Path::new(".")))
            .map_err(|e| corrupt(format!("cannot create a temporary file beside it: {e}")))?;
        if let Err(error) = build(tmp.path(), items, meta) {
            remove_database(tmp.path());
            return Err(error);
        }
        tmp.persist_noclobber(path)
            .map_err(|e| match e.error.kind() {
                std::io::ErrorKind::AlreadyExists => exists(),
                _ => corrupt(format!(
                    "cannot rename {} into place: {}",
                    e.file.path().display(),
                    e.error
                )),
            })?;
        Store::open(path)
    }

    /// Opens an existing store.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if !path.is_file() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        let open_error = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let connection = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(open_error)?;
        connection
            .busy_timeout(BUSY_TIMEOUT)
            .and_then(|()| connection.pragma_update(None, "foreign_keys", true))
            .map_err(open_error)?;
        let mut version: i64 = connection
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(open_error)?;
        for (from, statement) in MIGRATIONS {
            if version == from {
                connection
                    .execute_batch(&format!(
                        "BEGIN; {statement} PRAGMA user_version = {}; COMMIT;",
                        from + 1
                    ))
                    .map_err(open_error)?;
                version = from + 1;
            }
        }
        if version != SCHEMA_VERSION {
            return Err(StoreError::Corrupt {
                path: path.to_path_buf(),
                message: format!(
                    "not an annotation store of this version (schema version {version}, \
                     expected {SCHEMA_VERSION})"
                ),
            });
        }
        // Switching to WAL needs a moment without other writers; it is persistent, so only the
        // first open after `create` actually switches.
        let mode: String = connection
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .map_err(open_error)?;
        if !mode.eq_ignore_ascii_case("wal") {
            connection
                .pragma_update(None, "journal_mode", "WAL")
                .map_err(open_error)?;
        }
        connection
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_error)?;
        Ok(Store {
            path: path.to_path_buf(),
            connection,
        })
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// All items, in annotation order (by position).
    pub fn items(&self) -> Result<Vec<Item>, StoreError> {
        let mut statement = self.connection.prepare(&format!(
            "SELECT {ITEM_COLUMNS} FROM items ORDER BY position"
        ))?;
        let rows = statement.query_map([], read_item_row)?;
        let mut items = Vec::new();
        for row in rows {
            items.push(self.decode_item(row?)?);
        }
        Ok(items)
    }

    /// The item with this id, if there is one.
    pub fn item(&self, item_id: &str) -> Result<Option<Item>, StoreError> {
        let row = self
            .connection
            .query_row(
                &format!("SELECT {ITEM_COLUMNS} FROM items WHERE item_id = ?1"),
                [item_id],
                read_item_row,
            )
            .optional()?;
        row.map(|row| self.decode_item(row)).transpose()
    }

    /// The meta entries written at creation (seed, run, sample sizes…), by key.
    pub fn meta(&self) -> Result<Vec<(String, String)>, StoreError> {
        let mut statement = self
            .connection
            .prepare("SELECT key, value FROM meta ORDER BY key")?;
        let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Adds an annotator with a fresh token (32 hex characters from the operating system's
    /// randomness); an existing name keeps and returns its token.
    pub fn add_annotator(&self, name: &str) -> Result<Annotator, StoreError> {
        validate_annotator_name(name)?;
        let token = random_token()?;
        self.connection.execute(
            "INSERT INTO annotators (name, token, created_unix_s) VALUES (?1, ?2, ?3)
             ON CONFLICT (name) DO NOTHING",
            params![name, token, unix_i64(now_unix_s())],
        )?;
        let token: String = self.connection.query_row(
            "SELECT token FROM annotators WHERE name = ?1",
            [name],
            |row| row.get(0),
        )?;
        Ok(Annotator {
            name: name.to_string(),
            token,
        })
    }

    /// All annotators, by name.
    pub fn annotators(&self) -> Result<Vec<Annotator>, StoreError> {
        let mut statement = self
            .connection
            .prepare("SELECT name, token FROM annotators ORDER BY name")?;
        let rows = statement.query_map([], |row| {
            Ok(Annotator {
                name: row.get(0)?,
                token: row.get(1)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The annotator whose token this is, if any.
    pub fn annotator_by_token(&self, token: &str) -> Result<Option<Annotator>, StoreError> {
        Ok(self
            .connection
            .query_row(
                "SELECT name, token FROM annotators WHERE token = ?1",
                [token],
                |row| {
                    Ok(Annotator {
                        name: row.get(0)?,
                        token: row.get(1)?,
                    })
                },
            )
            .optional()?)
    }

    /// Saves a rating, replacing the annotator's earlier rating of the item.
    ///
    /// Checks that the item and the annotator exist, that each scale is in range
    /// (correctness 0–3, hallucination 0–2, answerability 0–3) and that the category pick is one
    /// of the item's choices; a failure is [`StoreError::Invalid`] naming the field. An empty
    /// `category_pick` or a blank `note` counts as none. The write is one statement, hence one
    /// transaction.
    pub fn save_rating(&self, rating: &Rating) -> Result<(), StoreError> {
        let rating = normalize(rating);
        let item = self.item(&rating.item_id)?.ok_or_else(|| {
            StoreError::invalid(
                "item_id",
                format!("no item `{}` in this annotation store", rating.item_id),
            )
        })?;
        let known: bool = self.connection.query_row(
            "SELECT EXISTS (SELECT 1 FROM annotators WHERE name = ?1)",
            [&rating.annotator],
            |row| row.get(0),
        )?;
        if !known {
            return Err(StoreError::invalid(
                "annotator",
                format!("no annotator `{}`; add them first", rating.annotator),
            ));
        }
        validate_rating(&rating, &item)?;
        let mut statement = self.connection.prepare_cached(UPSERT_RATING)?;
        upsert(&mut statement, &rating)?;
        Ok(())
    }

    /// Saves many ratings in one transaction: all or none. Each is checked as in
    /// [`Store::save_rating`]; the first failure rolls everything back.
    pub fn save_ratings(&mut self, ratings: &[Rating]) -> Result<(), StoreError> {
        let items: std::collections::HashMap<String, Item> = self
            .items()?
            .into_iter()
            .map(|item| (item.item_id.clone(), item))
            .collect();
        let transaction = self
            .connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut statement = transaction.prepare(UPSERT_RATING)?;
            for rating in ratings {
                let rating = normalize(rating);
                let item = items.get(&rating.item_id).ok_or_else(|| {
                    StoreError::invalid(
                        "item_id",
                        format!("no item `{}` in this annotation store", rating.item_id),
                    )
                })?;
                validate_rating(&rating, item)?;
                upsert(&mut statement, &rating).map_err(|e| match e {
                    rusqlite::Error::SqliteFailure(failure, _)
                        if failure.code == rusqlite::ErrorCode::ConstraintViolation =>
                    {
                        StoreError::invalid(
                            "annotator",
                            format!("no annotator `{}`; add them first", rating.annotator),
                        )
                    }
                    other => StoreError::Sqlite(other),
                })?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    /// All ratings, ordered by item position, then annotator.
    pub fn ratings(&self) -> Result<Vec<Rating>, StoreError> {
        self.query_ratings("", [])
    }

    /// One annotator's ratings, ordered by item position.
    pub fn ratings_of(&self, annotator: &str) -> Result<Vec<Rating>, StoreError> {
        self.query_ratings("WHERE r.annotator = ?1", [annotator])
    }

    fn query_ratings<P: rusqlite::Params>(
        &self,
        filter: &str,
        params: P,
    ) -> Result<Vec<Rating>, StoreError> {
        let mut statement = self.connection.prepare(&format!(
            "SELECT r.item_id, r.annotator, r.correctness, r.hallucination, r.answerability,
                    r.category_pick, r.note, r.updated_unix_s
             FROM ratings r JOIN items i ON i.item_id = r.item_id
             {filter}
             ORDER BY i.position, r.annotator"
        ))?;
        let rows = statement.query_map(params, |row| {
            Ok(Rating {
                item_id: row.get(0)?,
                annotator: row.get(1)?,
                correctness: row.get(2)?,
                hallucination: row.get(3)?,
                answerability: row.get(4)?,
                category_pick: row.get(5)?,
                note: row.get(6)?,
                updated_unix_s: u64::try_from(row.get::<_, i64>(7)?).unwrap_or(0),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn decode_item(&self, row: ItemRow) -> Result<Item, StoreError> {
        let corrupt = |message: String| StoreError::Corrupt {
            path: self.path.clone(),
            message: format!("item `{}`: {message}", row.item_id),
        };
        let level = match row.level.as_str() {
            "coarse" => Granularity::Coarse,
            "medium" => Granularity::Medium,
            "fine" => Granularity::Fine,
            other => return Err(corrupt(format!("unknown level `{other}`"))),
        };
        let documents =
            serde_json::from_str(&row.documents).map_err(|e| corrupt(format!("documents: {e}")))?;
        let choices =
            serde_json::from_str(&row.choices).map_err(|e| corrupt(format!("choices: {e}")))?;
        let answer = row
            .answer
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| corrupt(format!("answer: {e}")))?;
        let position = u32::try_from(row.position)
            .map_err(|_| corrupt(format!("position {} out of range", row.position)))?;
        Ok(Item {
            item_id: row.item_id.clone(),
            position,
            set: row.set,
            dimension: row.dimension,
            level,
            category: row.category,
            parent: row.parent,
            category_task: row.category_task,
            question: row.question,
            reference: row.reference,
            documents,
            choices,
            answer,
        })
    }
}

const ITEM_COLUMNS: &str = "item_id, position, set_name, dimension, level, category, parent, \
                            category_task, question, reference, documents, choices, answer";

/// An `items` row before its JSON columns are decoded.
struct ItemRow {
    item_id: String,
    position: i64,
    set: String,
    dimension: String,
    level: String,
    category: String,
    parent: Option<String>,
    category_task: bool,
    question: String,
    reference: String,
    documents: String,
    choices: String,
    answer: Option<String>,
}

fn read_item_row(row: &Row<'_>) -> rusqlite::Result<ItemRow> {
    Ok(ItemRow {
        item_id: row.get(0)?,
        position: row.get(1)?,
        set: row.get(2)?,
        dimension: row.get(3)?,
        level: row.get(4)?,
        category: row.get(5)?,
        parent: row.get(6)?,
        category_task: row.get(7)?,
        question: row.get(8)?,
        reference: row.get(9)?,
        documents: row.get(10)?,
        choices: row.get(11)?,
        answer: row.get(12)?,
    })
}

/// Writes a complete store at `path` (a fresh file).
fn build(path: &Path, items: &[Item], meta: &[(&str, String)]) -> Result<(), StoreError> {
    let open_error = |source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    };
    let mut connection = Connection::open(path).map_err(open_error)?;
    let transaction = connection.transaction().map_err(open_error)?;
    transaction.execute_batch(SCHEMA).map_err(open_error)?;
    {
        let mut insert_meta = transaction
            .prepare("INSERT INTO meta (key, value) VALUES (?1, ?2)")
            .map_err(open_error)?;
        for (key, value) in meta {
            insert_meta
                .execute(params![key, value])
                .map_err(open_error)?;
        }
        let mut insert_item = transaction
            .prepare(
                "INSERT INTO items (item_id, position, set_name, dimension, level, category,
                                    parent, category_task, question, reference, documents, choices,
                                    answer)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )
            .map_err(open_error)?;
        for item in items {
            if !item.category_task && !item.choices.is_empty() {
                return Err(StoreError::invalid(
                    "choices",
                    format!("item `{}` has choices but no category task", item.item_id),
                ));
            }
            let documents = serde_json::to_string(&item.documents).unwrap_or_default();
            let choices = serde_json::to_string(&item.choices).unwrap_or_default();
            let answer = item
                .answer
                .as_ref()
                .map(|a| serde_json::to_string(a).unwrap_or_default());
            insert_item
                .execute(params![
                    item.item_id,
                    item.position,
                    item.set,
                    item.dimension,
                    item.level.as_str(),
                    item.category,
                    item.parent,
                    item.category_task,
                    item.question,
                    item.reference,
                    documents,
                    choices,
                    answer,
                ])
                .map_err(|e| match e {
                    rusqlite::Error::SqliteFailure(failure, _)
                        if failure.code == rusqlite::ErrorCode::ConstraintViolation =>
                    {
                        StoreError::invalid(
                            "item_id",
                            format!(
                                "item `{}` (position {}) repeats an item id or a position",
                                item.item_id, item.position
                            ),
                        )
                    }
                    other => open_error(other),
                })?;
        }
    }
    transaction
        .pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(open_error)?;
    transaction.commit().map_err(open_error)?;
    connection.close().map_err(|(_, e)| open_error(e))?;
    Ok(())
}

/// Removes a database file and its journals, ignoring what is not there.
fn remove_database(path: &Path) {
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

/// Empty picks and blank notes are "none".
fn normalize(rating: &Rating) -> Rating {
    let mut rating = rating.clone();
    if rating.category_pick.as_deref() == Some("") {
        rating.category_pick = None;
    }
    if rating
        .note
        .as_deref()
        .is_some_and(|note| note.trim().is_empty())
    {
        rating.note = None;
    }
    rating
}

/// The scale and choice checks of [`Store::save_rating`].
pub(crate) fn validate_rating(rating: &Rating, item: &Item) -> Result<(), StoreError> {
    let scales = [
        ("correctness", rating.correctness, MAX_CORRECTNESS),
        ("hallucination", rating.hallucination, MAX_HALLUCINATION),
        ("answerability", rating.answerability, MAX_ANSWERABILITY),
    ];
    for (field, value, max) in scales {
        if let Some(value) = value.filter(|&v| v > max) {
            return Err(StoreError::invalid(
                field,
                format!("{value} is not on the scale 0–{max}"),
            ));
        }
    }
    if item.answer.is_some() && rating.answerability.is_some() {
        return Err(StoreError::invalid(
            "answerability",
            format!(
                "item `{}` rates a system's answer: correctness and hallucination only",
                item.item_id
            ),
        ));
    }
    if let Some(pick) = &rating.category_pick {
        check_pick(pick, item).map_err(|message| StoreError::invalid("category_pick", message))?;
    }
    Ok(())
}

/// Whether `pick` is one of the item's choices; the error is a sentence for the user.
pub(crate) fn check_pick(pick: &str, item: &Item) -> Result<(), String> {
    if !item.category_task {
        return Err(format!(
            "item `{}` has no category task, so no category can be picked",
            item.item_id
        ));
    }
    if !item.choices.iter().any(|choice| choice == pick) {
        return Err(format!(
            "`{pick}` is not one of the choices of item `{}` ({})",
            item.item_id,
            item.choices.join(", ")
        ));
    }
    Ok(())
}

pub(crate) fn validate_annotator_name(name: &str) -> Result<(), StoreError> {
    if name.trim().is_empty() {
        return Err(StoreError::invalid("annotator", "a name cannot be empty"));
    }
    if name.trim() != name || name.chars().any(char::is_control) || name.chars().count() > 100 {
        return Err(StoreError::invalid(
            "annotator",
            format!(
                "`{name}` is not a usable name (no leading or trailing spaces, no control \
                 characters, at most 100 characters)"
            ),
        ));
    }
    Ok(())
}

/// 16 bytes of the operating system's randomness as 32 lowercase hex characters.
fn random_token() -> Result<String, StoreError> {
    let mut bytes = [0u8; 16];
    OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| StoreError::Token(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// SQLite integers are signed; times beyond i64 (never in practice) are clamped.
fn unix_i64(seconds: u64) -> i64 {
    i64::try_from(seconds).unwrap_or(i64::MAX)
}

/// One rating per (item, annotator): a new one is inserted, an existing one replaced.
const UPSERT_RATING: &str = "INSERT INTO ratings (item_id, annotator, correctness, hallucination,
                                 answerability, category_pick, note, updated_unix_s)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
    ON CONFLICT (item_id, annotator) DO UPDATE SET
      correctness = excluded.correctness, hallucination = excluded.hallucination,
      answerability = excluded.answerability, category_pick = excluded.category_pick,
      note = excluded.note, updated_unix_s = excluded.updated_unix_s";

/// Runs [`UPSERT_RATING`] for one rating.
fn upsert(statement: &mut rusqlite::Statement<'_>, rating: &Rating) -> rusqlite::Result<usize> {
    statement.execute(params![
        rating.item_id,
        rating.annotator,
        rating.correctness,
        rating.hallucination,
        rating.answerability,
        rating.category_pick,
        rating.note,
        unix_i64(rating.updated_unix_s),
    ])
}
