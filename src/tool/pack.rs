//! Packing a file into one self-contained file (`h5tile pack`): every object of the source
//! is made again in a new file, its virtual datasets as contiguous datasets. Groups come with
//! their attributes and creation properties, other datasets and named datatypes are copied
//! whole by HDF5 (the named datatypes first, once each: a dataset or attribute of one is of
//! its copy), soft and external links are kept as they are, and an object with several hard
//! links keeps them all. A virtual dataset's elements are read through h5tile's own
//! reader (which checks every recorded checksum) in boxes of bounded size, each written
//! before the next is read, so memory stays bounded whatever the dataset's size. Where its
//! tiles are compressed (or a codec is asked for), the new dataset is chunked as h5tile's
//! writers chunk a tile (`layout::chunks`) and compressed the same way: each box is whole
//! chunks, encoded on the I/O threads and written as stored.

use super::files::{
    destination, folder_of, remove_replaced_tiles, rename, same_file, sync, FileError, FileResult,
};
use super::listing::{check_sources, describe_stored};
use super::relocate::tile_files_of;
use crate::dtype::Dtype;
use crate::geometry::slabs::Slabs;
use crate::layout::chunks::{encode_chunks, Chunks, CHUNK_BYTES};
use crate::ops::describe::{open_file, DatasetInfo};
use crate::ops::read::{read, ReadOptions};
use crate::ops::verify::Depth;
use crate::platform::codecs::{Compression, Pipeline};
use crate::platform::comm::Comm;
use crate::platform::device::{io_threads, Buffer, BufferMut};
use crate::platform::hdf5::{
    Dataset, File, Link, LinkTarget, NamedTypes, ObjectKey, ObjectKind, Storage,
};
use crate::status::*;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The largest box of a virtual dataset read and written at once, unless asked otherwise.
const DEFAULT_SLAB_BYTES: u64 = 64 << 20;

/// Attributes of a virtual dataset with names starting so are h5tile's records of its tiles
/// (where their bytes are, checksums, extremes): meaningless once it is contiguous, not kept.
pub const OWN_ATTRIBUTE_PREFIX: &str = "h5tile_";

/// Which codec the datasets `pack` makes of virtual ones are compressed with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PackCodec {
    /// Their tiles' (the first compressed tile's codec and level); none where no tile is
    /// compressed.
    #[default]
    AsTiles,
    /// None: contiguous.
    Uncompressed,
    /// This codec at this level (its `shuffle` is not used: see `PackOptions::shuffle`).
    Given(Compression),
}

/// How `pack` makes its datasets.
#[derive(Clone, Copy, Debug, Default)]
pub struct PackOptions {
    /// The largest box of a virtual dataset read and written at once (None: 64 MiB; one
    /// element, or one chunk, where that is larger).
    pub slab_bytes: Option<u64>,
    pub codec: PackCodec,
    /// A byte shuffle before the codec, or not; None: as the tiles are (none where they are
    /// not compressed). Ignored where a dataset is left uncompressed.
    pub shuffle: Option<bool>,
}

impl PackOptions {
    /// How a dataset whose tiles are compressed with `tiles` (None: not compressed) is
    /// compressed (None: contiguous).
    pub fn compression_for(&self, tiles: Option<Compression>) -> Option<Compression> {
        let chosen = match self.codec {
            PackCodec::AsTiles => tiles?,
            PackCodec::Uncompressed => return None,
            PackCodec::Given(c) => c,
        };
        let shuffle = self.shuffle.unwrap_or(tiles.is_some_and(|t| t.shuffle));
        // A level another program recorded that h5tile's codec lacks: its default instead.
        Compression::new(chosen.codec, chosen.level, shuffle)
            .or_else(|_| Compression::new(chosen.codec, 0, shuffle))
            .ok()
    }
}

