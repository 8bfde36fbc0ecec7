//! NVIDIA cuFile (GPUDirect Storage): the driver opened once per process, a file handle
//! registered per open file, reads and writes straight between the file and device memory.

use super::cuda::{self, DevicePtr};
use cudarc::cufile::sys as cf;
use std::ffi::c_void;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::OnceLock;

fn check(call: &str, e: cf::CUfileError_t) -> Result<(), String> {
    if e.err == cf::CUfileOpError::CU_FILE_SUCCESS {
        Ok(())
    } else {
        Err(format!("{call} failed: {:?} (CUDA: {:?})", e.err, e.cu_err))
    }
}

/// Loads libcufile and opens its driver, once per process; the error says why cuFile cannot
/// be used (not installed, no nvidia-fs, unsupported system).
pub fn driver() -> Result<(), String> {
    static DRIVER: OnceLock<Result<(), String>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            let present =
                std::panic::catch_unwind(|| unsafe { cf::is_culib_present() }).unwrap_or(false);
            if !present {
                return Err("libcufile.so (GPUDirect Storage) is not installed".into());
            }
            cuda::load()?;
            std::panic::catch_unwind(|| {
                check("cuFileDriverOpen", unsafe { cf::cuFileDriverOpen() })
            })
            .unwrap_or_else(|_| Err("libcufile.so lacks cuFileDriverOpen".into()))
        })
        .clone()
}

/// An open file registered with cuFile, through a descriptor of its own opened with
/// O_DIRECT (which GPUDirect needs).
pub struct Handle {
    handle: cf::CUfileHandle_t,
    _fd: OwnedFd,
}

unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

impl Handle {
    pub fn register(fd: OwnedFd) -> Result<Handle, String> {
        driver()?;
        // A literal: the handle type enum has no zero value, so the struct cannot be zeroed.
        let mut descr = cf::CUfileDescr_t {
            type_: cf::CUfileFileHandleType::CU_FILE_HANDLE_TYPE_OPAQUE_FD,
            handle: cf::CUfileDescr_t__bindgen_ty_1 { fd: fd.as_raw_fd() },
            fs_ops: std::ptr::null(),
        };
        let mut handle: cf::CUfileHandle_t = std::ptr::null_mut();
        check("cuFileHandleRegister", unsafe {
            cf::cuFileHandleRegister(&mut handle, &mut descr)
        })?;
        Ok(Handle { handle, _fd: fd })
    }

    /// Reads `len` bytes at file offset `addr` into `dst`, looping on short reads; bytes past
    /// the end of the file are zeroed on the device.
    pub fn read(&self, addr: u64, dst: DevicePtr, len: usize) -> Result<(), String> {
        let _bound = dst.bind()?;
        let step = |left, at, done| unsafe {
            cf::cuFileRead(self.handle, dst.addr as *mut c_void, left, at, done)
        };
        whole("cuFileRead", addr, len, step, |done| {
            dst.offset(done).zero(len - done)
        })
    }

    /// Writes `len` bytes from `src` at file offset `addr`, looping on short writes.
    pub fn write(&self, addr: u64, src: DevicePtr, len: usize) -> Result<(), String> {
        let _bound = src.bind()?;
        let step = |left, at, done| unsafe {
            cf::cuFileWrite(self.handle, src.addr as *const c_void, left, at, done)
        };
        whole("cuFileWrite", addr, len, step, |done| {
            Err(format!(
                "cuFileWrite wrote nothing at {}",
                addr + done as u64
            ))
        })
    }
}

/// Repeats `step(left, file_offset, buffer_offset)` (one cuFile call for the `left` bytes
/// that have not moved yet, returning the bytes it moved) until `len` bytes from file offset
/// `addr` have moved; `nothing(done)` says what a call moving none means.
fn whole(
    call: &str,
    addr: u64,
    len: usize,
    step: impl Fn(usize, libc::off_t, libc::off_t) -> isize,
    nothing: impl FnOnce(usize) -> Result<(), String>,
) -> Result<(), String> {
    let mut done = 0;
    while done < len {
        let at = (addr + done as u64) as libc::off_t;
        match step(len - done, at, done as libc::off_t) {
            n if n < 0 => return Err(io_error(call, n, len - done, at as u64)),
            0 => return nothing(done),
            n => done += n as usize,
        }
    }
    Ok(())
}

/// cuFile returns -1 with errno set for a system error, or minus a cuFile error code.
fn io_error(call: &str, n: isize, len: usize, at: u64) -> String {
    let why = if n == -1 {
        std::io::Error::last_os_error().to_string()
    } else {
        format!("cuFile error {}", -n)
    };
    format!("{call} of {len} bytes at {at} failed: {why}")
}

impl Drop for Handle {
    fn drop(&mut self) {
        unsafe { cf::cuFileHandleDeregister(self.handle) }
    }
}
