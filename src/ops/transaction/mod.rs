//! Independent tile writers and one commit: the write of processes that share no
//! communicator (Dask workers, Legate tasks, any runtime's processes).
//!
//! 1. A coordinator begins a transaction (`Transaction::begin`): it checks and prepares the
//!    path as a collective write's plan does, takes the write's lock (`layout::in_flight`:
//!    other writes' cleanups then spare its files), makes the tile folder, and declares the
//!    datasets. Its token (`wire::Token`, plain bytes) tells writers all they need.
//! 2. Writers (`writer::write_tiles`), anywhere the folder is reachable, write each tile to a
//!    tile file of its own, as a rank of a collective write does (`write::write_tile_file`),
//!    and return a record of it (`wire::Record`): where, which tile, its checksums, and an
//!    attempt identity unique to that write. A writer that finds the coordinator's lock
//!    released once its files are made (the transaction ended) removes them and fails.
//! 3. The coordinator commits the records (`Transaction::commit`): it refuses records of
//!    another transaction, tiles that overlap or leave holes, and tile files missing or not
//!    as recorded, without reading their bytes (their checksums go into the master, and reads
//!    and `h5tile check` verify them); keeps one attempt of each tile; then writes the master
//!    and renames it into place (`write::publish`, the commit point of every write). A second
//!    commit changes nothing; abort (or dropping an open transaction) removes its files; a
//!    crashed coordinator's lock is released by the kernel and the next write's cleanup
//!    removes what it left.
//!
//! The VDS layout only: each writer writes files of its own, where the subfiled and single-file
//! layouts need the ranks of a communicator to share files.

mod wire;
pub mod writer;

use crate::dtype::Dtype;
use crate::geometry::coverage::{self, Coverage};
use crate::geometry::tile::Tile;
use crate::layout::{self, in_flight::WriteLock, vds};
use crate::ops::write::{self, Attribute, Checkpoint, Field, Layout, WriteOptions};
use crate::status::*;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
pub use wire::{Record, Token};

/// A dataset a transaction writes: its name, element type and global shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Declared {
    pub dataset: String,
    pub dtype: Dtype,
    pub global: Vec<u64>,
}

/// Where a transaction stands.
#[derive(Debug)]
enum State {
    Open,
    /// Committed, keeping these tile files (a late record's other files are removed).
    Committed(std::collections::HashSet<PathBuf>),
    Aborted,
}

/// A transaction, as its coordinator holds it.
pub struct Transaction {
    token: Token,
    options: WriteOptions,
    attributes: Vec<Attribute>,
    /// Held until the commit's cleanup is done or the transaction is aborted.
    lock: Option<WriteLock>,
    /// The token was handed out: no dataset may be added any more.
    sealed: bool,
    state: State,
    /// Made by `begin` (not `resume`): dropped open, it aborts.
    coordinator: bool,
}

/// A number no other transaction or attempt is given: the kernel's randomness, or where it
/// cannot be read, the clock, the process and a counter, mixed.
pub fn random_u64() -> u64 {
    use std::io::Read;
    let mut b = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok()
    {
        return u64::from_le_bytes(b);
    }
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let seed = [layout::new_generation(), std::process::id() as u64, n];
    let bytes: Vec<u8> = seed.iter().flat_map(|w| w.to_le_bytes()).collect();
    crate::platform::xxh3::oneshot(&bytes)
}

