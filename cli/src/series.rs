//! `ls DIR` and `check DIR` where DIR is a series folder (numbered checkpoints `ckpt.<step>.h5`
//! and the record `latest`, as the library's `ops::series` keeps them): which folders are
//! series, the listing of one, and how a step that is not a complete checkpoint is described
//! (a write that did not commit, or a pruning that was interrupted).

use crate::dataset_json::DatasetJson;
use crate::failure::Failure;
use crate::show;
use h5tile::internals::tool::{
    checkpoints, describe_stored, looks_like_series, recorded, Checkpoint, DatasetInfo,
    LATEST_RECORD,
};
use serde::Serialize;
use std::path::Path;

/// Whether `path` is a folder that `ls` and `check` take as a series: one holding the record or
/// anything of a checkpoint, or an empty one (a series before its first checkpoint). Any other
/// folder is refused as before ("it is a directory").
pub fn is_series(path: &Path) -> bool {
    path.is_dir()
        && (looks_like_series(path)
            || std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none()))
}

/// What a step that is not a complete checkpoint is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Incomplete {
    /// No master, and not older than the latest complete step: a write that did not commit
    /// (or one under way).
    NotCommitted,
    /// No master, and older than the latest complete step: what a commit's pruning leaves
    /// when it stops midway (`Checkpoint::pruning_interrupted`).
    PruningInterrupted,
    /// Its master does not open as HDF5.
    NotHdf5,
}

impl Incomplete {
    /// What `c` (not complete) is, `latest` being the series' newest complete step.
    pub fn of(c: &Checkpoint, latest: Option<u64>) -> Incomplete {
        match (c.has_master, c.pruning_interrupted(latest)) {
            (true, _) => Incomplete::NotHdf5,
            (false, true) => Incomplete::PruningInterrupted,
            (false, false) => Incomplete::NotCommitted,
        }
    }

    /// Its name in JSON documents.
    pub fn key(self) -> &'static str {
        match self {
            Incomplete::NotCommitted => "not_committed",
            Incomplete::PruningInterrupted => "pruning_interrupted",
            Incomplete::NotHdf5 => "not_hdf5",
        }
    }

    /// How `ls` marks it.
    pub fn mark(self) -> &'static str {
        match self {
            Incomplete::PruningInterrupted => "pruning interrupted",
            _ => "incomplete",
        }
    }
}

/// The newest complete step of `found` (newest first, as `checkpoints` lists them).
pub fn latest_complete(found: &[Checkpoint]) -> Option<u64> {
    found.iter().find(|c| c.complete).map(|c| c.step)
}

fn name(p: &Path) -> String {
    p.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// Why `c` is not complete, in words, `latest` being the newest complete step: a write that
/// did not commit left its tile folder or temporary masters; or a commit's pruning stopped
/// while it removed the step (the master goes first), and the next commit removes the rest;
/// or its master does not open as HDF5.
pub fn why_incomplete(c: &Checkpoint, latest: Option<u64>) -> String {
    let left: Vec<String> = c
        .tile_dir
        .iter()
        .chain(&c.temporaries)
        .map(|p| name(p))
        .collect();
    match (Incomplete::of(c, latest), latest) {
        (Incomplete::NotHdf5, _) => format!("{} does not open as HDF5", name(&c.master)),
        (Incomplete::PruningInterrupted, Some(latest)) => format!(
            "no master, and older than step {latest}, the latest complete checkpoint: a \
             commit's pruning removed its master and stopped before {}; the next commit \
             removes it",
            left.join(", ")
        ),
        _ => format!(
            "no master; a write that did not commit left {}",
            left.join(", ")
        ),
    }
}

/// `h5tile ls DIR`: one line per checkpoint, newest first (with `--json`, one document).
/// `h5tile ls DIR`: one line per checkpoint, newest first, and its JSON document.
pub fn ls(dir: &Path) -> Result<(Vec<String>, Listing), Failure> {
    let found = checkpoints(dir)?;
    // Newest first: the first complete one is what a restart reads (of two names of one
    // step, the one readers take).
    let newest = found.iter().position(|c| c.complete);
    let latest = newest.map(|k| found[k].step);
    let record = recorded(dir).map(|(step, _)| step);
    let rows: Vec<Row> = found
        .iter()
        .enumerate()
        .map(|(k, c)| Row {
            checkpoint: c,
            latest: Some(k) == newest,
            incomplete: (!c.complete).then(|| Incomplete::of(c, latest)),
            datasets: match c.complete {
                true => describe_stored(&c.master, None).map_err(|e| e.message),
                false => Err(why_incomplete(c, latest)),
            },
        })
        .collect();
    let listing = Listing {
        dir: show::path(dir),
        latest,
        record,
        checkpoints: rows.iter().map(|r| r.json(latest)).collect(),
    };
    let mut lines = Vec::new();
    if rows.is_empty() {
        lines.push(format!("{}: no checkpoints", dir.display()));
    }
    let cells: Vec<Vec<String>> = rows.iter().map(Row::cells).collect();
    lines.extend(show::columns(&cells));
    if let Some(r) = record.filter(|&r| Some(r) != latest) {
        lines.push(format!(
            "{}: the record '{LATEST_RECORD}' names step {r}, not the latest complete checkpoint",
            dir.display()
        ));
    }
    Ok((lines, listing))
}

/// One checkpoint as `ls DIR` shows it.
struct Row<'a> {
    checkpoint: &'a Checkpoint,
    /// The newest complete checkpoint: the one a restart reads.
    latest: bool,
    /// What it is, when it is not complete.
    incomplete: Option<Incomplete>,
    /// Its datasets; or why it is incomplete, or cannot be described.
    datasets: Result<Vec<DatasetInfo>, String>,
}