/// A virtual dataset written out as an ordinary one: contiguous, or chunked and compressed.
#[derive(Clone, Debug)]
pub struct PackedDataset {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    pub bytes: u64,
    /// How it is compressed (None: contiguous, uncompressed).
    pub compression: Option<Compression>,
    /// Bytes it takes in the packed file.
    pub stored_bytes: u64,
    /// The boxes it was read and written in.
    pub slabs: u64,
    /// Read by h5tile's reader, which checks the recorded checksums; otherwise (a type h5tile
    /// does not read) by HDF5, after its sources were checked.
    pub by_h5tile: bool,
    /// Every tile of it that holds elements carries checksums, all of them checked.
    pub checksummed: bool,
}

/// An object copied as it is.
#[derive(Clone, Debug)]
pub struct CopiedObject {
    pub name: String,
    /// "group", "dataset", "named datatype" or "object".
    pub kind: &'static str,
    /// A dataset's bytes (0 for the others).
    pub bytes: u64,
}

/// A link made again as it was.
#[derive(Clone, Debug)]
pub struct KeptLink {
    pub name: String,
    /// "hard" (another name of an object copied or packed), "soft" or "external".
    pub kind: &'static str,
    /// The path it leads to; for an external link, "file:path" as the link names them.
    pub target: String,
}

/// Something of the source the pack left out, and why.
#[derive(Clone, Debug)]
pub struct Omitted {
    pub name: String,
    pub why: String,
}

/// What a pack did.
#[derive(Clone, Debug, Default)]
pub struct PackReport {
    pub packed: Vec<PackedDataset>,
    pub copied: Vec<CopiedObject>,
    pub links: Vec<KeptLink>,
    pub omitted: Vec<Omitted>,
}

/// Packs the file at `src` into a new file at `dst` (created, or truncated): see the module's
/// documentation. `datasets` are `src`'s datasets as `describe` gave them: the sources of the
/// virtual ones are checked before anything is written. Virtual datasets are made as `options`
/// say; `progress(n)` is told of every `n` bytes of datasets written. On failure `dst` holds
/// what was made so far: the caller removes it.
pub fn pack(
    src: &Path,
    datasets: &[DatasetInfo],
    dst: &Path,
    options: PackOptions,
    progress: &dyn Fn(u64),
) -> Result<PackReport> {
    // A missing or truncated source, found before anything is written (the bytes of the
    // others are checked against their checksums as they are read).
    for info in datasets {
        if let Some(problem) = check_sources(info, Depth::Hdf5).first() {
            return fail(
                H5TILE_ERR_MISSING_TILE,
                format!("{problem} ('{}' in '{}')", info.name, src.display()),
            );
        }
    }
    let from = open_file(src)?;
    let to = File::create_for_copy(dst, &from)?;
    let types = from.copy_named_types(&to)?;
    let mut packer = Packer {
        src,
        datasets: datasets.iter().map(|d| (d.name.as_str(), d)).collect(),
        from: &from,
        to: &to,
        slab_bytes: options.slab_bytes.unwrap_or(DEFAULT_SLAB_BYTES).max(1),
        options,
        progress,
        types,
        seen: HashMap::new(),
        report: PackReport::default(),
    };
    let (_, root) = from.object_key("/")?;
    packer.seen.insert(root, "/".to_string());
    packer.attributes("/", false)?;
    packer.group("/")?;
    packer.types.remove(&to)?;
    let report = std::mem::take(&mut packer.report);
    drop(packer);
    to.close()?;
    Ok(report)
}

/// A pack of one file into a new one (`h5tile pack`), checked but not begun. The new file is
/// written under a temporary name in its folder and renamed into place at the end: until then
/// nothing at the destination changes, and a failure leaves nothing behind.
pub struct PackPlan {
    src: PathBuf,
    dst: PathBuf,
    datasets: Vec<DatasetInfo>,
    options: PackOptions,
    old_tiles: Vec<PathBuf>,
}

/// What a pack into place did.
#[derive(Clone, Debug)]
pub struct PackedFile {
    /// Where the packed file is (the destination as given, or the file in it under SRC's
    /// name).
    pub destination: PathBuf,
    pub report: PackReport,
    /// Tile files of the replaced destination (with `force`).
    pub removed: Vec<PathBuf>,
}

