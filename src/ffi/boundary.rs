//! What every exported function shares: catching panics, the thread-local last-error message,
//! and turning raw C arguments into checked Rust values (NULL → `H5TILE_ERR_INVALID_ARGUMENT`),
//! tile buffers included (host or device memory).

use crate::dtype::{h5tile_dtype, Dtype};
use crate::geometry::tile::Tile;
use crate::platform::device::{self, Buffer, BufferMut, Gds, Route};
use crate::status::*;
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// The operating system's error number behind the last failure (0: none).
    static LAST_ERRNO: Cell<i32> = const { Cell::new(0) };
    /// The refusal a language binding set for this thread's next call (`h5tile_refuse_next`),
    /// and that of the call running now.
    static REFUSALS: RefCell<(Option<Error>, Option<Error>)> = const { RefCell::new((None, None)) };
}

/// What an exported function returns after a panic in it (the panic's message is then this
/// thread's last error, with no error number): a status, `H5TILE_ERR_PANIC`; a string,
/// `PANICKED` (never NULL, and valid for ever, as the strings they return otherwise); an error
/// number, 0 (a panic has no operating-system cause); nothing, nothing.
pub trait OnPanic {
    fn on_panic() -> Self;
}

impl OnPanic for h5tile_status {
    fn on_panic() -> Self {
        H5TILE_ERR_PANIC
    }
}

impl OnPanic for () {
    fn on_panic() {}
}

impl OnPanic for c_int {
    fn on_panic() -> Self {
        0
    }
}

impl OnPanic for *const c_char {
    fn on_panic() -> Self {
        PANICKED.as_ptr()
    }
}

/// The text a function returning a string returns after a panic.
pub const PANICKED: &CStr = c"internal error (please report): a panic in h5tile";

/// The panic boundary of the exported function `name`, around its whole body: a panic in
/// `body` becomes `T::on_panic()`, and its message this thread's last error. Every exported
/// function runs in one, so no panic unwinds into C (where it would abort the process).
pub fn guard<T: OnPanic>(name: &'static str, body: impl FnOnce() -> T) -> T {
    let caught = catch_panic(|| {
        injected_panic(name);
        Ok(body())
    });
    caught.unwrap_or_else(|e| {
        set_last_error(&e.message);
        LAST_ERRNO.with(|e| e.set(0));
        T::on_panic()
    })
}

/// Runs the body of the exported function `name` in its boundary: its error becomes the
/// returned status and the thread's last-error message; a panic becomes `H5TILE_ERR_PANIC`.
/// Success clears the message. A refusal set for this call (`refuse_next`) is this call's
/// alone.
pub fn run(name: &'static str, body: impl FnOnce() -> Result<()>) -> h5tile_status {
    guard(name, || status_of(body))
}

/// What `run` does inside the boundary (the `_f` calls' communicator check shares it).
pub fn status_of(body: impl FnOnce() -> Result<()>) -> h5tile_status {
    REFUSALS.with(|r| {
        let mut r = r.borrow_mut();
        r.1 = r.0.take();
    });
    let (status, message, errno) = match catch_panic(body) {
        Ok(()) => (H5TILE_OK, String::new(), 0),
        Err(e) => (e.status, e.message, e.errno),
    };
    REFUSALS.with(|r| r.borrow_mut().1 = None);
    set_last_error(&message);
    LAST_ERRNO.with(|e| e.set(errno));
    status
}

/// The operating system's error number behind this thread's last failure (0: none).
pub fn last_errno() -> i32 {
    LAST_ERRNO.with(Cell::get)
}

#[cfg(test)]
thread_local! {
    /// The exported function whose boundary panics at its next entry on this thread (tests).
    static PANIC_IN: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Panics where a test asked for a panic in `name` (`PANIC_IN`), once; nothing at all outside
/// the unit tests.
#[cfg(test)]
fn injected_panic(name: &str) {
    if PANIC_IN.with(|p| p.get()) == Some(name) {
        PANIC_IN.with(|p| p.set(None));
        panic!("injected panic in {name}");
    }
}

#[cfg(not(test))]
#[inline(always)]
fn injected_panic(_: &str) {}

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
    refusal()?;
    Ok((
        Path::new(str_arg(path, "path")?),
        str_arg(dataset, "dataset")?,
    ))
}

