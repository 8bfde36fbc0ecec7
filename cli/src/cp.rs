//! `h5tile cp SRC DST`: a master copied with the files it takes tiles from, so that the copy
//! reads on its own and can be moved like the original. Every file is written under a
//! temporary name and checked (against the recorded checksums, else byte for byte) before it
//! takes its name, the master last: until then nothing at DST changes, and a failure leaves
//! nothing behind.

use crate::failure::Failure;
use crate::progress::{Progress, When};
use crate::show;
use h5tile::internals::tool::{
    checksummed_bytes, describe, new_generation, point_at_tile_folder, source_files,
    temporary_master, tile_dir, verify_checksums, DatasetInfo, Place, SourceFile,
};
use serde::Serialize;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub const LONG_ABOUT: &str = "\
Copy the master SRC to DST together with the files its virtual datasets take tiles from, so
that DST reads on its own and can itself be moved or copied. Only the files SRC refers to are
copied: tile files and subfiles from SRC's tile folder go to DST's (<DST>.tiles/, the master's
datasets pointed at it when the name changes); other sources named by paths relative to SRC
go to the same paths relative to DST (missing folders are made). Sources at absolute paths
(Legate's) would still be read by the copy from where they are: cp refuses them, unless
--shallow, which copies the master alone, as it is.

Each file is written under a temporary name, synced and verified (tiles against the checksums
the master records, other files byte for byte), then renamed into place, the master last, so
DST is never a half copy; on failure nothing is left. An existing DST is not replaced without
--force; with --force, the tile files of the replaced DST that the copy does not reuse are
removed once the copy is in place.

Output: what was copied and how it was verified. With --json, one document {\"source\",
\"destination\", \"copied\": [{\"from\", \"to\", \"bytes\", \"verified\"}], \"shared\",
\"master_rewritten\", \"removed\"}.

Exit status: 0 when the copy is in place and verified; 1 when copying or verifying failed (a
source missing or damaged included); 2 when SRC cannot be opened or the copy is refused (DST
exists, sources at absolute paths).";

pub const EXAMPLES: &str = "\
Examples:
  h5tile cp run/out.h5 archive/out.h5        # out.h5 and out.h5.tiles/ into archive/
  h5tile cp run/out.h5 archive/              # the same
  h5tile cp run/out.h5 run/out-step100.h5    # tiles go to run/out-step100.h5.tiles/
  h5tile cp --shallow legate.h5 /backup/     # the master alone";

#[derive(clap::Args)]
pub struct Args {
    /// The master (or any HDF5 file) to copy
    src: PathBuf,
    /// The copy: a file name, or an existing folder to copy into under SRC's name
    dst: PathBuf,
    /// Replace DST and the files the copy puts beside it if they exist
    #[arg(short, long)]
    force: bool,
    /// Copy the master alone, as it is: it keeps naming its sources as before
    #[arg(long)]
    shallow: bool,
}

/// One source file to copy.
struct Planned<'a> {
    source: &'a SourceFile,
    to: PathBuf,
    temporary: PathBuf,
    size: u64,
    /// A file is at `to` already (replaced, with --force).
    existed: bool,
}

/// What is left to undo if the copy fails: temporary files, files renamed into place that were
/// not there before, and a tile folder made for the copy.
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

/// Where SRC goes when given DST: into DST when it is a folder or ends with '/' (a folder
/// to be created, as in `h5tile cp run/out.h5 archive/`), under SRC's name; else DST.
pub(crate) fn destination(src: &Path, dst: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    match dst.is_dir() || dst.as_os_str().as_bytes().ends_with(b"/") {
        true => dst.join(src.file_name().unwrap_or_default()),
        false => dst.to_path_buf(),
    }
}

pub fn run(args: &Args, json: bool, when: When) -> Result<(), Failure> {
    let src = &args.src;
    let datasets = describe(src, None)?;
    let dst = destination(src, &args.dst);
    if same_file(src, &dst) {
        return Err(Failure::usage(format!(
            "cannot copy '{}' to '{}': they are the same file",
            src.display(),
            dst.display()
        )));
    }
    let sources = match args.shallow {
        true => Vec::new(),
        false => source_files(src, &datasets),
    };
    refuse_unreachable(src, &sources)?;
    let (plan, shared) = plan(&dst, &sources)?;
    refuse_overwrite(&dst, &plan, args.force)?;
    let old_tiles = match args.force {
        true => tile_files_of(&dst),
        false => Vec::new(),
    };

    let master_size = size_of(src)?;
    let total = 2 * (master_size + plan.iter().map(|p| p.size).sum::<u64>());
    let progress = Progress::bytes(total, "copying", when);
    let mut undo = Undo::default();
    if let Some(dir) = dst.parent() {
        make_folder(dir, &mut undo)?;
    }
    let mut copied = Vec::new();
    for p in &plan {
        if let Some(dir) = p.to.parent() {
            make_folder(dir, &mut undo)?;
        }
        undo.files.push(p.temporary.clone());
        copy_file(&p.source.path, &p.temporary, &progress)?;
        let verified = verify_copy(src, p, &datasets, &progress)?;
        copied.push(Copied {
            from: show::path(&p.source.path),
            to: show::path(&p.to),
            bytes: p.size,
            verified,
        });
    }

    let temporary = temporary_master(&dst, new_generation());
    undo.files.push(temporary.clone());
    copy_file(src, &temporary, &progress)?;
    let (from, to) = (folder_name(src), folder_name(&dst));
    let in_tile_folder = plan
        .iter()
        .any(|p| matches!(p.source.place, Place::TileFolder(_)));
    let master_rewritten = in_tile_folder && from != to;
    if master_rewritten {
        point_at_tile_folder(&temporary, &from, &to).map_err(|e| {
            Failure::problems(format!(
                "cannot point the copy '{}' at its tile folder '{to}': {}",
                temporary.display(),
                e.message
            ))
        })?;
        same_but_renamed(&datasets, &temporary, &from, &to)?;
        sync(&temporary)?;
        progress.add(master_size);
    } else {
        compare_bytes(src, &temporary, &progress)?;
    }

    // Everything is written and verified: the files take their names, the master last.
    for p in &plan {
        rename(&p.temporary, &p.to)?;
        if !p.existed {
            undo.files.push(p.to.clone());
        }
    }
    for dir in folders_of(&plan) {
        sync(&dir)?;
    }
    rename(&temporary, &dst)?;
    std::mem::take(&mut undo.files);
    std::mem::take(&mut undo.folders);
    progress.finish();
    let parent = dst.parent().filter(|p| !p.as_os_str().is_empty());
    sync(parent.unwrap_or(Path::new(".")))?;

    // The replaced master's tiles that the copy does not reuse are nobody's now.
    let targets: Vec<&PathBuf> = plan.iter().map(|p| &p.to).collect();
    let mut removed = Vec::new();
    for old in old_tiles.iter().filter(|o| !targets.contains(o)) {
        if std::fs::remove_file(old).is_ok() {
            removed.push(show::path(old));
        }
    }
    if !old_tiles.is_empty() {
        let _ = std::fs::remove_dir(tile_dir(&dst));
    }

    let report = Report {
        source: show::path(src),
        destination: show::path(&dst),
        copied,
        shared: shared.iter().map(|p| show::path(p)).collect(),
        master_rewritten,
        removed,
    };
    match json {
        true => show::json(&report),
        false => {
            print_text(&report);
            Ok(())
        }
    }
}

/// Refuses sources the copy could not make its own (absolute paths, patterns) and missing ones.
fn refuse_unreachable(src: &Path, sources: &[SourceFile]) -> Result<(), Failure> {
    let stuck: Vec<&SourceFile> = sources
        .iter()
        .filter(|s| matches!(s.place, Place::Absolute | Place::Pattern))
        .collect();
    if let Some(first) = stuck.first() {
        return Err(Failure::usage(format!(
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
        Some(missing) => Err(Failure::problems(format!(
            "cannot copy '{}': its source file '{}' does not exist (see h5tile check)",
            src.display(),
            missing.path.display()
        ))),
        None => Ok(()),
    }
}

/// Where each source goes, and the sources the copy shares with the original because they
/// are where the copy would put them (a relative source, copied within its folder).
fn plan<'a>(
    dst: &Path,
    sources: &'a [SourceFile],
) -> Result<(Vec<Planned<'a>>, Vec<PathBuf>), Failure> {
    let dst_folder = dst
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut planned = Vec::new();
    let mut shared = Vec::new();
    for source in sources {
        let to = match &source.place {
            Place::TileFolder(inside) => tile_dir(dst).join(inside),
            Place::Relative(path) => dst_folder.join(path),
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

/// Refuses to replace DST or any file the copy would put beside it, unless `force`.
fn refuse_overwrite(dst: &Path, plan: &[Planned], force: bool) -> Result<(), Failure> {
    if dst.is_dir() {
        return Err(Failure::usage(format!(
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
        Some(p) => Err(Failure::usage(format!(
            "cannot copy to '{}': '{}' exists (--force replaces it)",
            dst.display(),
            p.display()
        ))),
        None => Ok(()),
    }
}

/// The files in `master`'s tile folder that it refers to, if it is a master (none otherwise).
pub(crate) fn tile_files_of(master: &Path) -> Vec<PathBuf> {
    let Ok(datasets) = describe(master, None) else {
        return Vec::new();
    };
    source_files(master, &datasets)
        .into_iter()
        .filter(|s| s.found)
        .filter_map(|s| match s.place {
            Place::TileFolder(inside) => Some(tile_dir(master).join(inside)),
            _ => None,
        })
        .collect()
}

/// Checks the copy of `p` at its temporary name: against the checksums of every tile it
/// holds where all of them have some, else byte for byte. Returns how it was checked.
fn verify_copy(
    src: &Path,
    p: &Planned,
    datasets: &[DatasetInfo],
    progress: &Progress,
) -> Result<&'static str, Failure> {
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
        return Ok("bytes");
    }
    if size_of(&p.temporary)? != p.size {
        return Err(Failure::problems(format!(
            "copy of '{}' at '{}' is not of the original's size",
            p.source.path.display(),
            p.temporary.display()
        )));
    }
    for (info, tile) in &tiles {
        let block = info
            .virtual_info
            .as_ref()
            .and_then(|v| v.checksum_block)
            .unwrap_or(0);
        let check = |path: &Path, count: bool| {
            let add = |n| {
                if count {
                    progress.add(n)
                }
            };
            verify_checksums(path, tile, info.element_bytes, block, &add)
        };
        if let Some(problem) = check(&p.temporary, true).first() {
            // The copy's fault, or was the original already damaged?
            return Err(match check(&p.source.path, false).first() {
                Some(original) => Failure::problems(format!(
                    "cannot copy '{}': the original is damaged: {}: {original} (see h5tile \
                     check)",
                    src.display(),
                    info.name
                )),
                None => Failure::problems(format!("copy does not match the original: {problem}")),
            });
        }
    }
    progress.add(
        p.size.saturating_sub(
            tiles
                .iter()
                .map(|(i, t)| checksummed_bytes(t, i.element_bytes))
                .sum(),
        ),
    );
    Ok("checksums")
}

/// Checks that the master copy `copy`, pointed at tile folder `to`, has the datasets, tiles
/// and records of the original (`datasets`), its sources in `from` renamed.
fn same_but_renamed(
    datasets: &[DatasetInfo],
    copy: &Path,
    from: &str,
    to: &str,
) -> Result<(), Failure> {
    let differs = |what: String| {
        Failure::problems(format!(
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
            && va.checksum_block == vb.checksum_block
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

/// Creates `dir` (and what is missing above it) for the copy, noting what it created.
fn make_folder(dir: &Path, undo: &mut Undo) -> Result<(), Failure> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        missing.push(d.to_path_buf());
        at = d.parent();
    }
    for d in missing.into_iter().rev() {
        std::fs::create_dir(&d)
            .map_err(|e| Failure::io(format!("cannot create folder '{}'", d.display()), &e))?;
        undo.folders.push(d);
    }
    Ok(())
}

/// Copies the file `from` to `to` (created or truncated) and syncs it.
fn copy_file(from: &Path, to: &Path, progress: &Progress) -> Result<(), Failure> {
    let mut input = std::fs::File::open(from)
        .map_err(|e| Failure::io(format!("cannot read '{}'", from.display()), &e))?;
    let mut output = std::fs::File::create(to)
        .map_err(|e| Failure::io(format!("cannot create '{}'", to.display()), &e))?;
    let mut buf = vec![0u8; 8 << 20];
    loop {
        let n = input
            .read(&mut buf)
            .map_err(|e| Failure::io(format!("cannot read '{}'", from.display()), &e))?;
        if n == 0 {
            break;
        }
        output
            .write_all(&buf[..n])
            .map_err(|e| Failure::io(format!("cannot write '{}'", to.display()), &e))?;
        progress.add(n as u64);
    }
    output
        .sync_all()
        .map_err(|e| Failure::io(format!("cannot sync '{}'", to.display()), &e))
}

/// Checks that `copy` holds the bytes of `original`.
fn compare_bytes(original: &Path, copy: &Path, progress: &Progress) -> Result<(), Failure> {
    let open = |p: &Path| {
        std::fs::File::open(p)
            .map_err(|e| Failure::io(format!("cannot read '{}'", p.display()), &e))
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
            return Err(Failure::problems(format!(
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
        progress.add(n as u64);
    }
}

/// Fills `buf` from `file` as far as it goes; the bytes read.
fn read_full(file: &mut std::fs::File, buf: &mut [u8], path: &Path) -> Result<usize, Failure> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Failure::io(format!("cannot read '{}'", path.display()), &e)),
        }
    }
    Ok(filled)
}

/// Renames `from` to `to`, replacing it.
pub(crate) fn rename(from: &Path, to: &Path) -> Result<(), Failure> {
    std::fs::rename(from, to).map_err(|e| {
        Failure::io(
            format!("cannot rename '{}' to '{}'", from.display(), to.display()),
            &e,
        )
    })
}

/// Flushes a file or a folder's entries to disk.
pub(crate) fn sync(path: &Path) -> Result<(), Failure> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| Failure::io(format!("cannot sync '{}'", path.display()), &e))
}

fn size_of(path: &Path) -> Result<u64, Failure> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| Failure::io(format!("cannot read '{}'", path.display()), &e))
}

/// The folders that received files of `plan`.
fn folders_of(plan: &[Planned]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = plan
        .iter()
        .filter_map(|p| p.to.parent().map(Path::to_path_buf))
        .map(|d| {
            if d.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                d
            }
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Whether `a` and `b` are one file (both exist, same device and inode).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

#[derive(Serialize)]
struct Report {
    source: String,
    destination: String,
    copied: Vec<Copied>,
    /// Sources the copy reads where the original does (relative ones, copied within their
    /// folder).
    shared: Vec<String>,
    /// The copy's datasets were pointed at its own tile folder.
    master_rewritten: bool,
    /// Tile files of the replaced DST (--force) that the copy did not reuse.
    removed: Vec<String>,
}

#[derive(Serialize)]
struct Copied {
    from: String,
    to: String,
    bytes: u64,
    /// "checksums" or "bytes".
    verified: &'static str,
}

fn print_text(r: &Report) {
    let bytes: u64 = r.copied.iter().map(|c| c.bytes).sum();
    let by_sums = r
        .copied
        .iter()
        .filter(|c| c.verified == "checksums")
        .count();
    println!(
        "copied '{}' to '{}' with {} source file{} ({} of files, HDF5 metadata included): {} \
         verified against checksums, {} byte for byte",
        r.source,
        r.destination,
        r.copied.len(),
        if r.copied.len() == 1 { "" } else { "s" },
        show::bytes(bytes),
        by_sums,
        r.copied.len() - by_sums
    );
    for s in &r.shared {
        println!("shared with the original: '{s}'");
    }
    for s in &r.removed {
        println!("removed '{s}' (a tile file of the replaced copy)");
    }
}
