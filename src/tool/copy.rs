//! Copying a master with the files it takes tiles from (`h5tile cp`), so that the copy reads
//! on its own and can be moved like the original. Every file is written under a temporary
//! name and checked (against the recorded checksums, else byte for byte) before it takes its
//! name, the master last: until then nothing at the destination changes, and a failure leaves
//! nothing behind.

use super::files::{
    destination, folder_of, make_folders, remove_replaced_tiles, rename, same_file, size_of, sync,
    FileError, FileResult,
};
use super::relocate::{point_at_tile_folder, source_files, tile_files_of, Place, SourceFile};
use crate::layout::{new_generation, temporary_master, tile_dir};
use crate::ops::describe::{describe, DatasetInfo};
use crate::ops::verify::{checksummed_bytes, verify_checksums};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// How a copied file was checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verified {
    /// Against the checksums the master records for every tile it holds.
    Checksums,
    /// Byte for byte against the original.
    Bytes,
}

/// One source file copied.
#[derive(Clone, Debug)]
pub struct CopiedFile {
    pub from: PathBuf,
    pub to: PathBuf,
    pub bytes: u64,
    pub verified: Verified,
}

/// What a copy did.
#[derive(Clone, Debug)]
pub struct CopyReport {
    /// Where the copy is (the destination as given, or the file in it under SRC's name).
    pub destination: PathBuf,
    pub copied: Vec<CopiedFile>,
    /// Sources the copy reads where the original does (relative ones, copied within their
    /// folder).
    pub shared: Vec<PathBuf>,
    /// The copy's datasets were pointed at its own tile folder.
    pub master_rewritten: bool,
    /// Tile files of the replaced destination (with `force`) that the copy did not reuse.
    pub removed: Vec<PathBuf>,
}

/// One source file to copy.
struct Planned {
    source: SourceFile,
    to: PathBuf,
    temporary: PathBuf,
    size: u64,
    /// A file is at `to` already (replaced, with `force`).
    existed: bool,
}

/// A copy of a master, checked and planned but not begun: where each file goes, so that the
/// caller knows how much there is to do before it starts.
pub struct CopyPlan {
    src: PathBuf,
    dst: PathBuf,
    datasets: Vec<DatasetInfo>,
    files: Vec<Planned>,
    shared: Vec<PathBuf>,
    old_tiles: Vec<PathBuf>,
    master_size: u64,
}

/// What is left to undo if the copy fails: temporary files, files renamed into place that were
/// not there before, and folders made for the copy.
#[derive(Default)]
struct Undo {
    files: Vec<PathBuf>,
    folders: Vec<PathBuf>,
}

