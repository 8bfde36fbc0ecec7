//! A checkpoint assembled call by call (`h5tile_checkpoint_add`, `_attr`, from C, Fortran
//! and Python), and its commit followed, in a series, by the series' bookkeeping.

use crate::dtype::Dtype;
use crate::ops::series::{self, SeriesOptions};
use crate::ops::write::{self, Attribute, AttributeValue, Checkpoint, Field, LocalTile};
use crate::platform::comm::Comm;
use crate::status::*;
use std::path::{Path, PathBuf};

/// The step of a series a checkpoint is written as.
#[derive(Clone, Debug)]
pub struct SeriesStep {
    pub dir: PathBuf,
    pub step: u64,
    pub options: SeriesOptions,
}

/// A checkpoint being assembled on one rank.
#[derive(Debug)]
pub struct Assembly<'a> {
    pub checkpoint: Checkpoint<'a>,
    pub series: Option<SeriesStep>,
    /// The first `add` or `attr` that failed on this rank: its commit then fails with it on
    /// every rank, so that a program may check the commit's status alone.
    pub failed: Option<Error>,
}

impl<'a> Assembly<'a> {
    pub fn new(checkpoint: Checkpoint<'a>, series: Option<SeriesStep>) -> Assembly<'a> {
        Assembly {
            checkpoint,
            series,
            failed: None,
        }
    }

    /// Notes `outcome` (the first failure is kept) and returns it.
    pub fn note(&mut self, outcome: Result<()>) -> Result<()> {
        if let (Err(e), None) = (&outcome, &self.failed) {
            self.failed = Some(e.clone());
        }
        outcome
    }

    /// Adds one tile of `dataset` (of `dtype` and `global` shape). Tiles of one dataset may
    /// come in several calls, each giving the same type and shape.
    pub fn add(
        &mut self,
        dataset: &str,
        dtype: Dtype,
        global: &[u64],
        tile: LocalTile<'a>,
    ) -> Result<()> {
        let fields = &mut self.checkpoint.fields;
        let Some(field) = fields.iter_mut().find(|f| f.dataset == dataset) else {
            fields.push(Field {
                dataset: dataset.to_string(),
                dtype,
                global: global.to_vec(),
                tiles: vec![tile],
            });
            return Ok(());
        };
        if field.dtype != dtype || field.global != global {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "dataset '{dataset}' was added as {} {:?}, and now as {} {global:?}",
                    field.dtype.name(),
                    field.global,
                    dtype.name()
                ),
            );
        }
        field.tiles.push(tile);
        Ok(())
    }

    /// Sets attribute `name` of `object`, replacing one set before.
    pub fn attr(&mut self, object: &str, name: &str, value: AttributeValue) {
        let attributes = &mut self.checkpoint.attributes;
        attributes.retain(|a| (a.object.as_str(), a.name.as_str()) != (object, name));
        attributes.push(Attribute {
            object: object.to_string(),
            name: name.to_string(),
            value,
        });
    }

    /// The checks every rank makes before a commit, agreed: a failed `add` or `attr` on any
    /// rank, or a bad argument, fails the commit everywhere before anything is written.
    pub fn check(&self, comm: &Comm) -> Result<()> {
        comm.agree_on(|| match &self.failed {
            Some(e) => Err(e.clone()),
            None => write::check(&self.checkpoint),
        })
    }
}

/// Commits `ck` after `Assembly::check`, then, in a series, records it as the latest and
/// removes what the retention rule no longer keeps (rank 0 alone; the outcome is agreed).
pub fn commit_checked(comm: &Comm, ck: &Checkpoint, series: Option<&SeriesStep>) -> Result<()> {
    write::commit_checked(comm, ck)?;
    let Some(s) = series else {
        return Ok(());
    };
    comm.agree_on(|| match comm.is_root() {
        true => series::record_latest(&s.dir, s.step, !ck.options.no_sync)
            .and_then(|()| series::prune(&s.dir, s.step, s.options))
            .map_err(|e| {
                e.context(&format!(
                    "after step {} of series '{}' was committed",
                    s.step,
                    s.dir.display()
                ))
            }),
        false => Ok(()),
    })
}

/// Attribute `name` of `object` in the file `path` as `count` values of `dtype`.
pub fn read_attribute(
    path: &Path,
    object: &str,
    name: &str,
    dtype: Dtype,
    count: usize,
) -> Result<Vec<u8>> {
    if !path.is_file() {
        return fail(
            H5TILE_ERR_NOT_FOUND,
            format!("no file '{}'", path.display()),
        );
    }
    let file = crate::platform::hdf5::File::open_read(path)
        .map_err(|e| crate::ops::read::unless_removed(path, e))?;
    file.attribute_values(object, name, dtype, count)
}