/// A binding's refusal (`refuse_next`) is this call's failure (its collective check, or the
/// call that returns its noted failures, then shares it).
pub fn refusal() -> Result<()> {
    match REFUSALS.with(|r| r.borrow_mut().1.take()) {
        Some(refused) => Err(refused),
        None => Ok(()),
    }
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
            run("test", || fail(H5TILE_ERR_SHAPE, "gap at [0:1]")),
            H5TILE_ERR_SHAPE
        );
        assert_eq!(last(), "gap at [0:1]");
        assert_eq!(run("test", || panic!("boom")), H5TILE_ERR_PANIC);
        assert!(last().contains("boom"), "{}", last());
        assert_eq!(run("test", || Ok(())), H5TILE_OK);
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

    /// What a C caller sees of an exported function's call.
    enum Seen {
        Status(h5tile_status),
        /// A status, and whether the handle the call gives back (its last argument) is NULL.
        Handle(h5tile_status, bool),
        Text(*const c_char),
        Errno(c_int),
        Nothing,
    }

    type Call = Box<dyn Fn() -> Seen>;

    /// `f(args…)` as an entry of `calls`, named after the function it calls: what it returns
    /// seen as `Status`, `Text` or `Nothing`; or, `Handle`, with a handle out-parameter added
    /// last, dangling until the call clears it.
    macro_rules! call {
        (Handle, $f:ident($($arg:expr),*)) => {
            (stringify!($f), Box::new(move || {
                let mut out = std::ptr::NonNull::dangling().as_ptr();
                let status = unsafe { $f($($arg,)* &mut out) };
                Seen::Handle(status, out.is_null())
            }) as Call)
        };
        (Nothing, $f:ident($($arg:expr),*)) => {
            (stringify!($f), Box::new(move || {
                unsafe { $f($($arg),*) };
                Seen::Nothing
            }) as Call)
        };
        ($seen:ident, $f:ident($($arg:expr),*)) => {
            (stringify!($f), Box::new(move || Seen::$seen(unsafe { $f($($arg),*) })) as Call)
        };
    }

    /// Every exported function, called with placeholder arguments: NULL pointers, no
    /// communicator (the injected panic comes before any is read).
    #[allow(unused_unsafe)] // The library-wide functions are safe to call.
    fn calls() -> Vec<(&'static str, Call)> {
        use super::super::*;
        use crate::ffi::asynchronous::h5tile_test;
        use crate::ffi::batches::*;
        use crate::ffi::fortran::*;
        use std::ptr::{null, null_mut as n};
        let comm = unsafe { mpi::ffi::RSMPI_COMM_NULL };
        let f = 0 as MPI_Fint;
        let (p, b, v, bufs) = (null(), null(), null(), null());
        let (w, r, so) = (null(), null(), null());
        let (ck, it, req) = (n(), n(), n());
        let dt = H5TILE_FLOAT64 as h5tile_dtype;
        vec![
            call!(Status, h5tile_write(comm, p, p, dt, 1, b, b, b, v, w)),
            call!(
                Status,
                h5tile_write_tiles(comm, p, p, dt, 1, b, 0, b, b, bufs, w)
            ),
            call!(Handle, h5tile_write_async(comm, p, p, dt, 1, b, b, b, v, w)),
            call!(
                Handle,
                h5tile_write_tiles_async(comm, p, p, dt, 1, b, 0, b, b, bufs, w)
            ),
            call!(Status, h5tile_wait(req)),
            call!(Status, h5tile_test(req, n())),
            call!(Status, h5tile_fence(comm)),
            call!(Status, h5tile_read(comm, p, p, dt, 1, b, b, n(), r)),
            call!(Status, h5tile_inspect(p, p, n(), n(), n())),
            call!(Status, h5tile_partition(1, 0, 1, b, n(), n())),
            call!(Handle, h5tile_checkpoint_begin(comm, p, w)),
            call!(Status, h5tile_checkpoint_add(ck, p, dt, 1, b, b, b, v)),
            call!(Status, h5tile_checkpoint_attr(ck, p, p, dt, 0, v)),
            call!(Status, h5tile_checkpoint_attr_string(ck, p, p, p)),
            call!(Status, h5tile_checkpoint_commit(ck)),
            call!(Handle, h5tile_checkpoint_commit_async(ck)),
            call!(Status, h5tile_checkpoint_fail(ck, p)),
            call!(Nothing, h5tile_checkpoint_abort(ck)),
            call!(Status, h5tile_attr_read(comm, p, p, p, dt, 0, n())),
            call!(Handle, h5tile_series_begin(comm, p, 0, so, w)),
            call!(Status, h5tile_series_latest(comm, p, 0, n(), n(), 0)),
            call!(Handle, h5tile_batches_open(comm, p, p, 1, b, r)),
            call!(Handle, h5tile_batches_open_f(f, p, p, 1, b, r)),
            call!(Status, h5tile_batches_next(it, n(), 0, n(), n(), n())),
            call!(Status, h5tile_batches_next_view(it, n(), n(), n(), n())),
            call!(Status, h5tile_batches_info(it, n(), n(), n())),
            call!(Nothing, h5tile_batches_free(it)),
            call!(Status, h5tile_write_f(f, p, p, dt, 1, b, b, b, v, w)),
            call!(
                Status,
                h5tile_write_tiles_f(f, p, p, dt, 1, b, 0, b, b, bufs, w)
            ),
            call!(Handle, h5tile_write_async_f(f, p, p, dt, 1, b, b, b, v, w)),
            call!(Status, h5tile_fence_f(f)),
            call!(Status, h5tile_read_f(f, p, p, dt, 1, b, b, n(), r)),
            call!(
                Handle,
                h5tile_write_tiles_async_f(f, p, p, dt, 1, b, 0, b, b, bufs, w)
            ),
            call!(Handle, h5tile_checkpoint_begin_f(f, p, w)),
            call!(Handle, h5tile_series_begin_f(f, p, 0, so, w)),
            call!(Status, h5tile_series_latest_f(f, p, 0, n(), n(), 0)),
            call!(Status, h5tile_attr_read_f(f, p, p, p, dt, 0, n())),
            call!(Handle, h5tile_txn_begin(p, w)),
            call!(Handle, h5tile_txn_resume(null(), 0)),
            call!(Status, h5tile_txn_declare(n(), p, dt, 1, b)),
            call!(Status, h5tile_txn_attr(n(), p, p, dt, 0, v)),
            call!(Status, h5tile_txn_attr_string(n(), p, p, p)),
            call!(Status, h5tile_txn_token(n(), n(), n())),
            call!(
                Status,
                h5tile_txn_write_tile(null(), 0, p, 1, b, b, v, n(), n())
            ),
            call!(Nothing, h5tile_txn_record_free(n())),
            call!(Status, h5tile_txn_commit(n(), 0, null(), null())),
            call!(Status, h5tile_txn_abort(n())),
            call!(Nothing, h5tile_txn_free(n())),
            call!(Status, h5tile_tiles(p, p, 0, n(), n(), n())),
            call!(Status, h5tile_write_options_init(n(), 0)),
            call!(Status, h5tile_read_options_init(n(), 0)),
            call!(Status, h5tile_series_options_init(n(), 0)),
            call!(Text, h5tile_version()),
            call!(Status, h5tile_refuse_next(0, p)),
            call!(Text, h5tile_last_error()),
            call!(Text, h5tile_series_skipped()),
            call!(Status, h5tile_reserve_staging(n(), 0, 0)),
            call!(Status, h5tile_restart_begin(comm, p, r, n())),
            call!(Status, h5tile_restart_begin_f(f, p, r, n())),
            call!(Status, h5tile_restart_field(n(), p, dt, 1, b, b, n())),
            call!(Status, h5tile_restart_attr(n(), p, p, dt, 1, n())),
            call!(Status, h5tile_restart_read(n())),
            call!(Nothing, h5tile_restart_abort(n())),
            call!(Errno, h5tile_last_errno()),
            call!(Text, h5tile_status_name(0)),
        ]
    }

    /// The functions the C ABI exports: every `#[no_mangle]` function of `src/ffi/`.
    fn exported() -> std::collections::BTreeSet<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ffi");
        let mut names = std::collections::BTreeSet::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            let (code, _) = crate::layering::production(&text);
            names.extend(crate::layering::exported_functions(&code));
        }
        names
    }

    /// A panic anywhere in an exported function stays on this side of the C boundary: each
    /// one, made to panic at the entry of its boundary, returns its failure value (a status
    /// `H5TILE_ERR_PANIC`, a string `PANICKED`, an error number 0) with the panic's message as
    /// the last error and no error number, and leaves its handle out-parameter NULL. A function exported without a boundary (or
    /// without an entry here) fails this test.
    #[test]
    fn every_exported_function_turns_a_panic_into_its_failure_value() {
        let calls = calls();
        let named: std::collections::BTreeSet<String> =
            calls.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(named.len(), calls.len(), "a function is named twice");
        let exported = exported();
        assert!(exported.len() >= 44, "{exported:?}");
        let missing: Vec<_> = exported.difference(&named).collect();
        assert!(
            missing.is_empty(),
            "exported, but not called here: {missing:?}"
        );
        let gone: Vec<_> = named.difference(&exported).collect();
        assert!(gone.is_empty(), "called here, but not exported: {gone:?}");
        for (name, call) in calls {
            set_last_error("");
            LAST_ERRNO.with(|e| e.set(libc::EACCES));
            PANIC_IN.with(|p| p.set(Some(name)));
            let seen = call();
            let never_entered = PANIC_IN.with(|p| p.take()).is_some();
            assert!(
                !never_entered,
                "{name} does not run in its boundary, guard(\"{name}\", …)"
            );
            match seen {
                Seen::Status(s) => assert_eq!(s, H5TILE_ERR_PANIC, "{name}"),
                Seen::Handle(s, null) => {
                    assert_eq!(s, H5TILE_ERR_PANIC, "{name}");
                    assert!(null, "{name} leaves its handle set");
                }
                Seen::Text(t) => assert_eq!(unsafe { CStr::from_ptr(t) }, PANICKED, "{name}"),
                Seen::Errno(e) => assert_eq!(e, 0, "{name}"),
                Seen::Nothing => {}
            }
            let want = format!("internal error (please report): injected panic in {name}");
            assert_eq!(last(), want, "{name}");
            assert_eq!(last_errno(), 0, "{name}: a panic has no error number");
        }
    }
}