impl Drop for Undo {
    fn drop(&mut self) {
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
        for d in self.folders.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

impl CopyPlan {
    /// Plans copying the master `src` to `dst` (a file, or a folder to copy into under SRC's
    /// name) with the files it takes tiles from, or with none when `shallow`. Refuses (nothing
    /// is written) sources the copy could not make its own (absolute paths, patterns), a
    /// destination that is SRC or a folder, and, unless `force`, one where a file exists; fails
    /// when a source is missing.
    pub fn new(src: &Path, dst: &Path, force: bool, shallow: bool) -> FileResult<CopyPlan> {
        let datasets = describe(src, None)?;
        let dst = destination(src, dst);
        if same_file(src, &dst) {
            return Err(FileError::Refused(format!(
                "cannot copy '{}' to '{}': they are the same file",
                src.display(),
                dst.display()
            )));
        }
        let sources = match shallow {
            true => Vec::new(),
            false => source_files(src, &datasets),
        };
        refuse_unreachable(src, &sources)?;
        let (files, shared) = plan(&dst, sources)?;
        refuse_overwrite(&dst, &files, force)?;
        let old_tiles = match force {
            true => tile_files_of(&dst),
            false => Vec::new(),
        };
        Ok(CopyPlan {
            master_size: size_of(src)?,
            src: src.to_path_buf(),
            dst,
            datasets,
            files,
            shared,
            old_tiles,
        })
    }

    /// The bytes the copy reads and writes: every file copied, then read back to check it.
    pub fn total_bytes(&self) -> u64 {
        2 * (self.master_size + self.files.iter().map(|p| p.size).sum::<u64>())
    }

    /// Copies and checks every file, then renames them into place, the master last; on
    /// failure removes what it wrote. `progress(n)` is told of every `n` bytes done, of
    /// `total_bytes` in all.
    pub fn run(self, progress: &dyn Fn(u64)) -> FileResult<CopyReport> {
        let (src, dst) = (&self.src, &self.dst);
        let mut undo = Undo::default();
        if let Some(dir) = dst.parent() {
            make_folders(dir, &mut undo.folders)?;
        }
        let mut copied = Vec::new();
        for p in &self.files {
            if let Some(dir) = p.to.parent() {
                make_folders(dir, &mut undo.folders)?;
            }
            undo.files.push(p.temporary.clone());
            copy_file(&p.source.path, &p.temporary, progress)?;
            let verified = verify_copy(src, p, &self.datasets, progress)?;
            copied.push(CopiedFile {
                from: p.source.path.clone(),
                to: p.to.clone(),
                bytes: p.size,
                verified,
            });
        }

        let temporary = temporary_master(dst, new_generation());
        undo.files.push(temporary.clone());
        copy_file(src, &temporary, progress)?;
        let (from, to) = (folder_name(src), folder_name(dst));
        let in_tile_folder = self
            .files
            .iter()
            .any(|p| matches!(p.source.place, Place::TileFolder(_)));
        let master_rewritten = in_tile_folder && from != to;
        if master_rewritten {
            point_at_tile_folder(&temporary, &from, &to).map_err(|e| {
                FileError::Failed(format!(
                    "cannot point the copy '{}' at its tile folder '{to}': {}",
                    temporary.display(),
                    e.message
                ))
            })?;
            same_but_renamed(&self.datasets, &temporary, &from, &to)?;
            sync(&temporary)?;
            progress(self.master_size);
        } else {
            compare_bytes(src, &temporary, progress)?;
        }

        // Everything is written and verified: the files take their names, the master last.
        for p in &self.files {
            rename(&p.temporary, &p.to)?;
            if !p.existed {
                undo.files.push(p.to.clone());
            }
        }
        for dir in folders_of(&self.files) {
            sync(&dir)?;
        }
        rename(&temporary, dst)?;
        std::mem::take(&mut undo.files);
        std::mem::take(&mut undo.folders);
        sync(folder_of(dst))?;

        let reused: Vec<&PathBuf> = self.files.iter().map(|p| &p.to).collect();
        let removed = remove_replaced_tiles(dst, &self.old_tiles, &reused);
        Ok(CopyReport {
            destination: self.dst.clone(),
            copied,
            shared: self.shared,
            master_rewritten,
            removed,
        })
    }
}

/// Refuses sources the copy could not make its own (absolute paths, patterns) and missing ones.
fn refuse_unreachable(src: &Path, sources: &[SourceFile]) -> FileResult<()> {
    let stuck: Vec<&SourceFile> = sources
        .iter()
        .filter(|s| matches!(s.place, Place::Absolute | Place::Pattern))
        .collect();
    if let Some(first) = stuck.first() {
        return Err(FileError::Refused(format!(
            "cannot copy '{}': {} of its source files {} named by absolute paths or patterns \
             (first: '{}'), which the copy would still read where they are; copy them yourself \
             and pass --shallow to copy the master alone",
            src.display(),
            stuck.len(),
            if stuck.len() == 1 { "is" } else { "are" },
            first.name
        )));
    }
    match sources.iter().find(|s| !s.found) {
        Some(missing) => Err(FileError::Failed(format!(
            "cannot copy '{}': its source file '{}' does not exist (see h5tile check)",
            src.display(),
            missing.path.display()
        ))),
        None => Ok(()),
    }
}

/// Where each source goes, and the sources the copy shares with the original because they
/// are where the copy would put them (a relative source, copied within its folder).
fn plan(dst: &Path, sources: Vec<SourceFile>) -> FileResult<(Vec<Planned>, Vec<PathBuf>)> {
    let mut planned = Vec::new();
    let mut shared = Vec::new();
    for source in sources {
        let to = match &source.place {
            Place::TileFolder(inside) => tile_dir(dst).join(inside),
            Place::Relative(path) => folder_of(dst).join(path),
            Place::Absolute | Place::Pattern => unreachable!("refused before"),
        };
        if same_file(&source.path, &to) {
            shared.push(to);
            continue;
        }
        let name = to.file_name().unwrap_or_default().to_string_lossy();
        let temporary = to.with_file_name(format!(".{name}.cp{}.tmp", std::process::id()));
        planned.push(Planned {
            size: size_of(&source.path)?,
            existed: to.exists(),
            source,
            to,
            temporary,
        });
    }
    Ok((planned, shared))
}

/// Refuses to replace `dst` or any file the copy would put beside it, unless `force`.
fn refuse_overwrite(dst: &Path, plan: &[Planned], force: bool) -> FileResult<()> {
    if dst.is_dir() {
        return Err(FileError::Refused(format!(
            "cannot copy to '{}': it is a directory",
            dst.display()
        )));
    }
    if force {
        return Ok(());
    }
    let existing = std::iter::once(dst)
        .chain(plan.iter().map(|p| p.to.as_path()))
        .find(|p| p.exists());
    match existing {
        Some(p) => Err(FileError::Refused(format!(
            "cannot copy to '{}': '{}' exists (--force replaces it)",
            dst.display(),
            p.display()
        ))),
        None => Ok(()),
    }
}

/// Checks the copy of `p` at its temporary name: against the checksums of every tile it
/// holds where all of them have some, else byte for byte.
fn verify_copy(
    src: &Path,
    p: &Planned,
    datasets: &[DatasetInfo],
    progress: &dyn Fn(u64),
) -> FileResult<Verified> {
    let tiles: Vec<_> = p
        .source
        .tiles
        .iter()
        .map(|&(d, t)| {
            let info = &datasets[d];
            let vds = info
                .virtual_info
                .as_ref()
                .expect("tiles of virtual datasets");
            (info, &vds.tiles[t])
        })
        .filter(|(_, t)| t.region.is_some())
        .collect();
    let all_checksummed = tiles
        .iter()
        .all(|(info, t)| checksummed_bytes(t, info.element_bytes) > 0);
    if tiles.is_empty() || !all_checksummed {
        compare_bytes(&p.source.path, &p.temporary, progress)?;
        return Ok(Verified::Bytes);
    }
    if size_of(&p.temporary)? != p.size {
        return Err(FileError::Failed(format!(
            "copy of '{}' at '{}' is not of the original's size",
            p.source.path.display(),
            p.temporary.display()
        )));
    }
    for (info, tile) in &tiles {
        let scheme = info.virtual_info.as_ref().and_then(|v| v.checksums);
        let check = |path: &Path, count: bool| {
            let add = |n| {
                if count {
                    progress(n)
                }
            };
            verify_checksums(path, tile, info.element_bytes, scheme, &add)
        };
        if let Some(problem) = check(&p.temporary, true).first() {
            // The copy's fault, or was the original already damaged?
            return Err(match check(&p.source.path, false).first() {
                Some(original) => FileError::Failed(format!(
                    "cannot copy '{}': the original is damaged: {}: {original} (see h5tile \
                     check)",
                    src.display(),
                    info.name
                )),
                None => FileError::Failed(format!("copy does not match the original: {problem}")),
            });
        }
    }
    progress(
        p.size.saturating_sub(
            tiles
                .iter()
                .map(|(i, t)| checksummed_bytes(t, i.element_bytes))
                .sum(),
        ),
    );
    Ok(Verified::Checksums)
}

/// Checks that the master copy `copy`, pointed at tile folder `to`, has the datasets, tiles
/// and records of the original (`datasets`), its sources in `from` renamed.
fn same_but_renamed(datasets: &[DatasetInfo], copy: &Path, from: &str, to: &str) -> FileResult<()> {
    let differs = |what: String| {
        FileError::Failed(format!(
            "the master copied to '{}' differs from the original: {what}",
            copy.display()
        ))
    };
    let copied = describe(copy, None).map_err(|e| differs(e.message))?;
    if copied.len() != datasets.len() {
        return Err(differs(format!(
            "{} datasets, not {}",
            copied.len(),
            datasets.len()
        )));
    }
    for (a, b) in datasets.iter().zip(&copied) {
        let same =
            a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.storage == b.storage;
        if !same {
            return Err(differs(format!("dataset '{}' is not '{}'", b.name, a.name)));
        }
        let (Some(va), Some(vb)) = (&a.virtual_info, &b.virtual_info) else {
            continue;
        };
        let expected = |name: &str| match name.strip_prefix(&format!("{from}/")) {
            Some(rest) => format!("{to}/{rest}"),
            None => name.to_string(),
        };
        let tiles_match = va.tiles.len() == vb.tiles.len()
            && va.checksums == vb.checksums
            && va.tiles.iter().zip(&vb.tiles).all(|(x, y)| {
                x.region == y.region
                    && y.file == expected(&x.file)
                    && x.dataset == y.dataset
                    && x.data_offset == y.data_offset
                    && x.file_size == y.file_size
                    && x.sums == y.sums
                    && x.extremes == y.extremes
            });
        if !tiles_match {
            return Err(differs(format!(
                "the tiles of '{}' are not the original's",
                a.name
            )));
        }
    }
    Ok(())
}

/// The name of `master`'s tile folder.
fn folder_name(master: &Path) -> String {
    tile_dir(master)
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// Copies the file `from` to `to` (created or truncated) and syncs it. Holes stay holes: a
/// tile file's data starts on a 2 MiB boundary after one, which a dense copy would fill.
fn copy_file(from: &Path, to: &Path, progress: &dyn Fn(u64)) -> FileResult<()> {
    let mut input = std::fs::File::open(from)
        .map_err(|e| FileError::io(format!("cannot read '{}'", from.display()), &e))?;
    let mut output = std::fs::File::create(to)
        .map_err(|e| FileError::io(format!("cannot create '{}'", to.display()), &e))?;
    let read_failed =
        |e: std::io::Error| FileError::io(format!("cannot read '{}'", from.display()), &e);
    let write_failed =
        |e: std::io::Error| FileError::io(format!("cannot write '{}'", to.display()), &e);
    let len = input.metadata().map_err(read_failed)?.len();
    let mut buf = vec![0u8; 8 << 20];
    let mut at = 0u64;
    while at < len {
        let (start, end) = data_after(&input, at, len).map_err(read_failed)?;
        progress(start - at);
        input.seek(SeekFrom::Start(start)).map_err(read_failed)?;
        output.seek(SeekFrom::Start(start)).map_err(write_failed)?;
        let mut left = end - start;
        while left > 0 {
            let want = buf.len().min(left as usize);
            let n = input.read(&mut buf[..want]).map_err(read_failed)?;
            if n == 0 {
                break; // the file shrank under us: the comparison after the copy says so
            }
            output.write_all(&buf[..n]).map_err(write_failed)?;
            progress(n as u64);
            left -= n as u64;
        }
        at = end;
    }
    // A trailing hole, and the length: the copy is as long as the original.
    output.set_len(len).map_err(write_failed)?;
    output
        .sync_all()
        .map_err(|e| FileError::io(format!("cannot sync '{}'", to.display()), &e))
}

/// The next run of data in `file` from `at` on, as [start, end) (`SEEK_DATA`, `SEEK_HOLE`);
/// where the file system cannot tell, all of [at, len) is data. [len, len) past the last data.
fn data_after(file: &std::fs::File, at: u64, len: u64) -> std::io::Result<(u64, u64)> {
    use std::os::fd::AsRawFd;
    let seek = |whence| unsafe { libc::lseek(file.as_raw_fd(), at as libc::off_t, whence) };
    let start = seek(libc::SEEK_DATA);
    if start < 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENXIO) => Ok((len, len)), // no data after `at`
            Some(libc::EINVAL) => Ok((at, len)), // no SEEK_DATA here
            _ => Err(e),
        };
    }
    let start = start as u64;
    let seek_hole = unsafe { libc::lseek(file.as_raw_fd(), start as libc::off_t, libc::SEEK_HOLE) };
    let end = if seek_hole < 0 {
        len
    } else {
        (seek_hole as u64).min(len)
    };
    Ok((start.min(len), end))
}

