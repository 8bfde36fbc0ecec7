//! The C ABI of independent writers and one commit: `h5tile_txn_*`. A coordinator begins a
//! transaction and hands its token (plain bytes) to writers in any process, which need no MPI;
//! each writer's records (plain bytes) come back to the coordinator, whose commit is the one
//! step readers see.

use super::boundary::{
    array_arg, clear_out, guard, out_arg, run, slice_arg, str_arg, tile_arg, tile_buffer,
};
use super::checkpoint::numbers_arg;
use super::h5tile_write_options;
use crate::dtype::h5tile_dtype;
use crate::ops::transaction::{writer, Declared, Transaction};
use crate::ops::write::{Attribute, AttributeValue, LocalTile};
use crate::platform::device::Gds;
use crate::status::*;
use std::ffi::{c_char, c_void};
use std::path::Path;

/// A transaction, as its coordinator holds it (opaque): `h5tile_txn_begin` makes it,
/// `h5tile_txn_free` frees it.
#[allow(non_camel_case_types)]
pub struct h5tile_txn {
    tx: Transaction,
    /// The token last handed out, kept alive while the transaction is.
    token: Vec<u8>,
}

/// Begins a transaction on the file `path`: tiles written by processes that share no
/// communicator (`h5tile_txn_write_tile`, in any process holding the token), made visible at
/// once by `h5tile_txn_commit` in this process. The path is checked and prepared as
/// `h5tile_write` does (`opts`, NULL for the defaults: `H5TILE_LAYOUT_VDS` or `AUTO`, since each
/// writer writes files of its own; other layouts are `H5TILE_ERR_INVALID_ARGUMENT`), and the
/// transaction holds the path's write lock, so other writes' cleanups spare its files, until
/// its commit or abort. Declare its datasets next (`h5tile_txn_declare`). Not collective, no
/// MPI. `*out` is NULL on failure.
///
/// # Safety
/// Pointers must be NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn h5tile_txn_begin(
    path: *const c_char,
    opts: *const h5tile_write_options,
    out: *mut *mut h5tile_txn,
) -> h5tile_status {
    clear_out(out);
    run("h5tile_txn_begin", || {
        let out = out_arg(out, "out")?;
        let path = Path::new(str_arg(path, "path")?);
        let tx = Transaction::begin(path, h5tile_write_options::parse(opts)?)?;
        *out = Box::into_raw(Box::new(h5tile_txn {
            tx,
            token: Vec::new(),
        }));
        Ok(())
    })
}

/// The transaction whose token is the `token_len` bytes at `token`, to commit from a process
/// other than the coordinator's (such as a task graph's last task, run where the runtime
/// chooses): `h5tile_txn_commit` on it commits as the coordinator's would, without the
/// attributes, and a commit by either is seen by the other (the second changes nothing). It
/// holds no lock: the coordinator's transaction must stay open meanwhile, so that other writes'
/// cleanups spare its files. Freed with `h5tile_txn_free`, it is not aborted; `h5tile_txn_abort`
/// on it removes the transaction's tiles. `*out` is NULL on failure.
///
/// # Safety
/// Pointers must be NULL or valid for the lengths given.
#[no_mangle]
pub unsafe extern "C" fn h5tile_txn_resume(
    token: *const u8,
    token_len: usize,
    out: *mut *mut h5tile_txn,
) -> h5tile_status {
    clear_out(out);
    run("h5tile_txn_resume", || {
        let out = out_arg(out, "out")?;
        let tx = Transaction::resume(slice_arg(token, token_len, "token")?)?;
        *out = Box::into_raw(Box::new(h5tile_txn {
            tx,
            token: Vec::new(),
        }));
        Ok(())
    })
}

/// Declares the dataset `dataset` of the transaction `tx`: its element type and global shape
/// (`ndim` values). Every dataset is declared before the token is taken
/// (`h5tile_txn_token`); later ones are `H5TILE_ERR_INVALID_ARGUMENT`.
///
/// # Safety
/// `tx` must be NULL or live; other pointers NULL or valid for the lengths given.
#[no_mangle]
pub unsafe extern "C" fn h5tile_txn_declare(
    tx: *mut h5tile_txn,
    dataset: *const c_char,
    dtype: h5tile_dtype,
    ndim: usize,
    global_shape: *const u64,
) -> h5tile_status {
    run("h5tile_txn_declare", || {
        let tx = out_arg(tx, "tx")?;
        let (dtype, ndim) = array_arg(dtype, ndim)?;
        tx.tx.declare(Declared {
            dataset: str_arg(dataset, "dataset")?.to_string(),
            dtype,
            global: slice_arg(global_shape, ndim, "global_shape")?.to_vec(),
        })
    })
}

