//! The option structs of the C API, and how they grow without breaking programs compiled
//! against an older header. Each struct starts with `size`, the `sizeof` the caller compiled;
//! the header's `h5tile_*_options_default()` are inline functions that fill it in the caller's
//! own code (a function in the library returning the struct by value would write this
//! version's size into an older program's smaller struct). The library reads the first `size`
//! bytes and takes this version's defaults for fields the caller's version did not have; a
//! newer program's struct is accepted when the fields this version does not know are zero
//! (their defaults), as Linux reads its extensible structs (`clone3`, `openat2`).

use super::option_values::{coalesce, compression, ranks_per_file};
use crate::dtype::{h5tile_dtype, Dtype};
use crate::ops::read::ReadOptions;
use crate::ops::series::SeriesOptions;
use crate::ops::write::{Layout, WriteOptions};
use crate::platform::device::Gds;
use crate::platform::staging;
use crate::status::*;
use std::ffi::c_int;

/// How `h5tile_write` stores a dataset (`h5tile_write_options.layout`).
#[allow(non_camel_case_types)]
pub type h5tile_layout = c_int;
/// One HDF5 file per non-empty tile in the folder `<path>.tiles/`, plus the master file at
/// `path` holding a virtual dataset that refers to them by relative paths (the default).
pub const H5TILE_LAYOUT_VDS: h5tile_layout = 0;
/// One self-contained HDF5 file with a contiguous dataset, written by all ranks in parallel
/// (rank 0 lays out the file, every rank writes its tiles' bytes into it). Needs a file
/// system all ranks share; gaps left with `H5TILE_ALLOW_PARTIAL` read as zero.
pub const H5TILE_LAYOUT_SINGLE: h5tile_layout = 1;
/// One HDF5 file per group of ranks in the folder `<path>.tiles/`, holding one contiguous
/// dataset per tile of the group, plus the master file at `path` mapping them: few files
/// whatever the number of ranks, each tile still one write from its own rank's buffer. Ranks
/// are grouped by node (the ranks that share memory); `ranks_per_file`, or else the
/// environment variable `H5TILE_RANKS_PER_FILE`, cuts a node's ranks into groups of that many.
/// A group never spans nodes: its first rank syncs the subfile once for all of them.
pub const H5TILE_LAYOUT_SUBFILES: h5tile_layout = 2;
/// The default (what `h5tile_write_options_default()` gives and NULL options mean): chosen by
/// scale at each write, `H5TILE_LAYOUT_VDS` where every rank of the communicator is on one
/// node and holds one tile of each dataset, `H5TILE_LAYOUT_SUBFILES` with a subfile per rank
/// where a rank on one node holds several (never a file per tile), and with a subfile per node
/// where the ranks span nodes (files grow with nodes, not ranks).
/// `H5TILE_RANKS_PER_NODE=K` in the environment makes runs of K ranks count as nodes, so one
/// machine can stand in for several (the tests do).
pub const H5TILE_LAYOUT_AUTO: h5tile_layout = 3;

