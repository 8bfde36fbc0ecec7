//! What every exported function shares: catching panics, the thread-local last-error message,
//! and turning raw C arguments into checked Rust values (NULL → `H5TILE_ERR_INVALID_ARGUMENT`),
//! tile buffers included (host or device memory).

use crate::dtype::{h5tile_dtype, Dtype};
use crate::geometry::tile::Tile;
use crate::platform::device::{self, Buffer, BufferMut, Gds, Route};
use crate::status::*;
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::Path;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// The refusal a language binding set for this thread's next call (`h5tile_refuse_next`),
    /// and that of the call running now.
    static REFUSALS: RefCell<(Option<Error>, Option<Error>)> = const { RefCell::new((None, None)) };
}

/// Runs the body of an exported function: its error becomes the returned status and the
/// thread's last-error message; a panic becomes `H5TILE_ERR_PANIC`. Success clears the message.
/// A refusal set for this call (`refuse_next`) is this call's alone.
pub fn run(body: impl FnOnce() -> Result<()>) -> h5tile_status {
    REFUSALS.with(|r| {
        let mut r = r.borrow_mut();
        r.1 = r.0.take();
    });
    let (status, message) = match catch_panic(body) {
        Ok(()) => (H5TILE_OK, String::new()),
        Err(e) => (e.status, e.message),
    };
    REFUSALS.with(|r| r.borrow_mut().1 = None);
    set_last_error(&message);
    status
}

/// Makes this thread's next exported call fail with `error` where it checks its path and
/// dataset arguments (`dataset_arg`), whatever they are.
pub fn refuse_next(error: Error) {
    REFUSALS.with(|r| r.borrow_mut().0 = Some(error));
}

pub fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Pointer to this thread's last message; valid until the next h5tile call on this thread.
pub fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

fn null(name: &str) -> Error {
    Error::new(H5TILE_ERR_INVALID_ARGUMENT, format!("{name} is NULL"))
}

/// A NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `p` must be NULL or point to a NUL-terminated string.
pub unsafe fn str_arg<'a>(p: *const c_char, name: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(null(name));
    }
    CStr::from_ptr(p).to_str().map_err(|_| {
        Error::new(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!("{name} is not valid UTF-8"),
        )
    })
}

/// An array argument of `len` elements (NULL is allowed only when `len` is 0).
///
/// # Safety
/// `p` must be NULL or point to `len` readable elements.
pub unsafe fn slice_arg<'a, T>(p: *const T, len: usize, name: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null(name));
    }
    Ok(std::slice::from_raw_parts(p, len))
}

/// An out-parameter.
///
/// # Safety
/// `p` must be NULL or point to writable memory for one `T`.
pub unsafe fn out_arg<'a, T>(p: *mut T, name: &str) -> Result<&'a mut T> {
    p.as_mut().ok_or_else(|| null(name))
}

/// Checks `ndim` before any array of that length is read.
pub fn ndim_arg(ndim: usize) -> Result<usize> {
    if ndim == 0 || ndim > crate::ops::write::MAX_NDIM {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!(
                "ndim is {ndim}; it must be 1 to {}",
                crate::ops::write::MAX_NDIM
            ),
        );
    }
    Ok(ndim)
}

/// A handle's out-parameter set to NULL at once (where there is one), so that every failure,
/// even one found before the call's own checks, leaves it NULL.
///
/// # Safety
/// `p` must be NULL or point to writable memory for one pointer.
pub unsafe fn clear_out<T>(p: *mut *mut T) {
    if !p.is_null() {
        *p = std::ptr::null_mut();
    }
}

/// The dataset `dataset` of the file `path`, as the calls that name one take them.
///
/// # Safety
/// Each must be NULL or point to a NUL-terminated string.
pub unsafe fn dataset_arg<'a>(
    path: *const c_char,
    dataset: *const c_char,
) -> Result<(&'a Path, &'a str)> {
    // A binding's refusal is this call's failure (its collective check then shares it).
    if let Some(refused) = REFUSALS.with(|r| r.borrow_mut().1.take()) {
        return Err(refused);
    }
    Ok((
        Path::new(str_arg(path, "path")?),
        str_arg(dataset, "dataset")?,
    ))
}

/// An array's element type and rank, checked before any array of `ndim` values is read.
pub fn array_arg(dtype: h5tile_dtype, ndim: usize) -> Result<(Dtype, usize)> {
    Ok((Dtype::parse(dtype)?, ndim_arg(ndim)?))
}

