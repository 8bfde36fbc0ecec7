//! The C ABI of checkpoints and series: `h5tile_checkpoint_*` assemble many datasets and
//! attributes on each rank and commit them at once; `h5tile_series_*` number checkpoints in
//! a folder and keep the ones a retention rule names; `h5tile_attr_read` reads an attribute.

use super::asynchronous::{h5tile_request, start_request};
use super::boundary::{
    array_arg, clear_out, guard, out_arg, run, slice_arg, str_arg, tile_arg, tile_buffer,
};
use super::{h5tile_series_options, h5tile_write_options};
use crate::dtype::{h5tile_dtype, Dtype};
use crate::ops::checkpoint::{commit_checked, Assembly, SeriesStep};
use crate::ops::series;
use crate::ops::write::{AttributeValue, Checkpoint, LocalTile};
use crate::platform::comm::Comm;
use crate::status::*;
use mpi::ffi::MPI_Comm;
use std::ffi::{c_char, c_void};
use std::path::{Path, PathBuf};

/// A checkpoint being assembled (opaque): `h5tile_checkpoint_begin` or `h5tile_series_begin`
/// makes it, `h5tile_checkpoint_commit`, `_commit_async` or `_abort` frees it.
#[allow(non_camel_case_types)]
pub struct h5tile_checkpoint {
    comm: MPI_Comm,
    assembly: Assembly<'static>,
}

/// `h5tile_series_latest` flag: also skip checkpoints whose checksums or tile files fail.
pub const H5TILE_SERIES_VERIFY: u32 = 1;

/// Begins a checkpoint of the file `path`: datasets (`h5tile_checkpoint_add`) and attributes
/// (`h5tile_checkpoint_attr`, `_attr_string`) are gathered on each rank, and written all at
/// once by `h5tile_checkpoint_commit`, collective over `comm`. Readers and a crash then see the
/// old file or the new one, never some of its datasets. The checkpoint replaces the file as
/// `h5tile_write` does (with `H5TILE_KEEP_OTHERS`, it keeps what it does not rewrite); `opts`
/// (NULL: the defaults) are those of `h5tile_write`, layout included. Not collective; `comm`
/// (`MPI_COMM_NULL`: this process alone) must stay valid until the commit. `*out` is NULL on
/// failure.
///
/// # Safety
/// Pointers must be NULL or valid; `comm` a valid communicator or `MPI_COMM_NULL`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_checkpoint_begin(
    comm: MPI_Comm,
    path: *const c_char,
    opts: *const h5tile_write_options,
    out: *mut *mut h5tile_checkpoint,
) -> h5tile_status {
    begin("h5tile_checkpoint_begin", comm, opts, out, || {
        Ok((PathBuf::from(str_arg(path, "path")?), None))
    })
}

/// What `h5tile_checkpoint_begin` and `h5tile_series_begin` (`name`) share: `*out` is NULL
/// until the empty checkpoint over `comm` with the options `opts` is made, of the file (and the
/// series step) that `target` names.
///
/// # Safety
/// As `h5tile_checkpoint_begin`.
unsafe fn begin(
    name: &'static str,
    comm: MPI_Comm,
    opts: *const h5tile_write_options,
    out: *mut *mut h5tile_checkpoint,
    target: impl FnOnce() -> Result<(PathBuf, Option<SeriesStep>)>,
) -> h5tile_status {
    clear_out(out);
    run(name, || {
        let out = out_arg(out, "out")?;
        let (path, series) = target()?;
        let checkpoint = Checkpoint {
            path,
            fields: Vec::new(),
            attributes: Vec::new(),
            options: h5tile_write_options::parse(opts)?,
        };
        let assembly = Assembly::new(checkpoint, series);
        *out = Box::into_raw(Box::new(h5tile_checkpoint { comm, assembly }));
        Ok(())
    })
}