/// Sets attribute `name` of `object` ("/" for the file, a group or a declared dataset) to
/// `count` values of `dtype`, stored by the commit, as `h5tile_checkpoint_attr` does.
///
/// # Safety
/// `tx` must be NULL or live; other pointers NULL or valid for the lengths given.
#[no_mangle]
pub unsafe extern "C" fn h5tile_txn_attr(
    tx: *mut h5tile_txn,
    object: *const c_char,
    name: *const c_char,
    dtype: h5tile_dtype,
    count: usize,
    values: *const c_void,
) -> h5tile_status {
    run("h5tile_txn_attr", || {
        let tx = out_arg(tx, "tx")?;
        let value = numbers_arg(dtype, count, values)?;
        add_attribute(tx, object, name, value)
    })
}

/// Sets attribute `name` of `object` to the UTF-8 text `value`, as `h5tile_txn_attr` does.
///
/// # Safety
/// `tx` must be NULL or live; other pointers NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn h5tile_txn_attr_string(
    tx: *mut h5tile_txn,
    object: *const c_char,
    name: *const c_char,
    value: *const c_char,
) -> h5tile_status {
    run("h5tile_txn_attr_string", || {
        let tx = out_arg(tx, "tx")?;
        let text = str_arg(value, "value")?.to_string();
        add_attribute(tx, object, name, AttributeValue::Text(text))
    })
}

/// `value` as attribute `name` of `object` of `tx`.
///
/// # Safety
/// `object` and `name` must be NULL or NUL-terminated strings.
unsafe fn add_attribute(
    tx: &mut h5tile_txn,
    object: *const c_char,
    name: *const c_char,
    value: AttributeValue,
) -> Result<()> {
    tx.tx.add_attribute(Attribute {
        object: str_arg(object, "object")?.to_string(),
        name: str_arg(name, "name")?.to_string(),
        value,
    })
}

/// The transaction's token: `*token_len` bytes at `*token`, which stay valid until `tx` is
/// freed. Send them to the writers as they are (a file, a message, a pickle). Taking the
/// token closes the list of datasets; a transaction declaring none is
/// `H5TILE_ERR_INVALID_ARGUMENT`.
///
/// # Safety
/// `tx` must be NULL or live; `token` and `token_len` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn h5tile_txn_token(
    tx: *mut h5tile_txn,
    token: *mut *const u8,
    token_len: *mut usize,
) -> h5tile_status {
    run("h5tile_txn_token", || {
        let tx = out_arg(tx, "tx")?;
        let (token, token_len) = (out_arg(token, "token")?, out_arg(token_len, "token_len")?);
        tx.token = tx.tx.token()?;
        *token = tx.token.as_ptr();
        *token_len = tx.token.len();
        Ok(())
    })
}

/// Writes one tile of the declared dataset `dataset` for the transaction whose token is the
/// `token_len` bytes at `token`: in any process or thread, no MPI, no communicator. The tile
/// (`ndim` offsets and extents) must lie inside the dataset; `buf` holds its elements, dense
/// and row-major, in host or device memory. The tile goes to a file of its own in the tile
/// folder, synced unless the transaction's options said `H5TILE_NO_SYNC`; nothing is visible
/// until the coordinator commits. On success `*record` points to `*record_len` bytes
/// (allocated with `malloc`; free them with `h5tile_txn_record_free` or `free`) to send to the
/// coordinator: where the tile is, its checksums, and an attempt identity, so a tile written
/// twice (a retried task) is told apart. A tile with a zero extent writes nothing and gets a
/// record too. A token that is not one h5tile made, or was cut or changed, is
/// `H5TILE_ERR_INVALID_ARGUMENT`; a transaction aborted already, `H5TILE_ERR_NOT_FOUND`.
///
/// # Safety
/// Pointers must be NULL or valid for the lengths given; `buf` must hold the tile's elements.
#[no_mangle]
pub unsafe extern "C" fn h5tile_txn_write_tile(
    token: *const u8,
    token_len: usize,
    dataset: *const c_char,
    ndim: usize,
    tile_offset: *const u64,
    tile_shape: *const u64,
    buf: *const c_void,
    record: *mut *mut u8,
    record_len: *mut usize,
) -> h5tile_status {
    clear_out(record);
    run("h5tile_txn_write_tile", || {
        let (record, record_len) = (
            out_arg(record, "record")?,
            out_arg(record_len, "record_len")?,
        );
        let token = slice_arg(token, token_len, "token")?;
        let dataset = str_arg(dataset, "dataset")?;
        let tile = tile_arg(super::boundary::ndim_arg(ndim)?, tile_offset, tile_shape)?;
        let dtype = writer::dtype_of(token, dataset, ndim)?;
        let buf = tile_buffer(buf, &tile, 0, dtype, Gds::Auto)?;
        let bytes = writer::write_tiles(token, dataset, &[LocalTile { tile, buf }])?.remove(0);
        // SAFETY: malloc of the record's length (never 0: it holds its checksum), filled
        // below; the caller frees it with free().
        let out = libc::malloc(bytes.len()).cast::<u8>();
        if out.is_null() {
            return fail(
                H5TILE_ERR_IO,
                "cannot allocate the tile's record: out of memory",
            );
        }
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len());
        *record = out;
        *record_len = bytes.len();
        Ok(())
    })
}