/// `h5tile_write_options.flags`: fail with `H5TILE_ERR_EXISTS` if `path` exists.
pub const H5TILE_NO_OVERWRITE: u32 = 1;
/// `h5tile_write_options.flags`: tiles may leave gaps; those elements read back as zero.
pub const H5TILE_ALLOW_PARTIAL: u32 = 2;
/// `h5tile_write_options.flags`: keep everything else in an existing `path` (other datasets,
/// groups, attributes, links) and replace or add only `dataset`, so one file can hold several
/// fields of a checkpoint. The file is still replaced atomically (the new version starts as a
/// copy of the old one); `dataset` must be a dataset or absent there.
pub const H5TILE_KEEP_OTHERS: u32 = 4;
/// `h5tile_write_options.flags`: do not `fsync` (tiles, subfiles, master, folders). The write
/// still replaces the dataset by an atomic rename, so readers and a crashed process see the old
/// dataset or the new one whole; but after a power or node failure the new dataset's files
/// (and the rename) may be lost or incomplete. For checkpoints to node-local or burst-buffer
/// storage that is rewritten often.
pub const H5TILE_NO_SYNC: u32 = 8;
/// `h5tile_write_options.flags`: shuffle each compressed chunk's bytes by element before the
/// codec (HDF5's shuffle filter): the first bytes of every element together, then the second
/// bytes, ..., which often compresses numbers much better. Needs compression.
pub const H5TILE_SHUFFLE: u32 = 16;
/// `h5tile_write_options.flags`: an asynchronous write (`h5tile_write_async`,
/// `h5tile_write_tiles_async`, `h5tile_checkpoint_commit_async`, series commits made so)
/// returns once this rank's bytes are copied into staging memory the library owns: the caller
/// may change its buffers at once, and the file holds what they held at the call. The write
/// then runs in the background with the same statuses, commit and fence. Staging is bounded by
/// `staging_bytes`; a snapshot that does not fit waits for earlier ones to drain, and a tile
/// that does not fit even then is written from the caller's buffer before the call returns.
/// Device tiles are copied into host staging memory. Synchronous writes ignore the flag.
pub const H5TILE_SNAPSHOT: u32 = 32;

/// How `h5tile_write` compresses tiles (`h5tile_write_options.compression`).
#[allow(non_camel_case_types)]
pub type h5tile_compression = u32;
/// The default: tiles are not compressed, unless the environment variable
/// `H5TILE_COMPRESSION` names a codec (`zstd`, `zstd:LEVEL`, `lz4`, `deflate:LEVEL`, `none`;
/// `+shuffle` after it shuffles too, as in `zstd:1+shuffle`), for the layouts that compress.
pub const H5TILE_COMPRESS_NONE: h5tile_compression = 0;
/// zstd (HDF5 filter 32015): a good ratio at a few hundred MB/s per thread (level 3, the
/// default); levels -131072 (fastest) to 22 (smallest).
pub const H5TILE_COMPRESS_ZSTD: h5tile_compression = 1;
/// LZ4 (HDF5 filter 32004): the fastest, a lower ratio; no levels.
pub const H5TILE_COMPRESS_LZ4: h5tile_compression = 2;
/// deflate, as zlib (HDF5's built-in filter 1, h5py's "gzip"): every HDF5 reads it, slowly
/// written; levels 1 to 9 (6, the default).
pub const H5TILE_COMPRESS_DEFLATE: h5tile_compression = 3;

/// `h5tile_read_options.flags`: read elements whose virtual-dataset source file is missing as
/// the fill value (plain HDF5 behaviour) instead of failing with `H5TILE_ERR_MISSING_TILE`.
pub const H5TILE_READ_FILL_MISSING: u32 = 1;
/// Read flag: do not check tile bytes against the checksums recorded when h5tile wrote them
/// (checked by default; a mismatch is `H5TILE_ERR_CORRUPT`).
pub const H5TILE_READ_NO_VERIFY: u32 = 2;
/// Read flag: allow a conversion that can lose values (numpy's "unsafe" casts: float to
/// integer, a wider type to a narrower one, signed to unsigned, complex to real). Without it
/// such a read is `H5TILE_ERR_DTYPE`; lossless ones (int32 or int64 to float64, float32 to
/// float64, bool to anything) need no flag.
pub const H5TILE_READ_NARROWING: u32 = 4;
/// `h5tile_read_options.dtype`: deliver elements in the type the dataset stores.
pub const H5TILE_AS_STORED: h5tile_dtype = -1;