/// Runs `step`, one step of assembling the checkpoint `ck` on this rank (the call `name`): its
/// failure is returned now and noted, for the commit to return on every rank.
///
/// # Safety
/// `ck` must be NULL or a live checkpoint.
unsafe fn gather(
    name: &'static str,
    ck: *mut h5tile_checkpoint,
    step: impl FnOnce(&mut Assembly<'static>) -> Result<()>,
) -> h5tile_status {
    run(name, || {
        let assembly = &mut out_arg(ck, "ck")?.assembly;
        let outcome = step(assembly);
        assembly.note(outcome)
    })
}

/// The checkpoint `ck` taken back from the caller (and so freed), checked over its
/// communicator as its commit begins.
///
/// # Safety
/// `ck` must be NULL or a live checkpoint.
unsafe fn take_checked(ck: *mut h5tile_checkpoint) -> Result<(Comm, Assembly<'static>)> {
    if ck.is_null() {
        return fail(H5TILE_ERR_INVALID_ARGUMENT, "ck is NULL");
    }
    let h5tile_checkpoint { comm, assembly } = *Box::from_raw(ck);
    let comm = Comm::from_raw(comm)?;
    assembly.check(&comm)?;
    Ok((comm, assembly))
}

/// Adds this rank's tile of dataset `dataset` to the checkpoint `ck`, as `h5tile_write_tiles`
/// takes one: `dtype`, `ndim` and `global_shape` as every rank passes them, the tile's offset
/// and shape, and its dense row-major buffer (host or device memory), which must stay valid
/// and unchanged until the commit completes. Call it several times for several tiles of one
/// dataset (with the same type and shape each time), and once per dataset on ranks that hold
/// none of it (with a zero-extent tile). Not collective. A failure is returned now and again
/// by the commit, on every rank, which then writes nothing: a program may check the commit's
/// status alone.
///
/// # Safety
/// Pointers must be NULL or valid for the lengths given.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn h5tile_checkpoint_add(
    ck: *mut h5tile_checkpoint,
    dataset: *const c_char,
    dtype: h5tile_dtype,
    ndim: usize,
    global_shape: *const u64,
    tile_offset: *const u64,
    tile_shape: *const u64,
    buf: *const c_void,
) -> h5tile_status {
    gather("h5tile_checkpoint_add", ck, |assembly| {
        let dataset = str_arg(dataset, "dataset")?;
        let (dtype, ndim) = array_arg(dtype, ndim)?;
        let global = slice_arg(global_shape, ndim, "global_shape")?;
        let tile = tile_arg(ndim, tile_offset, tile_shape)?;
        let fields = &assembly.checkpoint.fields;
        let k = fields
            .iter()
            .find(|f| f.dataset == dataset)
            .map_or(0, |f| f.tiles.len());
        let gds = assembly.checkpoint.options.gds;
        let buf = tile_buffer(buf, &tile, k, dtype, gds)?;
        assembly
            .add(dataset, dtype, global, LocalTile { tile, buf })
            .map_err(|e| e.context(&format!("dataset '{dataset}'")))
    })
}

/// Sets attribute `name` of `object` ("/" for the file, or a group or dataset path; a missing
/// group is created) to `count` (1 or more) values of `dtype` at `values`, copied now; one
/// value is stored as a scalar (h5py reads a number), more as a one-dimensional array. Every
/// rank passes the same attributes; rank 0's values are stored. Setting a name again replaces
/// it. Names starting `h5tile_` on a dataset the checkpoint writes are h5tile's own records
/// (the master's index, checksums): the commit refuses them (`H5TILE_ERR_INVALID_ARGUMENT`).
/// Not collective; failures as for `h5tile_checkpoint_add`.
///
/// # Safety
/// Pointers must be NULL or valid for the lengths given.
#[no_mangle]
pub unsafe extern "C" fn h5tile_checkpoint_attr(
    ck: *mut h5tile_checkpoint,
    object: *const c_char,
    name: *const c_char,
    dtype: h5tile_dtype,
    count: usize,
    values: *const c_void,
) -> h5tile_status {
    gather("h5tile_checkpoint_attr", ck, |assembly| {
        let (object, name) = (str_arg(object, "object")?, str_arg(name, "name")?);
        assembly.attr(object, name, numbers_arg(dtype, count, values)?);
        Ok(())
    })
}

/// `count` values of `dtype` at `values`, as an attribute's value.
///
/// # Safety
/// `values` must be NULL or hold `count` values of `dtype`.
pub(super) unsafe fn numbers_arg(
    dtype: h5tile_dtype,
    count: usize,
    values: *const c_void,
) -> Result<AttributeValue> {
    let dtype = Dtype::parse(dtype)?;
    let len = count.checked_mul(dtype.size()).ok_or_else(|| {
        Error::new(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!("count {count} is too large"),
        )
    })?;
    let bytes = slice_arg(values.cast::<u8>(), len, "values")?.to_vec();
    Ok(AttributeValue::Numbers { dtype, bytes })
}