/// Frees a record `h5tile_txn_write_tile` made (as `free` does); NULL is allowed.
///
/// # Safety
/// `record` must be NULL or a record not yet freed.
#[no_mangle]
pub unsafe extern "C" fn h5tile_txn_record_free(record: *mut u8) {
    guard("h5tile_txn_record_free", || {
        // SAFETY: allocated by malloc in h5tile_txn_write_tile (or NULL).
        libc::free(record.cast())
    })
}

/// Commits the tiles the `nrecords` records name (record `i`: `record_lens[i]` bytes at
/// `records[i]`), with the declared datasets and attributes, as one new version of the file:
/// the only step readers see, atomic as `h5tile_write`'s commit (the old file stays readable
/// until the new master is renamed into place). It does not read the tiles' bytes: their
/// checksums, taken by the writers, go into the master, and reads and `h5tile check` verify
/// them. Of several records of one tile (a retried or speculative task), the first whose file
/// is there is kept and the others' files are removed. Refused, leaving the old file as it was
/// and the transaction open (commit again, or abort): a record of another transaction or
/// damaged (`H5TILE_ERR_INVALID_ARGUMENT`); tiles that overlap, or leave a hole without
/// `H5TILE_ALLOW_PARTIAL` (`H5TILE_ERR_SHAPE`, as `h5tile_write`); a tile whose file is missing
/// (`H5TILE_ERR_MISSING_TILE`) or is not as its record says (`H5TILE_ERR_CORRUPT`). Once
/// committed, a commit again succeeds and changes nothing (the files of records that came
/// late are removed).
///
/// # Safety
/// `tx` must be NULL or live; `records` and `record_lens` NULL or valid for `nrecords`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_txn_commit(
    tx: *mut h5tile_txn,
    nrecords: usize,
    records: *const *const u8,
    record_lens: *const usize,
) -> h5tile_status {
    run("h5tile_txn_commit", || {
        let tx = out_arg(tx, "tx")?;
        let ptrs = slice_arg(records, nrecords, "records")?;
        let lens = slice_arg(record_lens, nrecords, "record_lens")?;
        let records = ptrs
            .iter()
            .zip(lens)
            .enumerate()
            .map(|(i, (&p, &len))| slice_arg(p, len, &format!("records[{i}]")))
            .collect::<Result<Vec<&[u8]>>>()?;
        tx.tx.commit(&records)
    })
}

/// Aborts the transaction: removes every tile file its writers made and releases its lock.
/// Tiles written after the abort are refused where the tile folder went with it, and
/// otherwise removed by the next write of the path. A committed transaction is
/// `H5TILE_ERR_INVALID_ARGUMENT`.
///
/// # Safety
/// `tx` must be NULL or live.
#[no_mangle]
pub unsafe extern "C" fn h5tile_txn_abort(tx: *mut h5tile_txn) -> h5tile_status {
    run("h5tile_txn_abort", || out_arg(tx, "tx")?.tx.abort())
}

/// Frees the transaction (an open one is aborted first); NULL is allowed.
///
/// # Safety
/// `tx` must be NULL or come from `h5tile_txn_begin`, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn h5tile_txn_free(tx: *mut h5tile_txn) {
    guard("h5tile_txn_free", || {
        if !tx.is_null() {
            // SAFETY: made by Box::into_raw in h5tile_txn_begin, freed once.
            drop(Box::from_raw(tx));
        }
    })
}