/// Options of `h5tile_write`; start from `h5tile_write_options_default()`, then set fields.
/// The struct may gain fields in later versions: its first field records the size the program
/// was compiled with, so a program built against an older header keeps working.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct h5tile_write_options {
    /// `sizeof(h5tile_write_options)` as the caller compiled it; set by
    /// `h5tile_write_options_default()` (do not change it).
    pub size: usize,
    /// `H5TILE_LAYOUT_AUTO` (default: VDS on one node with one tile a rank, else subfiles),
    /// `H5TILE_LAYOUT_VDS`, `H5TILE_LAYOUT_SINGLE` or `H5TILE_LAYOUT_SUBFILES`.
    pub layout: h5tile_layout,
    /// Bitwise OR of `H5TILE_NO_OVERWRITE`, `H5TILE_ALLOW_PARTIAL`, `H5TILE_KEEP_OTHERS`,
    /// `H5TILE_NO_SYNC`, `H5TILE_SHUFFLE`, `H5TILE_SNAPSHOT` (default 0).
    pub flags: u32,
    /// How tiles in device memory move: `H5TILE_GDS_FROM_ENVIRONMENT` (default: the
    /// environment variable `H5TILE_GDS`, else auto), `H5TILE_GDS_AUTO`, `H5TILE_GDS_ON` or
    /// `H5TILE_GDS_OFF`. Host buffers ignore it.
    pub gds: u32,
    /// `H5TILE_LAYOUT_SUBFILES`: ranks per subfile, counted within one node (a group never
    /// spans nodes). 0 (default): the environment variable `H5TILE_RANKS_PER_FILE`, else all
    /// the ranks of a node. Other layouts ignore it.
    pub ranks_per_file: u64,
    /// `H5TILE_COMPRESS_NONE` (default: uncompressed, unless the environment variable
    /// `H5TILE_COMPRESSION` names a codec), `H5TILE_COMPRESS_ZSTD`, `H5TILE_COMPRESS_LZ4` or
    /// `H5TILE_COMPRESS_DEFLATE`. Each tile is stored in chunks of about 1 MiB, compressed on
    /// the rank's threads, under HDF5's registered filter ids (h5py reads them with
    /// `hdf5plugin`). `H5TILE_LAYOUT_VDS` and `H5TILE_LAYOUT_SUBFILES` compress;
    /// `H5TILE_LAYOUT_SINGLE` refuses a codec given here (and ignores the environment's).
    pub compression: h5tile_compression,
    /// The codec's level; 0 (default): the codec's own default. Must be 0 without a codec
    /// given in `compression`.
    pub compression_level: i32,
    /// `H5TILE_SNAPSHOT`: the most memory this process's staged snapshots hold at once, in
    /// bytes. 0 (default): the environment variable `H5TILE_STAGING_BYTES` (a number of bytes,
    /// K, M, G suffixes allowed), else a quarter of the memory available at the first snapshot,
    /// shared among the node's ranks (at least 64 MiB). Staging memory is kept for the next
    /// snapshot, up to this budget, rather than given back.
    pub staging_bytes: u64,
}

/// Options of `h5tile_read` and `h5tile_batches_open`; start from
/// `h5tile_read_options_default()`, then set fields. Grows as `h5tile_write_options` does.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct h5tile_read_options {
    /// `sizeof(h5tile_read_options)` as the caller compiled it; set by
    /// `h5tile_read_options_default()` (do not change it).
    pub size: usize,
    /// Bitwise OR of `H5TILE_READ_FILL_MISSING`, `H5TILE_READ_NO_VERIFY` and
    /// `H5TILE_READ_NARROWING` (default 0).
    pub flags: u32,
    /// Element type `h5tile_batches_next` delivers: `H5TILE_AS_STORED` (the default) for the
    /// dataset's own type, or a type HDF5 converts to. `h5tile_read` takes its type as an
    /// argument; for it this field must be `H5TILE_AS_STORED` or that same type.
    pub dtype: h5tile_dtype,
    /// How reads into device memory move, as `h5tile_write_options.gds`.
    pub gds: u32,
}