/// One tile, given as its `ndim` offsets and `ndim` extents.
///
/// # Safety
/// Each must be NULL or point to `ndim` values.
pub unsafe fn tile_arg(ndim: usize, offset: *const u64, shape: *const u64) -> Result<Tile> {
    Ok(Tile::new(
        slice_arg(offset, ndim, "tile_offset")?.to_vec(),
        slice_arg(shape, ndim, "tile_shape")?.to_vec(),
    ))
}

/// Tile `k`'s buffer `ptr` as the logic below the boundary takes it: the slice of the tile's
/// bytes in host memory, or device memory routed by `gds` (`gds=on` without a usable cuFile
/// fails here, before anything is written).
///
/// # Safety
/// `ptr` must be NULL or hold `tile.volume()` elements of `dtype`.
pub unsafe fn tile_buffer<'a>(
    ptr: *const c_void,
    tile: &Tile,
    k: usize,
    dtype: Dtype,
    gds: Gds,
) -> Result<Buffer<'a>> {
    let Some(bytes) = tile.bytes(dtype.size()) else {
        let why = format!("tile {k} {tile} is too large to address");
        return fail(H5TILE_ERR_INVALID_ARGUMENT, why);
    };
    if bytes == 0 {
        return Ok(Buffer::Host(&[]));
    }
    if ptr.is_null() {
        let why = format!("buffer of non-empty tile {k} {tile} is NULL");
        return fail(H5TILE_ERR_INVALID_ARGUMENT, why);
    }
    Ok(match device::route(ptr, gds)? {
        Route::Host => Buffer::Host(std::slice::from_raw_parts(ptr.cast(), bytes)),
        Route::Device(ptr, gds) => Buffer::Device(ptr, gds),
    })
}

/// The buffer `ptr` that `tile` is read into, as `tile_buffer` makes a write's (device memory
/// routed by `gds`).
///
/// # Safety
/// `ptr` must be NULL or have room for `tile.volume()` elements of `dtype`.
pub unsafe fn read_buffer<'a>(
    ptr: *mut c_void,
    tile: &Tile,
    dtype: Dtype,
    gds: Gds,
) -> Result<BufferMut<'a>> {
    let Some(bytes) = tile.bytes(dtype.size()) else {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!("tile {tile} is too large to address"),
        );
    };
    if bytes == 0 {
        return Ok(BufferMut::Host(&mut []));
    }
    if ptr.is_null() {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!("buffer for tile {tile} is NULL"),
        );
    }
    Ok(match device::route(ptr, gds)? {
        Route::Host => BufferMut::Host(std::slice::from_raw_parts_mut(ptr.cast(), bytes)),
        Route::Device(dst, gds) => BufferMut::Device(dst, gds),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        unsafe { CStr::from_ptr(last_error_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn errors_panics_and_success_map_to_status_and_message() {
        assert_eq!(
            run(|| fail(H5TILE_ERR_SHAPE, "gap at [0:1]")),
            H5TILE_ERR_SHAPE
        );
        assert_eq!(last(), "gap at [0:1]");
        assert_eq!(run(|| panic!("boom")), H5TILE_ERR_PANIC);
        assert!(last().contains("boom"), "{}", last());
        assert_eq!(run(|| Ok(())), H5TILE_OK);
        assert_eq!(last(), "");
    }

    #[test]
    fn null_and_bad_arguments_are_invalid_argument() {
        unsafe {
            assert_eq!(
                str_arg(std::ptr::null(), "path").unwrap_err().status,
                H5TILE_ERR_INVALID_ARGUMENT
            );
            assert_eq!(str_arg(c"ok".as_ptr(), "path").unwrap(), "ok");
            let bad = [0xffu8, 0];
            assert_eq!(
                str_arg(bad.as_ptr() as *const c_char, "path")
                    .unwrap_err()
                    .status,
                H5TILE_ERR_INVALID_ARGUMENT
            );
            assert_eq!(
                slice_arg::<u64>(std::ptr::null(), 2, "shape")
                    .unwrap_err()
                    .status,
                H5TILE_ERR_INVALID_ARGUMENT
            );
            assert!(slice_arg::<u64>(std::ptr::null(), 0, "shape")
                .unwrap()
                .is_empty());
            assert!(out_arg::<u64>(std::ptr::null_mut(), "ndim").is_err());
        }
        assert!(ndim_arg(0).is_err() && ndim_arg(33).is_err() && ndim_arg(32).is_ok());
    }
}