impl Row<'_> {
    /// "step 12  latest  ckpt.000000000012.h5  1.17 KiB  /g float64 (6, 5), /h int32 (4,)".
    fn cells(&self) -> Vec<String> {
        let c = self.checkpoint;
        let mark = match (self.incomplete, self.latest) {
            (Some(kind), _) => kind.mark(),
            (None, true) => "latest",
            (None, false) => "",
        };
        let what = match &self.datasets {
            Ok(all) if all.is_empty() => "no datasets".to_string(),
            Ok(all) => all
                .iter()
                .map(|d| format!("{} {} {}", d.name, d.dtype, show::shape(&d.shape)))
                .collect::<Vec<_>>()
                .join(", "),
            Err(why) => why.clone(),
        };
        vec![
            format!("step {}", c.step),
            mark.to_string(),
            c.master
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            show::disk_use(c.used_bytes(), c.bytes()),
            what,
        ]
    }

    fn json(&self, latest: Option<u64>) -> CheckpointJson {
        let c = self.checkpoint;
        let (datasets, error) = match (&self.datasets, c.complete) {
            (Ok(all), _) => (
                all.iter().map(|d| DatasetJson::of(d, false)).collect(),
                None,
            ),
            (Err(_), false) => (Vec::new(), None),
            (Err(why), true) => (Vec::new(), Some(why.clone())),
        };
        CheckpointJson {
            step: c.step,
            file: show::path(&c.master),
            latest: self.latest,
            complete: c.complete,
            incomplete: (!c.complete).then(|| why_incomplete(c, latest)),
            incomplete_kind: self.incomplete.map(Incomplete::key),
            bytes: c.bytes(),
            used_bytes: c.used_bytes(),
            tile_dir: c.tile_dir.as_deref().map(show::path),
            temporaries: c.temporaries.iter().map(|p| show::path(p)).collect(),
            error,
            datasets,
        }
    }
}

/// `ls DIR --json`'s document.
#[derive(Serialize)]
pub struct Listing {
    dir: String,
    /// The newest complete checkpoint's step, or null when there is none.
    latest: Option<u64>,
    /// The step the record `latest` names, or null when there is no record.
    record: Option<u64>,
    checkpoints: Vec<CheckpointJson>,
}

#[derive(Serialize)]
struct CheckpointJson {
    step: u64,
    /// The master's path (where it would be, for an incomplete step).
    file: String,
    latest: bool,
    complete: bool,
    /// Why it is not complete, else null.
    incomplete: Option<String>,
    /// What it is when not complete: "not_committed" (a write that did not commit),
    /// "pruning_interrupted" (the next commit removes it) or "not_hdf5"; else null.
    incomplete_kind: Option<&'static str>,
    /// The apparent size of its files: the master, its tile folder's and any temporary
    /// masters.
    bytes: u64,
    /// The space those files use on disk (their blocks; less than `bytes` where files have
    /// holes).
    used_bytes: u64,
    /// Its tile folder, or null when it has none.
    tile_dir: Option<String>,
    /// Temporary masters: writes of it that did not commit, or one under way.
    temporaries: Vec<String>,
    /// Why a complete checkpoint cannot be described, else null.
    error: Option<String>,
    datasets: Vec<DatasetJson>,
}