/// Options of `h5tile_series_begin`: which checkpoints a series keeps. Start from
/// `h5tile_series_options_default()` (keep everything), then set fields. Grows as
/// `h5tile_write_options` does.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct h5tile_series_options {
    /// `sizeof(h5tile_series_options)` as the caller compiled it; set by
    /// `h5tile_series_options_default()` (do not change it).
    pub size: usize,
    /// Keep the newest `keep_last` complete checkpoints (0, the default: keep every one).
    pub keep_last: u64,
    /// With `keep_last`, also keep every step that is a multiple of `keep_every` (0, the
    /// default: none for this reason). The latest complete checkpoint is never removed.
    pub keep_every: u64,
}

impl h5tile_series_options {
    fn defaults() -> h5tile_series_options {
        h5tile_series_options {
            size: std::mem::size_of::<h5tile_series_options>(),
            keep_last: 0,
            keep_every: 0,
        }
    }

    /// The caller's options (NULL: the defaults), read at the size the caller compiled.
    ///
    /// # Safety
    /// `opts` must be NULL or point to `opts->size` readable bytes.
    pub unsafe fn parse(opts: *const h5tile_series_options) -> Result<SeriesOptions> {
        let defaults = h5tile_series_options::defaults();
        let o = read_sized(opts, defaults, "h5tile_series_options", FIRST_SERIES)?;
        Ok(SeriesOptions {
            keep_last: o.keep_last,
            keep_every: o.keep_every,
        })
    }
}

impl h5tile_write_options {
    /// This version's defaults.
    fn defaults() -> h5tile_write_options {
        h5tile_write_options {
            size: std::mem::size_of::<h5tile_write_options>(),
            layout: H5TILE_LAYOUT_AUTO,
            flags: 0,
            gds: H5TILE_GDS_FROM_ENVIRONMENT,
            ranks_per_file: 0,
            compression: H5TILE_COMPRESS_NONE,
            compression_level: 0,
            staging_bytes: 0,
        }
    }

    /// The caller's options (NULL: the defaults), read at the size the caller compiled.
    ///
    /// # Safety
    /// `opts` must be NULL or point to `opts->size` readable bytes.
    pub unsafe fn parse(opts: *const h5tile_write_options) -> Result<WriteOptions> {
        let defaults = h5tile_write_options::defaults();
        let o = read_sized(opts, defaults, "h5tile_write_options", FIRST_WRITE)?;
        let layout = match o.layout {
            H5TILE_LAYOUT_VDS => Layout::Vds,
            H5TILE_LAYOUT_SINGLE => Layout::Single,
            H5TILE_LAYOUT_SUBFILES => Layout::Subfiles,
            // Resolved over the communicator by the write; the VDS layout's rules meanwhile
            // (the subfiled layout's are the same for what a rank checks alone).
            H5TILE_LAYOUT_AUTO => Layout::Vds,
            other => {
                return fail(
                    H5TILE_ERR_INVALID_ARGUMENT,
                    format!("unknown layout {other}"),
                )
            }
        };
        let known = H5TILE_NO_OVERWRITE
            | H5TILE_ALLOW_PARTIAL
            | H5TILE_KEEP_OTHERS
            | H5TILE_NO_SYNC
            | H5TILE_SHUFFLE
            | H5TILE_SNAPSHOT;
        if o.flags & !known != 0 {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!("unknown write flags {:#x}", o.flags & !known),
            );
        }
        Ok(WriteOptions {
            layout,
            no_overwrite: o.flags & H5TILE_NO_OVERWRITE != 0,
            allow_partial: o.flags & H5TILE_ALLOW_PARTIAL != 0,
            keep_others: o.flags & H5TILE_KEEP_OTHERS != 0,
            no_sync: o.flags & H5TILE_NO_SYNC != 0,
            // Read only where it means something: a bad value never fails another layout.
            by_scale: o.layout == H5TILE_LAYOUT_AUTO,
            chosen_on: None,
            ranks_per_file: match (layout, o.layout) {
                (Layout::Subfiles, _) | (_, H5TILE_LAYOUT_AUTO) => {
                    ranks_per_file(o.ranks_per_file, || {
                        std::env::var("H5TILE_RANKS_PER_FILE").ok()
                    })?
                }
                _ => None,
            },
            coalesce: match (layout, o.layout) {
                (Layout::Subfiles, _) | (_, H5TILE_LAYOUT_AUTO) => {
                    coalesce(std::env::var("H5TILE_COALESCE").ok())?
                }
                _ => true,
            },
            gds: mode_from_options(o.gds)?,
            compression: compression(
                (o.compression, o.compression_level),
                o.flags & H5TILE_SHUFFLE != 0,
                layout,
                || std::env::var("H5TILE_COMPRESSION").ok(),
            )?,
            snapshot: o.flags & H5TILE_SNAPSHOT != 0,
            // Read only for a snapshot: a bad H5TILE_STAGING_BYTES never fails another write.
            staging_bytes: match o.flags & H5TILE_SNAPSHOT {
                0 => 0,
                _ => staging::budget(o.staging_bytes)
                    .map_err(|why| Error::new(H5TILE_ERR_INVALID_ARGUMENT, why))?
                    as u64,
            },
            buffers_may_change: false,
        })
    }
}

