//! The C ABI of a restart as short as the save: `h5tile_restart_*` name, call by call, each
//! field's tile a rank reads back and the attributes, then one collective call reads them all
//! from one version of the file (`ops::restart`). It mirrors `h5tile_checkpoint_*`.

use super::boundary::{
    array_arg, clear_out, guard, out_arg, read_buffer, refusal, run, str_arg, tile_arg,
};
use super::h5tile_read_options;
use crate::dtype::{h5tile_dtype, Dtype};
use crate::geometry::tile::Tile;
use crate::ops::read::ReadOptions;
use crate::ops::restart::{self, AttributeRead, FieldRead};
use crate::platform::comm::Comm;
use crate::status::*;
use mpi::ffi::MPI_Comm;
use std::ffi::{c_char, c_void};
use std::path::PathBuf;

/// A restart being described (opaque): `h5tile_restart_begin` makes it, `h5tile_restart_read`
/// or `h5tile_restart_abort` frees it.
#[allow(non_camel_case_types)]
pub struct h5tile_restart {
    comm: MPI_Comm,
    path: PathBuf,
    options: ReadOptions,
    fields: Vec<(String, Dtype, Tile, *mut c_void)>,
    attributes: Vec<(AttributeRead, *mut c_void)>,
    /// The first call that failed, returned again (agreed) by the read.
    failed: Option<Error>,
}

/// Begins a restart from the file `path` (a checkpoint, or any HDF5 file h5tile reads): the
/// tiles each rank reads back (`h5tile_restart_field`) and the attributes
/// (`h5tile_restart_attr`) are named call by call, and read all at once, from one version of
/// the file, by `h5tile_restart_read`, collective over `comm` (`MPI_COMM_NULL`: this process
/// alone). `opts` (NULL: the defaults) are the read options of every field. Not collective.
/// `*rs` is NULL on failure.
///
/// # Safety
/// Pointers must be NULL or valid; `comm` a valid communicator or `MPI_COMM_NULL`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_restart_begin(
    comm: MPI_Comm,
    path: *const c_char,
    opts: *const h5tile_read_options,
    rs: *mut *mut h5tile_restart,
) -> h5tile_status {
    clear_out(rs);
    run("h5tile_restart_begin", || {
        let out = out_arg(rs, "rs")?;
        let restart = h5tile_restart {
            comm,
            path: PathBuf::from(str_arg(path, "path")?),
            options: h5tile_read_options::parse(opts)?,
            fields: Vec::new(),
            attributes: Vec::new(),
            failed: None,
        };
        *out = Box::into_raw(Box::new(restart));
        Ok(())
    })
}

/// Runs `step` on the restart `rs`, noting its failure for `h5tile_restart_read`.
///
/// # Safety
/// `rs` must be NULL or a live restart.
unsafe fn note(
    name: &'static str,
    rs: *mut h5tile_restart,
    step: impl FnOnce(&mut h5tile_restart) -> Result<()>,
) -> h5tile_status {
    run(name, || {
        let restart = out_arg(rs, "rs")?;
        let outcome = step(restart);
        if let Err(e) = &outcome {
            restart.failed.get_or_insert_with(|| e.clone());
        }
        outcome
    })
}

/// Names this rank's tile of `dataset` to read back into `buf` (dense, row-major, `dtype`
/// elements, host or device memory), as `h5tile_read` takes it: filled by
/// `h5tile_restart_read`, and must stay valid until then. Call it once per field (or per
/// tile). Not collective; a failure here (NULL pointers, a bad type or shape) is also returned
/// by the read, on every rank.
///
/// # Safety
/// Pointers must be NULL or valid for the lengths given; `buf` must have room for the tile.
#[no_mangle]
pub unsafe extern "C" fn h5tile_restart_field(
    rs: *mut h5tile_restart,
    dataset: *const c_char,
    dtype: h5tile_dtype,
    ndim: usize,
    tile_offset: *const u64,
    tile_shape: *const u64,
    buf: *mut c_void,
) -> h5tile_status {
    note("h5tile_restart_field", rs, |restart| {
        refusal()?;
        let dataset = str_arg(dataset, "dataset")?;
        let (dtype, ndim) = array_arg(dtype, ndim)?;
        let tile = tile_arg(ndim, tile_offset, tile_shape)?;
        // Checked now (NULL, size), made again at the read.
        read_buffer(buf, &tile, dtype, restart.options.gds)
            .map_err(|e| e.context(&format!("dataset '{dataset}'")))?;
        restart.fields.push((dataset.to_string(), dtype, tile, buf));
        Ok(())
    })
}

