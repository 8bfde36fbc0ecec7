//! `ls DIR` and `check DIR` where DIR is a series folder (numbered checkpoints `ckpt.<step>.h5`
//! and the record `latest`, as the library's `ops::series` keeps them): which folders are
//! series, the listing of one, and how a step that did not commit is described.

use crate::failure::Failure;
use crate::ls::DatasetJson;
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

/// Why `c` is not complete, in words: it has no master (a write that did not commit left its
/// tile folder or temporary masters), or its master does not open as HDF5.
pub fn why_incomplete(c: &Checkpoint) -> String {
    let name = |p: &Path| {
        p.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    };
    match c.has_master {
        true => format!("{} does not open as HDF5", name(&c.master)),
        false => {
            let left: Vec<String> = c
                .tile_dir
                .iter()
                .chain(&c.temporaries)
                .map(|p| name(p))
                .collect();
            format!(
                "no master; a write that did not commit left {}",
                left.join(", ")
            )
        }
    }
}

/// `h5tile ls DIR`: one line per checkpoint, newest first (with `--json`, one document).
pub fn ls(dir: &Path, json: bool) -> Result<(), Failure> {
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
            datasets: match c.complete {
                true => describe_stored(&c.master, None).map_err(|e| e.message),
                false => Err(why_incomplete(c)),
            },
        })
        .collect();
    if json {
        return show::json(&Listing {
            dir: show::path(dir),
            latest,
            record,
            checkpoints: rows.iter().map(Row::json).collect(),
        });
    }
    if rows.is_empty() {
        println!("{}: no checkpoints", dir.display());
    }
    let cells: Vec<Vec<String>> = rows.iter().map(Row::cells).collect();
    for line in show::columns(&cells) {
        println!("{line}");
    }
    if let Some(r) = record.filter(|&r| Some(r) != latest) {
        println!(
            "{}: the record '{LATEST_RECORD}' names step {r}, not the latest complete checkpoint",
            dir.display()
        );
    }
    Ok(())
}

/// One checkpoint as `ls DIR` shows it.
struct Row<'a> {
    checkpoint: &'a Checkpoint,
    /// The newest complete checkpoint: the one a restart reads.
    latest: bool,
    /// Its datasets; or why it is incomplete, or cannot be described.
    datasets: Result<Vec<DatasetInfo>, String>,
}

impl Row<'_> {
    /// "step 12  latest  ckpt.000000000012.h5  1.17 KiB  /g float64 (6, 5), /h int32 (4,)".
    fn cells(&self) -> Vec<String> {
        let c = self.checkpoint;
        let mark = match (c.complete, self.latest) {
            (false, _) => "incomplete",
            (true, true) => "latest",
            (true, false) => "",
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
            show::bytes(c.bytes()),
            what,
        ]
    }

    fn json(&self) -> CheckpointJson {
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
            incomplete: (!c.complete).then(|| why_incomplete(c)),
            bytes: c.bytes(),
            tile_dir: c.tile_dir.as_deref().map(show::path),
            temporaries: c.temporaries.iter().map(|p| show::path(p)).collect(),
            error,
            datasets,
        }
    }
}

#[derive(Serialize)]
struct Listing {
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
    /// On disk: the master, its tile folder and any temporary masters.
    bytes: u64,
    /// Its tile folder, or null when it has none.
    tile_dir: Option<String>,
    /// Temporary masters: writes of it that did not commit, or one under way.
    temporaries: Vec<String>,
    /// Why a complete checkpoint cannot be described, else null.
    error: Option<String>,
    datasets: Vec<DatasetJson>,
}