impl h5tile_read_options {
    /// This version's defaults.
    fn defaults() -> h5tile_read_options {
        h5tile_read_options {
            size: std::mem::size_of::<h5tile_read_options>(),
            flags: 0,
            dtype: H5TILE_AS_STORED,
            gds: H5TILE_GDS_FROM_ENVIRONMENT,
        }
    }

    /// The caller's options (NULL: the defaults), read at the size the caller compiled.
    ///
    /// # Safety
    /// `opts` must be NULL or point to `opts->size` readable bytes.
    pub unsafe fn parse(opts: *const h5tile_read_options) -> Result<ReadOptions> {
        let defaults = h5tile_read_options::defaults();
        let o = read_sized(opts, defaults, "h5tile_read_options", FIRST_READ)?;
        let known = H5TILE_READ_FILL_MISSING | H5TILE_READ_NO_VERIFY | H5TILE_READ_NARROWING;
        if o.flags & !known != 0 {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!("unknown read flags {:#x}", o.flags),
            );
        }
        let dtype = match o.dtype {
            H5TILE_AS_STORED => None,
            code => Some(Dtype::parse(code)?),
        };
        Ok(ReadOptions {
            fill_missing: o.flags & H5TILE_READ_FILL_MISSING != 0,
            no_verify: o.flags & H5TILE_READ_NO_VERIFY != 0,
            narrowing: o.flags & H5TILE_READ_NARROWING != 0,
            dtype,
            gds: mode_from_options(o.gds)?,
        })
    }
}

/// Options field `gds`: take `H5TILE_GDS` from the environment (else `auto`).
pub const H5TILE_GDS_FROM_ENVIRONMENT: u32 = 0;
/// cuFile when usable, the bounded compat path otherwise.
pub const H5TILE_GDS_AUTO: u32 = 1;
/// cuFile or `H5TILE_ERR_CUDA`.
pub const H5TILE_GDS_ON: u32 = 2;
/// Always the compat path.
pub const H5TILE_GDS_OFF: u32 = 3;

/// The mode an options field asks for, `environment` being `H5TILE_GDS`'s value.
pub fn mode(field: u32, environment: Option<&str>) -> Result<Gds> {
    match field {
        H5TILE_GDS_AUTO => Ok(Gds::Auto),
        H5TILE_GDS_ON => Ok(Gds::On),
        H5TILE_GDS_OFF => Ok(Gds::Off),
        H5TILE_GDS_FROM_ENVIRONMENT => match environment.map(str::trim) {
            None | Some("") | Some("auto") => Ok(Gds::Auto),
            Some("on") => Ok(Gds::On),
            Some("off") => Ok(Gds::Off),
            Some(other) => fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!("H5TILE_GDS={other}: expected auto, on or off"),
            ),
        },
        other => fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!("gds option {other}: expected H5TILE_GDS_FROM_ENVIRONMENT, _AUTO, _ON or _OFF"),
        ),
    }
}