/// A file removed when dropped, unless kept: the temporary destination of a pack that failed.
struct Temporary(Option<PathBuf>);

impl Drop for Temporary {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl PackPlan {
    /// Plans packing `src` into `dst` (a file, or a folder to pack into under SRC's name),
    /// virtual datasets made as `options` say (see `pack`). Refuses a destination that is
    /// SRC, a folder, in no folder, or that exists (unless `force`).
    pub fn new(src: &Path, dst: &Path, force: bool, options: PackOptions) -> FileResult<PackPlan> {
        let datasets = describe_stored(src, None)?;
        let dst = destination(src, dst);
        refuse(src, &dst, force)?;
        let old_tiles = match force {
            true => tile_files_of(&dst),
            false => Vec::new(),
        };
        Ok(PackPlan {
            src: src.to_path_buf(),
            dst,
            datasets,
            options,
            old_tiles,
        })
    }

    /// The bytes of every dataset of SRC: what `run` tells `progress` of in all.
    pub fn total_bytes(&self) -> u64 {
        self.datasets.iter().map(|d| d.bytes()).sum()
    }

    /// Packs SRC under a temporary name, then renames it into place and removes the tile files
    /// of a master it replaced. Fails, leaving nothing, when packing fails or SRC was replaced
    /// meanwhile.
    pub fn run(self, progress: &dyn Fn(u64)) -> FileResult<PackedFile> {
        let (src, dst) = (&self.src, &self.dst);
        let folder = folder_of(dst);
        let name = dst.file_name().unwrap_or_default().to_string_lossy();
        let temporary = folder.join(format!(".{name}.pack{}.tmp", std::process::id()));
        let mut undo = Temporary(Some(temporary.clone()));
        let before = version(src);
        let report =
            pack(src, &self.datasets, &temporary, self.options, progress).map_err(|e| {
                let what = format!("cannot pack '{}' into '{}'", src.display(), dst.display());
                FileError::Failed(e.context(&what).message)
            })?;
        if version(src) != before {
            return Err(FileError::Failed(format!(
                "cannot pack '{}': it was replaced while it was packed (run it again)",
                src.display()
            )));
        }
        sync(&temporary)?;
        rename(&temporary, dst)?;
        undo.0 = None;
        sync(folder)?;
        let removed = remove_replaced_tiles(dst, &self.old_tiles, &[]);
        Ok(PackedFile {
            destination: self.dst.clone(),
            report,
            removed,
        })
    }
}

/// Refuses a `dst` that is `src`, a folder, in no folder, or that exists (without `force`).
fn refuse(src: &Path, dst: &Path, force: bool) -> FileResult<()> {
    let refused = |why: String| {
        Err(FileError::Refused(format!(
            "cannot pack to '{}': {why}",
            dst.display()
        )))
    };
    if same_file(src, dst) {
        return refused(format!("it is '{}' itself", src.display()));
    }
    if dst.is_dir() {
        return refused("it is a directory".into());
    }
    if let Some(folder) = dst.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !folder.is_dir() {
            return refused(format!("folder '{}' does not exist", folder.display()));
        }
    }
    if !force && std::fs::symlink_metadata(dst).is_ok() {
        return refused("it exists (--force replaces it)".into());
    }
    Ok(())
}

/// Which version of the file at `path` is there: (device, inode, change time); a writer
/// replaces a master by renaming a new one over it.
fn version(path: &Path) -> Option<(u64, u64, i64, i64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino(), m.ctime(), m.ctime_nsec()))
}

/// A pack in progress.
struct Packer<'a> {
    src: &'a Path,
    datasets: HashMap<&'a str, &'a DatasetInfo>,
    from: &'a File,
    to: &'a File,
    slab_bytes: u64,
    options: PackOptions,
    progress: &'a dyn Fn(u64),
    /// The copies of the source's named datatypes, made first.
    types: NamedTypes,
    /// The objects made in the new file so far, by the path they were made at.
    seen: HashMap<ObjectKey, String>,
    report: PackReport,
}