/// Checks that `copy` holds the bytes of `original`.
fn compare_bytes(original: &Path, copy: &Path, progress: &dyn Fn(u64)) -> FileResult<()> {
    let open = |p: &Path| {
        std::fs::File::open(p)
            .map_err(|e| FileError::io(format!("cannot read '{}'", p.display()), &e))
    };
    let (mut a, mut b) = (open(original)?, open(copy)?);
    let (mut x, mut y) = (vec![0u8; 4 << 20], vec![0u8; 4 << 20]);
    let mut at = 0u64;
    loop {
        let n = read_full(&mut a, &mut x, original)?;
        let m = read_full(&mut b, &mut y, copy)?;
        if n != m || x[..n] != y[..m] {
            let first = x[..n.min(m)]
                .iter()
                .zip(&y[..n.min(m)])
                .position(|(p, q)| p != q)
                .unwrap_or(n.min(m));
            return Err(FileError::Failed(format!(
                "copy '{}' differs from '{}' from byte {}",
                copy.display(),
                original.display(),
                at + first as u64
            )));
        }
        if n == 0 {
            return Ok(());
        }
        at += n as u64;
        progress(n as u64);
    }
}

/// Fills `buf` from `file` as far as it goes; the bytes read.
fn read_full(file: &mut std::fs::File, buf: &mut [u8], path: &Path) -> FileResult<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(FileError::io(
                    format!("cannot read '{}'", path.display()),
                    &e,
                ))
            }
        }
    }
    Ok(filled)
}

/// The folders that received files of `plan`.
fn folders_of(plan: &[Planned]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = plan
        .iter()
        .filter(|p| p.to.parent().is_some())
        .map(|p| folder_of(&p.to).to_path_buf())
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}