/// The mode for an options field, reading `H5TILE_GDS` only when the field defers to it.
pub fn mode_from_options(field: u32) -> Result<Gds> {
    let environment = match field {
        H5TILE_GDS_FROM_ENVIRONMENT => std::env::var("H5TILE_GDS").ok(),
        _ => None,
    };
    mode(field, environment.as_deref())
}

/// Fills `*opts` with this version's default write options for a struct of `size` bytes (the
/// caller's `sizeof(h5tile_write_options)`); `h5tile_write_options_default()` calls it.
/// Returns `H5TILE_ERR_INVALID_ARGUMENT` if `opts` is NULL or `size` is smaller than the first
/// version of the struct. Fields beyond this version's are set to zero.
///
/// # Safety
/// `opts` must be NULL or point to `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn h5tile_write_options_init(
    opts: *mut h5tile_write_options,
    size: usize,
) -> h5tile_status {
    super::boundary::run("h5tile_write_options_init", || {
        write_sized(opts, size, h5tile_write_options::defaults(), FIRST_WRITE)
    })
}

/// Fills `*opts` with this version's default read options for a struct of `size` bytes (the
/// caller's `sizeof(h5tile_read_options)`); `h5tile_read_options_default()` calls it. As
/// `h5tile_write_options_init`.
///
/// # Safety
/// `opts` must be NULL or point to `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn h5tile_read_options_init(
    opts: *mut h5tile_read_options,
    size: usize,
) -> h5tile_status {
    super::boundary::run("h5tile_read_options_init", || {
        write_sized(opts, size, h5tile_read_options::defaults(), FIRST_READ)
    })
}

/// Fills `*opts` with this version's default series options for a struct of `size` bytes (the
/// caller's `sizeof(h5tile_series_options)`); `h5tile_series_options_default()` calls it. As
/// `h5tile_write_options_init`.
///
/// # Safety
/// `opts` must be NULL or point to `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn h5tile_series_options_init(
    opts: *mut h5tile_series_options,
    size: usize,
) -> h5tile_status {
    super::boundary::run("h5tile_series_options_init", || {
        write_sized(opts, size, h5tile_series_options::defaults(), FIRST_SERIES)
    })
}

/// The sizes of the first versions of the structs (the smallest a caller may pass): the write
/// options' first version ended, padded, where `ranks_per_file` begins.
const FIRST_WRITE: usize = std::mem::offset_of!(h5tile_write_options, ranks_per_file);
const FIRST_READ: usize = std::mem::size_of::<h5tile_read_options>();
const FIRST_SERIES: usize = std::mem::size_of::<h5tile_series_options>();