impl Packer<'_> {
    /// Makes again every link of `group` (made already) and what they lead to.
    fn group(&mut self, group: &str) -> Result<()> {
        for link in self.from.links(group)? {
            let name = link.path.clone();
            match &link.target {
                LinkTarget::Object(kind, key) => {
                    if let Some(first) = self.seen.get(key) {
                        self.to.make_link(&link, Some(first))?;
                        self.kept(name, "hard", first.clone());
                        continue;
                    }
                    self.seen.insert(*key, name.clone());
                    self.object(&link, *kind, key)?;
                }
                LinkTarget::Soft(target) => {
                    self.to.make_link(&link, None)?;
                    self.kept(name, "soft", target.clone());
                }
                LinkTarget::External { file, object } => {
                    self.to.make_link(&link, None)?;
                    self.kept(name, "external", format!("{file}:{object}"));
                }
                LinkTarget::UserDefined => self.report.omitted.push(Omitted {
                    name,
                    why: "a user-defined link, which only its own library can make".into(),
                }),
            }
        }
        Ok(())
    }

    fn kept(&mut self, name: String, kind: &'static str, target: String) {
        self.report.links.push(KeptLink { name, kind, target });
    }

    /// Makes the object `link` leads to (`key`), reached for the first time.
    fn object(&mut self, link: &Link, kind: ObjectKind, key: &ObjectKey) -> Result<()> {
        let name = link.path.as_str();
        let (kind, bytes) = match kind {
            ObjectKind::Group => {
                self.to.create_group_like(link, self.from)?;
                self.attributes(name, false)?;
                self.copied(name, "group", 0);
                return self.group(name);
            }
            ObjectKind::Dataset => {
                let dataset = Dataset::open(self.from, name)?;
                if dataset.storage()? == Storage::Virtual {
                    return self.pack_virtual(link, &dataset);
                }
                let bytes = dataset.space()?.points()? * dataset.dtype()?.size() as u64;
                ("dataset", bytes)
            }
            ObjectKind::NamedType => {
                if let Some(copy) = self.types.copy_of(key) {
                    // Copied already, first of all: it takes its name.
                    self.to.make_link(link, Some(copy))?;
                    self.copied(name, "named datatype", 0);
                    return Ok(());
                }
                ("named datatype", 0)
            }
            ObjectKind::Other => ("object", 0),
        };
        self.from.copy_object(link, self.to, &self.types)?;
        self.attributes(name, false)?;
        (self.progress)(bytes);
        self.copied(name, kind, bytes);
        Ok(())
    }

    fn copied(&mut self, name: &str, kind: &'static str, bytes: u64) {
        self.report.copied.push(CopiedObject {
            name: name.to_string(),
            kind,
            bytes,
        });
    }

    /// Copies the attributes of object `name` (h5tile's own left out when `own_left_out`),
    /// noting those that cannot be.
    fn attributes(&mut self, name: &str, own_left_out: bool) -> Result<()> {
        let keep = |a: &str| !(own_left_out && a.starts_with(OWN_ATTRIBUTE_PREFIX));
        for attribute in self
            .from
            .copy_attributes(name, self.to, &keep, &self.types)?
        {
            self.report.omitted.push(Omitted {
                name: format!("{name} attribute '{attribute}'"),
                why: "it holds references to objects of the source file".into(),
            });
        }
        Ok(())
    }

    /// Makes the virtual dataset `dataset` (at `link`) an ordinary one in the new file:
    /// contiguous, or chunked and compressed (`PackOptions::compression_for`) where h5tile
    /// reads its type and it has elements.
    fn pack_virtual(&mut self, link: &Link, dataset: &Dataset) -> Result<()> {
        let name = link.path.as_str();
        let described;
        let info = match self.datasets.get(name) {
            Some(info) => Some(*info),
            None => {
                described = describe_stored(self.src, Some(name))?;
                described.first()
            }
        };
        let stored = dataset.dtype()?;
        let shape = dataset.space()?.dims()?;
        let element = Dtype::of_hdf5(&stored).ok().filter(|_| !shape.is_empty());
        let elem = match element {
            Some(d) => d.size(),
            None => dataset.memory_element_bytes()?,
        };
        let tiles = info
            .and_then(|i| i.stored.as_ref())
            .and_then(|s| s.compression);
        let compressed = match element {
            Some(dtype) if !shape.contains(&0) => {
                let compression = self.options.compression_for(tiles);
                compression.map(|compression| Compressed {
                    chunks: Chunks::new(&shape, dtype.size(), CHUNK_BYTES),
                    pipeline: compression.pipeline(dtype.size()),
                    compression,
                })
            }
            _ => None,
        };
        let layout = compressed
            .as_ref()
            .map(|c| (c.chunks.shape.as_slice(), &c.pipeline));
        let out = self
            .to
            .create_packed_like(link, dataset, &self.types, layout)?;
        self.attributes(name, true)?;
        let volume: u64 = shape.iter().product();
        let slabs = match &compressed {
            Some(c) => {
                let chunks = (&c.chunks.shape[..], c.chunks.chunk_bytes() as u64);
                Slabs::of_chunks(&shape, elem as u64, chunks, self.slab_bytes)
            }
            None => Slabs::new(&shape, elem as u64, self.slab_bytes),
        };
        let mut buf = vec![0u8; slabs.largest_bytes() as usize];
        let mem_type = element.map(Dtype::hdf5_type).transpose()?;
        let (mut count, mut at) = (0, 0u64);
        for slab in slabs {
            let n = slab.volume() as usize * elem;
            match (element, &mem_type) {
                (Some(dtype), Some(mem_type)) => {
                    let bytes = &mut buf[..n];
                    let host = BufferMut::Host(&mut *bytes);
                    let options = ReadOptions::default();
                    read(&Comm::solo(), self.src, name, dtype, &slab, host, options)?;
                    match &compressed {
                        Some(c) => c.write(&out, dtype, at, bytes)?,
                        None => out.write_block(mem_type, &slab.offset, &slab.shape, bytes)?,
                    }
                }
                _ => dataset.copy_block_to(&out, &slab.offset, &slab.shape, &mut buf)?,
            }
            at += n as u64;
            // As stored, as the total was counted.
            (self.progress)(slab.volume() as u64 * stored.size() as u64);
            count += 1;
        }
        let checksummed = info
            .and_then(|i| i.virtual_info.as_ref())
            .is_some_and(|v| v.not_checksummed() == 0 && v.tiles.iter().any(|t| t.sums.is_some()));
        self.report.packed.push(PackedDataset {
            name: name.to_string(),
            dtype: info.map_or_else(|| stored.describe(), |i| i.dtype.clone()),
            bytes: info.map_or(volume * stored.size() as u64, |i| i.bytes()),
            shape,
            compression: compressed.map(|c| c.compression),
            stored_bytes: out.storage_size(),
            slabs: count,
            by_h5tile: element.is_some(),
            checksummed: checksummed && element.is_some(),
        });
        Ok(())
    }
}

/// How a packed dataset is compressed: its codec, its chunks (as a tile's) and their filters.
struct Compressed {
    compression: Compression,
    chunks: Chunks,
    pipeline: Pipeline,
}

impl Compressed {
    /// Writes `bytes`, the dataset's (of `dtype`) from byte `at`, whole chunks (a slab of
    /// `Slabs::of_chunks`), to `out` as its chunks, compressed on the I/O threads.
    fn write(&self, out: &Dataset, dtype: Dtype, at: u64, bytes: &[u8]) -> Result<()> {
        let chunks = &self.chunks;
        let which = chunks.covering(at, at + bytes.len() as u64);
        debug_assert_eq!(chunks.range(which.start).0, at);
        let store = |i, stored: &[u8]| out.write_chunk(&chunks.offset(i), stored);
        let host = Buffer::Host(bytes);
        encode_chunks(
            chunks,
            which,
            &self.pipeline,
            dtype,
            host,
            io_threads(),
            store,
        )?;
        Ok(())
    }
}