impl Transaction {
    /// Begins a write of `path` with `options` (the VDS layout, or `H5TILE_LAYOUT_AUTO`,
    /// which gives it): checks and prepares the path, takes the write's lock and makes the
    /// tile folder. Datasets are declared next (`declare`).
    pub fn begin(path: &Path, mut options: WriteOptions) -> Result<Transaction> {
        if options.by_scale {
            options.layout = Layout::Vds;
        }
        if options.layout != Layout::Vds {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "{} needs the ranks of one communicator to share files; independent \
                     writers write H5TILE_LAYOUT_VDS (or AUTO), each tile a file of its own",
                    options.layout.c_name()
                ),
            );
        }
        // Writers may run in other folders: they are given the path from the root.
        let path = std::path::absolute(path)
            .map_err(|e| Error::io("cannot make the path absolute:", path, &e))?;
        layout::prepare_target(&path, options.no_overwrite)?;
        let generation = layout::new_generation();
        let lock = WriteLock::take(&path, generation)?;
        layout::create_tile_dir(&layout::tile_dir(&path))?;
        Ok(Transaction {
            token: Token {
                id: random_u64(),
                generation,
                path,
                fields: Vec::new(),
                compression: options.compression,
                no_sync: options.no_sync,
                allow_partial: options.allow_partial,
                keep_others: options.keep_others,
            },
            options,
            attributes: Vec::new(),
            lock: Some(lock),
            sealed: false,
            state: State::Open,
            coordinator: true,
        })
    }

    /// The transaction of `token`, to commit from a process other than its coordinator's (the
    /// last task of a Dask graph, run on a worker). It holds no lock (the coordinator's, still
    /// held, protects the files), stores no attributes, and is not aborted when dropped.
    pub fn resume(token: &[u8]) -> Result<Transaction> {
        let token = Token::from_bytes(token)?;
        let options = WriteOptions {
            compression: token.compression,
            no_sync: token.no_sync,
            allow_partial: token.allow_partial,
            keep_others: token.keep_others,
            ..WriteOptions::default()
        };
        Ok(Transaction {
            token,
            options,
            attributes: Vec::new(),
            lock: None,
            sealed: true,
            state: State::Open,
            coordinator: false,
        })
    }

    /// Declares a dataset the transaction writes, before its token is taken.
    pub fn declare(&mut self, declared: Declared) -> Result<()> {
        if self.sealed {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "cannot declare dataset '{}': the transaction's token was taken, and its \
                     writers know only the datasets declared before",
                    declared.dataset
                ),
            );
        }
        self.open("declare a dataset")?;
        let mut fields = self.token.fields.clone();
        fields.push(declared.clone());
        write::check(&self.checkpoint(&fields, &[]))?;
        if self.options.keep_others && self.token.path.exists() {
            layout::keep::check(&self.token.path, &declared.dataset)?;
        }
        self.token.fields = fields;
        Ok(())
    }

    /// Adds an attribute the commit stores, as a checkpoint's.
    pub fn add_attribute(&mut self, attribute: Attribute) -> Result<()> {
        self.open("add an attribute")?;
        let mut attributes = self.attributes.clone();
        attributes.push(attribute);
        write::check(&self.checkpoint(&self.token.fields, &attributes))?;
        self.attributes = attributes;
        Ok(())
    }

    /// The token writers need, as bytes. Taking it closes the list of datasets.
    pub fn token(&mut self) -> Result<Vec<u8>> {
        if self.token.fields.is_empty() {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                "the transaction declares no dataset: declare one before taking its token",
            );
        }
        self.sealed = true;
        Ok(self.token.to_bytes())
    }

    /// Commits the tiles `records` name: the only step that changes what readers see; see
    /// the module documentation. A failure before the commit point leaves the old file as it
    /// was and the transaction open (to commit other records, or abort). Committed already:
    /// nothing changes, and the files of attempts that came late go.
    pub fn commit(&mut self, records: &[&[u8]]) -> Result<()> {
        match &self.state {
            State::Open => {}
            State::Committed(kept) => {
                self.remove_unmapped(kept);
                return Ok(());
            }
            State::Aborted => return self.open("commit"),
        }
        if let Some(kept) = self.committed_elsewhere() {
            self.remove_unmapped(&kept);
            self.state = State::Committed(kept);
            return Ok(());
        }
        let records = self.decode(records)?;
        let chosen = self.choose(&records)?;
        for f in 0..self.token.fields.len() {
            self.check_union(f, &records, &chosen)?;
        }
        let ck = self.checkpoint(&self.token.fields, &self.attributes);
        write::check(&ck)?;
        let dir = layout::tile_dir(&self.token.path);
        let dir_name = dir.file_name().unwrap_or_default().to_string_lossy();
        let mut mapped = vec![(Vec::new(), Vec::new()); ck.fields.len()];
        let mut kept = std::collections::HashSet::new();
        for &i in &chosen {
            let r = &records[i];
            if r.tile.is_empty() {
                continue;
            }
            let file = writer::tile_path(&self.token, r.field, r.attempt);
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            mapped[r.field].0.push(vds::Source {
                tile: r.tile.clone(),
                file: format!("{dir_name}/{name}"),
                dataset: vds::TILE_DATASET.to_string(),
                bytes: r.bytes,
                within: None,
            });
            mapped[r.field].1.push(r.summary.clone());
            kept.insert(file);
        }
        let finish = |tmp: &Path| {
            let file = write::master_mapping(tmp, &ck, &mapped)?;
            for a in &ck.attributes {
                file.set_attribute(&a.object, &a.name, &a.value)?;
            }
            file.close()
        };
        let generation = self.token.generation;
        let mut committed = false;
        let result = write::publish(
            &ck,
            generation,
            &mut self.lock,
            Some(&dir),
            &mut committed,
            finish,
        );
        if committed {
            self.remove_unmapped(&kept);
            self.state = State::Committed(kept);
        }
        result
    }

    /// Releases its lock and removes every file the transaction's writers made. A writer
    /// still running removes its own: it finds the lock released (`writer::still_open`).
    pub fn abort(&mut self) -> Result<()> {
        match self.state {
            State::Open => {}
            State::Committed(_) => {
                return fail(
                    H5TILE_ERR_INVALID_ARGUMENT,
                    format!(
                        "cannot abort the transaction on '{}': it was committed",
                        self.token.path.display()
                    ),
                )
            }
            State::Aborted => return Ok(()),
        }
        if let Some(kept) = self.committed_elsewhere() {
            self.state = State::Committed(kept);
            drop(self.lock.take());
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "cannot abort the transaction on '{}': another process committed it",
                    self.token.path.display()
                ),
            );
        }
        self.state = State::Aborted;
        // Released first: a writer that looks after this removes its files itself.
        drop(self.lock.take());
        self.remove_unmapped(&Default::default());
        layout::remove_tile_dir_if_idle(&self.token.path, self.token.generation);
        Ok(())
    }

    /// Where a commit of this transaction made from its token in another process
    /// (`resume`) is in place: the tile files the master on disk maps (those of its
    /// generation are the commit's).
    fn committed_elsewhere(&self) -> Option<std::collections::HashSet<PathBuf>> {
        let names = layout::referenced_files(&self.token.path).ok()?;
        let dir = layout::tile_dir(&self.token.path);
        let ours = names
            .iter()
            .any(|n| layout::generation_of(n) == Some(self.token.generation));
        ours.then(|| names.iter().map(|n| dir.join(n)).collect())
    }

    /// Fails with why `what` cannot be done unless the transaction is open.
    fn open(&self, what: &str) -> Result<()> {
        let why = match self.state {
            State::Open => return Ok(()),
            State::Committed(_) => "it was committed",
            State::Aborted => "it was aborted",
        };
        fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!(
                "cannot {what} in the transaction on '{}': {why}; begin a new one",
                self.token.path.display()
            ),
        )
    }

    /// The checkpoint the commit writes: `fields` with no tiles of their own, `attributes`.
    fn checkpoint(&self, fields: &[Declared], attributes: &[Attribute]) -> Checkpoint<'static> {
        Checkpoint {
            path: self.token.path.clone(),
            fields: fields
                .iter()
                .map(|d| Field {
                    dataset: d.dataset.clone(),
                    dtype: d.dtype,
                    global: d.global.clone(),
                    tiles: Vec::new(),
                })
                .collect(),
            attributes: attributes.to_vec(),
            options: self.options,
        }
    }

    /// The records, decoded and checked to be this transaction's, each tile inside its
    /// dataset.
    fn decode(&self, records: &[&[u8]]) -> Result<Vec<Record>> {
        let fields = &self.token.fields;
        let elem_of = |f: usize| fields.get(f).map(|d| d.dtype.size());
        let mut out = Vec::with_capacity(records.len());
        for (i, bytes) in records.iter().enumerate() {
            let r = Record::from_bytes(bytes, elem_of)
                .map_err(|e| e.context(&format!("record {i}")))?;
            if r.transaction != self.token.id {
                return fail(
                    H5TILE_ERR_INVALID_ARGUMENT,
                    format!(
                        "record {i} is of transaction {:016x}, not of this one ({:016x}) on \
                         '{}': a record of an earlier or another write",
                        r.transaction,
                        self.token.id,
                        self.token.path.display()
                    ),
                );
            }
            let fits = fields
                .get(r.field)
                .is_some_and(|d| r.tile.ndim() == d.global.len() && r.tile.fits_in(&d.global));
            if !fits {
                return fail(
                    H5TILE_ERR_INVALID_ARGUMENT,
                    format!(
                        "record {i}: tile {} fits no dataset of the transaction",
                        r.tile
                    ),
                );
            }
            out.push(r);
        }
        Ok(out)
    }

    /// Of each tile's attempts (records of the same dataset and box), the first whose file is
    /// there as recorded: the indices of the records kept, in order. A tile none of whose
    /// attempts is there fails the commit, naming the first attempt's file.
    fn choose(&self, records: &[Record]) -> Result<Vec<usize>> {
        let mut attempts: Vec<Vec<usize>> = Vec::new();
        let mut by_tile = std::collections::HashMap::new();
        for (i, r) in records.iter().enumerate() {
            let key = (r.field, &r.tile.offset, &r.tile.shape);
            let slot = *by_tile.entry(key).or_insert_with(|| {
                attempts.push(Vec::new());
                attempts.len() - 1
            });
            attempts[slot].push(i);
        }
        let mut chosen = Vec::new();
        for tries in attempts {
            let mut first_failure = None;
            for &i in &tries {
                match self.check_file(i, &records[i]) {
                    Ok(()) => {
                        chosen.push(i);
                        first_failure = None;
                        break;
                    }
                    Err(e) => {
                        first_failure.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = first_failure {
                return Err(e);
            }
        }
        chosen.sort_unstable();
        Ok(chosen)
    }

    /// Whether record `i`'s tile file is there, of the size and identity recorded.
    fn check_file(&self, i: usize, r: &Record) -> Result<()> {
        if r.tile.is_empty() {
            return Ok(());
        }
        let path = writer::tile_path(&self.token, r.field, r.attempt);
        let dataset = &self.token.fields[r.field].dataset;
        let what = format!(
            "tile file '{}' of record {i} (dataset '{dataset}' {})",
            path.display(),
            r.tile
        );
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return fail(H5TILE_ERR_MISSING_TILE, format!("{what} is missing"))
            }
            Err(e) => return Err(Error::io(&format!("cannot stat {what}:"), &path, &e)),
        };
        if meta.len() != r.bytes.file_size {
            return fail(
                H5TILE_ERR_CORRUPT,
                format!(
                    "{what} holds {} bytes; its writer recorded {}",
                    meta.len(),
                    r.bytes.file_size
                ),
            );
        }
        if meta.ino() != r.inode {
            return fail(
                H5TILE_ERR_CORRUPT,
                format!(
                    "{what} is not the file its writer made (inode {}, recorded {})",
                    meta.ino(),
                    r.inode
                ),
            );
        }
        Ok(())
    }

    /// Field `f`'s kept tiles must not overlap, and must cover its shape unless
    /// `H5TILE_ALLOW_PARTIAL`; a tile is named by its record.
    fn check_union(&self, f: usize, records: &[Record], chosen: &[usize]) -> Result<()> {
        let field = &self.token.fields[f];
        let mine: Vec<usize> = chosen
            .iter()
            .copied()
            .filter(|&i| records[i].field == f)
            .collect();
        let boxes: Vec<Tile> = mine.iter().map(|&i| records[i].tile.clone()).collect();
        let failed = match coverage::check(&field.global, &boxes) {
            Err(o) => fail(
                H5TILE_ERR_SHAPE,
                format!(
                    "the tile of record {} {} and the tile of record {} {} overlap on {}",
                    mine[o.a], boxes[o.a], mine[o.b], boxes[o.b], o.common
                ),
            ),
            Ok(Coverage::Partial { covered, total }) if !self.options.allow_partial => fail(
                H5TILE_ERR_SHAPE,
                format!(
                    "the records' tiles cover {covered} of the {total} elements of shape {:?}; \
                     a tile is missing, or pass H5TILE_ALLOW_PARTIAL to leave the rest as zeros",
                    field.global
                ),
            ),
            Ok(_) => Ok(()),
        };
        failed.map_err(|e: Error| e.context(&format!("dataset '{}'", field.dataset)))
    }

    /// After the commit: the transaction's tile files it does not map go: attempts not kept,
    /// and those of writers that died before their record reached the commit (a killed Dask
    /// worker whose task ran again elsewhere). Only this transaction's writers name files by
    /// its generation.
    fn remove_unmapped(&self, kept: &std::collections::HashSet<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(layout::tile_dir(&self.token.path)) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours = layout::generation_of(&name) == Some(self.token.generation);
            if ours && !kept.contains(&entry.path()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

impl Drop for Transaction {
    /// A coordinator's open transaction dropped is aborted: its files go.
    fn drop(&mut self) {
        if self.coordinator && matches!(self.state, State::Open) {
            let _ = self.abort();
        }
    }
}

#[cfg(test)]
mod tests;