/// Reads a caller's struct of the size its first field says (at least `smallest`, the size of
/// the struct's first version): this version's `defaults` for fields the caller's version
/// lacks; fields beyond this version's must be zero.
///
/// # Safety
/// `p` must be NULL or point to as many readable bytes as its first field says.
unsafe fn read_sized<T: Copy>(p: *const T, defaults: T, what: &str, smallest: usize) -> Result<T> {
    let Some(first) = (p as *const usize).as_ref() else {
        return Ok(defaults);
    };
    let (size, known) = (*first, std::mem::size_of::<T>());
    if size < smallest || size > LARGEST_OPTIONS {
        let bound = match size < smallest {
            true => format!("smaller than any version of the struct ({smallest} bytes)"),
            false => {
                format!("larger than any version of the struct can be ({LARGEST_OPTIONS} bytes)")
            }
        };
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!(
                "{what}.size is {size}, {bound}: the struct was not started from \
                 {what}_default()"
            ),
        );
    }
    let bytes = std::slice::from_raw_parts(p as *const u8, size);
    if let Some(i) = bytes[known.min(size)..].iter().position(|&b| b != 0) {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!(
                "{what} has {size} bytes and byte {} is set, a field this version of h5tile \
                 ({}) does not know: start the struct from {what}_default(), and link the \
                 h5tile whose h5tile.h the program was compiled with",
                known + i,
                env!("CARGO_PKG_VERSION")
            ),
        );
    }
    let mut out = defaults;
    let n = size.min(known);
    std::ptr::copy_nonoverlapping(p as *const u8, &mut out as *mut T as *mut u8, n);
    // The size field now says what this version read; the rest kept the defaults.
    std::ptr::copy_nonoverlapping(
        &known as *const usize as *const u8,
        &mut out as *mut T as *mut u8,
        std::mem::size_of::<usize>(),
    );
    Ok(out)
}

/// No options struct of any version grows past this: a larger `size` is garbage (an
/// uninitialised struct), and reading that many bytes could run off the caller's memory.
const LARGEST_OPTIONS: usize = 1024;