/// Sets attribute `name` of `object` to the UTF-8 text `value`, stored as h5py stores a `str`
/// (a variable-length UTF-8 string). As `h5tile_checkpoint_attr`.
///
/// # Safety
/// Pointers must be NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn h5tile_checkpoint_attr_string(
    ck: *mut h5tile_checkpoint,
    object: *const c_char,
    name: *const c_char,
    value: *const c_char,
) -> h5tile_status {
    gather("h5tile_checkpoint_attr_string", ck, |assembly| {
        let (object, name) = (str_arg(object, "object")?, str_arg(name, "name")?);
        let text = str_arg(value, "value")?.to_string();
        assembly.attr(object, name, AttributeValue::Text(text));
        Ok(())
    })
}

/// Writes every dataset and attribute of `ck` and makes them visible at once; collective over
/// the checkpoint's communicator; frees `ck`. Ranks that disagree on the set of datasets, their
/// types or global shapes get `H5TILE_ERR_INVALID_ARGUMENT` on every rank, and the old file
/// stays whole. In a series, the checkpoint is then recorded as the latest, and checkpoints the
/// retention rule no longer keeps are removed. When it returns, the data is on disk (unless
/// `H5TILE_NO_SYNC`) and any process may open it; the outcome is the same on every rank.
///
/// # Safety
/// `ck` must come from `h5tile_checkpoint_begin` or `h5tile_series_begin`, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn h5tile_checkpoint_commit(ck: *mut h5tile_checkpoint) -> h5tile_status {
    run("h5tile_checkpoint_commit", || {
        let (comm, a) = take_checked(ck)?;
        commit_checked(&comm, &a.checkpoint, a.series.as_ref())
    })
}

/// `h5tile_checkpoint_commit` that returns before the data is written, as
/// `h5tile_write_async`: complete `*req` with `h5tile_wait` or `h5tile_fence`. With
/// `H5TILE_SNAPSHOT` in the checkpoint's options, the buffers added are copied before it
/// returns and may change at once; without it they must stay valid and unchanged until then.
/// A series' pruning runs in the background too. Frees `ck`.
///
/// # Safety
/// As `h5tile_checkpoint_commit`; `req` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn h5tile_checkpoint_commit_async(
    ck: *mut h5tile_checkpoint,
    req: *mut *mut h5tile_request,
) -> h5tile_status {
    clear_out(req);
    run("h5tile_checkpoint_commit_async", || {
        let (comm, a) = take_checked(ck)?;
        start_request(comm, a.checkpoint, a.series, req);
        Ok(())
    })
}

/// Marks the checkpoint `ck` failed on this rank because of `why` (the program's own error,
/// e.g. an exception in a language binding): its commit then fails on every rank with
/// `H5TILE_ERR_INVALID_ARGUMENT` before anything is written, the message naming this rank and
/// `why`. For a rank that cannot go on while the others commit: it still calls the commit, so
/// that no rank waits for it. Not collective.
///
/// # Safety
/// `ck` must be NULL or a live checkpoint; `why` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn h5tile_checkpoint_fail(
    ck: *mut h5tile_checkpoint,
    why: *const c_char,
) -> h5tile_status {
    run("h5tile_checkpoint_fail", || {
        let ck = out_arg(ck, "ck")?;
        let why = match why.is_null() {
            true => "no reason given".to_string(),
            false => std::ffi::CStr::from_ptr(why).to_string_lossy().into_owned(),
        };
        let failed = fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!("the checkpoint failed on this rank before its commit: {why}"),
        );
        // The commit reports it; this call itself succeeded.
        let _ = ck.assembly.note(failed);
        Ok(())
    })
}

/// Frees `ck` without writing anything (NULL is fine). Not collective: when one rank aborts,
/// every rank must (a commit on the others would wait for it).
///
/// # Safety
/// `ck` must be NULL or come from `h5tile_checkpoint_begin` or `h5tile_series_begin`, not yet
/// freed.
#[no_mangle]
pub unsafe extern "C" fn h5tile_checkpoint_abort(ck: *mut h5tile_checkpoint) {
    guard("h5tile_checkpoint_abort", || {
        if !ck.is_null() {
            drop(Box::from_raw(ck));
        }
    })
}