/// Names attribute `name` of `object` ("/" for the file) to read back as `count` values of
/// `dtype` (HDF5 converting numbers) into `values`, as `h5tile_attr_read` reads it: filled by
/// `h5tile_restart_read` on every rank. Not collective.
///
/// # Safety
/// Pointers must be NULL or valid; `values` must have room for `count` values.
#[no_mangle]
pub unsafe extern "C" fn h5tile_restart_attr(
    rs: *mut h5tile_restart,
    object: *const c_char,
    name: *const c_char,
    dtype: h5tile_dtype,
    count: usize,
    values: *mut c_void,
) -> h5tile_status {
    note("h5tile_restart_attr", rs, |restart| {
        let (object, name) = (str_arg(object, "object")?, str_arg(name, "name")?);
        let dtype = Dtype::parse(dtype)?;
        if count > 0 && values.is_null() {
            return fail(H5TILE_ERR_INVALID_ARGUMENT, "values is NULL");
        }
        let read = AttributeRead {
            object: object.to_string(),
            name: name.to_string(),
            dtype,
            count,
        };
        restart.attributes.push((read, values));
        Ok(())
    })
}

/// Reads every tile and attribute the restart `rs` names, collectively over the communicator
/// it began with: each rank its tiles, every rank the attributes, all from one version of the
/// file (a write replacing it meanwhile makes the read start over on the new one). Frees `rs`,
/// whatever the outcome. A failure on any rank (of this call or of an earlier call on `rs`) is
/// returned on every rank, naming the field or attribute: `H5TILE_ERR_NOT_FOUND` (no file,
/// dataset or attribute), `H5TILE_ERR_SHAPE`, `H5TILE_ERR_DTYPE`, `H5TILE_ERR_CORRUPT`, ... as
/// `h5tile_read` and `h5tile_attr_read` give them.
///
/// # Safety
/// `rs` must be NULL or a live restart; the buffers it names must still be valid.
#[no_mangle]
pub unsafe extern "C" fn h5tile_restart_read(rs: *mut h5tile_restart) -> h5tile_status {
    run("h5tile_restart_read", || {
        if rs.is_null() {
            return fail(H5TILE_ERR_INVALID_ARGUMENT, "rs is NULL");
        }
        let restart = *Box::from_raw(rs);
        let comm = Comm::from_raw(restart.comm)?;
        let options = restart.options;
        let mut fields = comm.agree_on(|| {
            if let Some(e) = restart.failed {
                return Err(e);
            }
            restart
                .fields
                .into_iter()
                .map(|(dataset, dtype, tile, buf)| {
                    let buf = read_buffer(buf, &tile, dtype, options.gds)?;
                    Ok(FieldRead {
                        dataset,
                        dtype,
                        tile,
                        buf,
                    })
                })
                .collect::<Result<Vec<_>>>()
        })?;
        let (wanted, into): (Vec<AttributeRead>, Vec<*mut c_void>) =
            restart.attributes.into_iter().unzip();
        let values = restart::read(&comm, &restart.path, &mut fields, &wanted, options)?;
        for (bytes, to) in values.iter().zip(into) {
            if !bytes.is_empty() {
                // SAFETY: `to` has room for the `count` values the caller named, which is
                // what `read_attribute` returned (it fails on any other count).
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), to.cast::<u8>(), bytes.len());
            }
        }
        Ok(())
    })
}

/// Frees `rs` without reading anything (NULL is fine). Not collective: when one rank aborts,
/// every rank must.
///
/// # Safety
/// `rs` must be NULL or come from `h5tile_restart_begin`, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn h5tile_restart_abort(rs: *mut h5tile_restart) {
    guard("h5tile_restart_abort", || {
        if !rs.is_null() {
            drop(Box::from_raw(rs));
        }
    })
}