/// Writes this version's `defaults` into a caller's struct of `size` bytes: as much of them as
/// fits, zeros beyond, and `size` in the first field.
///
/// # Safety
/// `p` must be NULL or point to `size` writable bytes.
unsafe fn write_sized<T: Copy>(p: *mut T, size: usize, defaults: T, smallest: usize) -> Result<()> {
    if p.is_null() {
        return fail(H5TILE_ERR_INVALID_ARGUMENT, "opts is NULL");
    }
    if size < smallest || size > LARGEST_OPTIONS {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!(
                "size {size} is not that of any version of the options struct ({smallest} to \
                 {LARGEST_OPTIONS} bytes): pass sizeof the struct"
            ),
        );
    }
    let known = std::mem::size_of::<T>();
    let bytes = std::slice::from_raw_parts_mut(p as *mut u8, size);
    bytes.fill(0);
    let n = size.min(known);
    std::ptr::copy_nonoverlapping(&defaults as *const T as *const u8, bytes.as_mut_ptr(), n);
    std::ptr::copy_nonoverlapping(
        &size as *const usize as *const u8,
        bytes.as_mut_ptr(),
        std::mem::size_of::<usize>(),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::write::{Codec, Compression};

    #[test]
    fn options_win_over_the_environment_which_wins_over_the_default() {
        assert_eq!(mode(H5TILE_GDS_FROM_ENVIRONMENT, None).unwrap(), Gds::Auto);
        assert_eq!(
            mode(H5TILE_GDS_FROM_ENVIRONMENT, Some("")).unwrap(),
            Gds::Auto
        );
        assert_eq!(
            mode(H5TILE_GDS_FROM_ENVIRONMENT, Some("on")).unwrap(),
            Gds::On
        );
        assert_eq!(
            mode(H5TILE_GDS_FROM_ENVIRONMENT, Some(" off ")).unwrap(),
            Gds::Off
        );
        assert_eq!(mode(H5TILE_GDS_AUTO, Some("on")).unwrap(), Gds::Auto);
        assert_eq!(mode(H5TILE_GDS_ON, Some("off")).unwrap(), Gds::On);
        assert_eq!(mode(H5TILE_GDS_OFF, Some("bogus")).unwrap(), Gds::Off);
    }

    #[test]
    fn ranks_per_file_comes_from_the_field_then_the_environment() {
        let env = |v: &'static str| move || Some(v.to_string());
        assert_eq!(ranks_per_file(0, || None).unwrap(), None);
        assert_eq!(ranks_per_file(0, env(" ")).unwrap(), None);
        assert_eq!(ranks_per_file(0, env("8")).unwrap(), Some(8));
        assert_eq!(ranks_per_file(16, env("8")).unwrap(), Some(16));
        assert_eq!(ranks_per_file(3, env("bogus")).unwrap(), Some(3));
        for bad in ["0", "-2", "eight"] {
            let e = ranks_per_file(0, env(bad)).unwrap_err();
            assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
            assert!(
                e.message.starts_with("H5TILE_RANKS_PER_FILE="),
                "{}",
                e.message
            );
        }
        assert_eq!(
            FIRST_WRITE, 24,
            "the 0.2 struct: size, layout, flags, gds, padding"
        );
    }

    #[test]
    fn compression_comes_from_the_field_then_the_environment() {
        let env = |v: &'static str| move || Some(v.to_string());
        let none = || None;
        let zstd = |level, shuffle| Some(Compression::new(Codec::Zstd, level, shuffle).unwrap());
        let vds = Layout::Vds;
        assert_eq!(compression((0, 0), false, vds, none).unwrap(), None);
        assert_eq!(
            compression((1, 0), false, vds, none).unwrap(),
            zstd(3, false)
        );
        assert_eq!(
            compression((1, 9), true, vds, env("lz4")).unwrap(),
            zstd(9, true)
        );
        assert_eq!(
            compression((0, 0), false, vds, env("zstd:5")).unwrap(),
            zstd(5, false)
        );
        assert_eq!(
            compression((0, 0), true, vds, env(" zstd ")).unwrap(),
            zstd(3, true)
        );
        // The shuffle from the environment, as `h5tile ls` shows a compression.
        assert_eq!(
            compression((0, 0), false, vds, env("zstd:1+shuffle")).unwrap(),
            zstd(1, true)
        );
        assert_eq!(compression((0, 0), false, vds, env("none")).unwrap(), None);
        assert_eq!(compression((0, 0), false, vds, env("")).unwrap(), None);
        let subfiles = compression((3, 0), false, Layout::Subfiles, none)
            .unwrap()
            .unwrap();
        assert_eq!((subfiles.codec, subfiles.level), (Codec::Deflate, 6));
        // The single-file layout takes no default from the environment (and refuses a codec
        // given in the options when the write is checked: `agree::validate`).
        assert_eq!(
            compression((0, 0), false, Layout::Single, env("zstd")).unwrap(),
            None
        );
        let lz4 = compression((2, 0), false, Layout::Single, none).unwrap();
        assert_eq!(lz4.map(|c| c.codec), Some(Codec::Lz4));
        for (args, shuffle, environment, says) in [
            ((7, 0), false, "", "compression 7"),
            ((0, 3), false, "", "compression_level 3 without a codec"),
            ((2, 1), false, "", "lz4, which has no levels"),
            ((3, 11), false, "", "compression level 11 for deflate"),
            ((0, 0), true, "", "H5TILE_SHUFFLE without compression"),
            ((0, 0), true, "none", "H5TILE_SHUFFLE without compression"),
            ((0, 0), false, "brotli", "H5TILE_COMPRESSION=brotli"),
            ((0, 0), false, "zstd:fast", "H5TILE_COMPRESSION=zstd:fast"),
            (
                (0, 0),
                false,
                "none+shuffle",
                "H5TILE_COMPRESSION=none+shuffle",
            ),
        ] {
            let e = compression(args, shuffle, vds, || Some(environment.to_string())).unwrap_err();
            assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
            assert!(e.message.contains(says), "{args:?}: {}", e.message);
        }
    }

    #[test]
    fn a_bad_environment_value_or_field_is_an_invalid_argument_naming_it() {
        let e = mode(H5TILE_GDS_FROM_ENVIRONMENT, Some("yes")).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
        assert!(e.message.contains("H5TILE_GDS=yes"), "{}", e.message);
        let e = mode(7, None).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
        assert!(e.message.contains("gds option 7"), "{}", e.message);
    }
}