/// Reads attribute `name` of `object` ("/" for the file) of the file `path` as `count` values
/// of `dtype` (HDF5 converting numbers) into `values`. Collective over `comm` (`MPI_COMM_NULL`:
/// this process alone): rank 0 reads, every rank gets the values and the same status:
/// `H5TILE_ERR_NOT_FOUND` (no file, object or attribute), `H5TILE_ERR_DTYPE` (text, or a type
/// that does not convert), `H5TILE_ERR_SHAPE` (the attribute holds another number of values).
///
/// # Safety
/// Pointers must be NULL or valid; `values` must have room for `count` values of `dtype`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_attr_read(
    comm: MPI_Comm,
    path: *const c_char,
    object: *const c_char,
    name: *const c_char,
    dtype: h5tile_dtype,
    count: usize,
    values: *mut c_void,
) -> h5tile_status {
    run("h5tile_attr_read", || {
        let comm = Comm::from_raw(comm)?;
        let (path, object, name, dtype) = comm.agree_on(|| {
            let path = Path::new(str_arg(path, "path")?);
            let (object, name) = (str_arg(object, "object")?, str_arg(name, "name")?);
            let dtype = Dtype::parse(dtype)?;
            if count > 0 && values.is_null() {
                return fail(H5TILE_ERR_INVALID_ARGUMENT, "values is NULL");
            }
            Ok((path, object, name, dtype))
        })?;
        let read = comm.agree_on(|| match comm.is_root() {
            true => crate::ops::checkpoint::read_attribute(path, object, name, dtype, count),
            false => Ok(Vec::new()),
        })?;
        let bytes = comm.broadcast_bytes(read);
        if !bytes.is_empty() {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), values.cast::<u8>(), bytes.len());
        }
        Ok(())
    })
}

/// Begins the checkpoint of `step` in the series kept in the folder `dir` (created if
/// missing): as `h5tile_checkpoint_begin` of the file `dir/ckpt.<step>.h5` (the step
/// zero-padded to 12 digits). After its commit the series records it as the latest complete
/// checkpoint (the file `dir/latest`, replaced atomically), then removes what `sopts` (NULL:
/// keep everything) no longer keeps, never the latest. Not collective.
///
/// # Safety
/// As `h5tile_checkpoint_begin`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_series_begin(
    comm: MPI_Comm,
    dir: *const c_char,
    step: u64,
    sopts: *const h5tile_series_options,
    opts: *const h5tile_write_options,
    out: *mut *mut h5tile_checkpoint,
) -> h5tile_status {
    begin("h5tile_series_begin", comm, opts, out, || {
        let dir = PathBuf::from(str_arg(dir, "dir")?);
        if dir.as_os_str().is_empty() {
            return fail(H5TILE_ERR_INVALID_ARGUMENT, "dir is empty");
        }
        let options = h5tile_series_options::parse(sopts)?;
        let path = series::checkpoint_path(&dir, step);
        Ok((path, Some(SeriesStep { dir, step, options })))
    })
}

/// Finds the newest complete checkpoint of the series in `dir`, skipping those a crash left
/// incomplete and, with `H5TILE_SERIES_VERIFY` in `flags`, those whose checksums or tile files
/// fail (checked in parallel over the ranks). Sets `*step` and writes its path (NUL-terminated)
/// to `path`, which has room for `path_bytes` bytes (NULL with 0: only the step). Collective
/// over `comm` (`MPI_COMM_NULL`: this process alone); every rank gets the same answer.
/// `H5TILE_ERR_NOT_FOUND` when there is no complete checkpoint (or no folder);
/// `H5TILE_ERR_INVALID_ARGUMENT` when the path does not fit (`*step` is still set).
/// While another program commits steps, the checkpoint named stays until the commit of the
/// `keep_last`-th step after it prunes it: a read that overlaps that fails with
/// `H5TILE_ERR_NOT_FOUND` or `H5TILE_ERR_MISSING_TILE` (never with other data); ask again.
/// A checkpoint pruned while `H5TILE_SERIES_VERIFY` checks it sends the search to the newer
/// steps committed meanwhile, never back to an older one. Where `H5TILE_SERIES_VERIFY` passed
/// over newer complete checkpoints, `h5tile_series_skipped()` names each and why, on every rank,
/// and rank 0 logs it at `H5TILE_LOG=warn` (the default).
///
/// # Safety
/// Pointers must be NULL or valid for the lengths given.
#[no_mangle]
pub unsafe extern "C" fn h5tile_series_latest(
    comm: MPI_Comm,
    dir: *const c_char,
    flags: u32,
    step: *mut u64,
    path: *mut c_char,
    path_bytes: usize,
) -> h5tile_status {
    let mut skipped = String::new();
    set_skipped("");
    let status = run("h5tile_series_latest", || {
        let comm = Comm::from_raw(comm)?;
        let dir = comm.agree_on(|| {
            out_arg(step, "step")?;
            if path_bytes > 0 && path.is_null() {
                return fail(H5TILE_ERR_INVALID_ARGUMENT, "path is NULL");
            }
            if flags & !H5TILE_SERIES_VERIFY != 0 {
                let unknown = flags & !H5TILE_SERIES_VERIFY;
                return fail(
                    H5TILE_ERR_INVALID_ARGUMENT,
                    format!("unknown series flags {unknown:#x}"),
                );
            }
            Ok(PathBuf::from(str_arg(dir, "dir")?))
        })?;
        let (found, found_path) = match flags & H5TILE_SERIES_VERIFY != 0 {
            true => {
                let (found, passed_over) = series::latest_verified_skipping(&comm, &dir)?;
                skipped = said_skipped(&comm, &dir, found.0, &passed_over);
                found
            }
            false => {
                let found = comm.agree_on(|| match comm.is_root() {
                    true => series::latest(&dir),
                    false => Ok((0, PathBuf::new())),
                })?;
                let mut words = [found.0];
                comm.broadcast(&mut words);
                let mut text = found.1.to_string_lossy().into_owned();
                comm.broadcast_text(0, &mut text);
                (words[0], PathBuf::from(text))
            }
        };
        *step = found;
        let text = found_path.to_string_lossy();
        if path_bytes == 0 {
            return Ok(());
        }
        if text.len() >= path_bytes {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "path_bytes is {path_bytes}, too small for '{text}' ({} bytes with its NUL)",
                    text.len() + 1
                ),
            );
        }
        std::ptr::copy_nonoverlapping(text.as_ptr(), path.cast::<u8>(), text.len());
        *path.add(text.len()) = 0;
        Ok(())
    });
    // A restart from an older step than the newest is worth a word the caller can read.
    if status == H5TILE_OK {
        set_skipped(&skipped);
    }
    status
}

thread_local! {
    /// What the last `h5tile_series_latest` on this thread passed over (`h5tile_series_skipped`).
    static SKIPPED: std::cell::RefCell<std::ffi::CString> = Default::default();
}

fn set_skipped(text: &str) {
    let c = std::ffi::CString::new(text.replace('\0', " ")).unwrap_or_default();
    SKIPPED.with(|s| *s.borrow_mut() = c);
}

/// What the last `h5tile_series_latest` on this thread passed over: with
/// `H5TILE_SERIES_VERIFY`, the newer complete checkpoints that failed verification, each step
/// and why ("series '<dir>': took step 6, skipping 1 newer complete checkpoint that failed
/// verification: step 7 (tile file '...' holding [0:2, 0:6] bytes 2048..2144 do not match
/// their checksum ...)"), the same on every rank; "" where it skipped none, failed, or was not
/// called. The pointer stays valid until the next `h5tile_series_latest` on this thread;
/// never NULL.
#[no_mangle]
pub extern "C" fn h5tile_series_skipped() -> *const c_char {
    guard("h5tile_series_skipped", || {
        SKIPPED.with(|s| s.borrow().as_ptr())
    })
}

/// What `h5tile_series_latest` with `H5TILE_SERIES_VERIFY` says of the newer checkpoints it
/// skipped for step `found` (empty: none): logged at warn by rank 0, and returned for
/// `h5tile_series_skipped`.
fn said_skipped(comm: &Comm, dir: &Path, found: u64, skipped: &series::Skipped) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let each: Vec<String> = skipped
        .iter()
        .map(|(step, why)| format!("step {step} ({why})"))
        .collect();
    let text = format!(
        "series '{}': took step {found}, skipping {} newer complete checkpoint{} that failed \
         verification: {}",
        dir.display(),
        skipped.len(),
        if skipped.len() == 1 { "" } else { "s" },
        each.join("; ")
    );
    if comm.is_root() {
        crate::platform::device::log::warn(&text);
    }
    text
}
