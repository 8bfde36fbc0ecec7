//! The transfer callbacks: reads and writes, single and vector, of host or device memory.

use super::*;
use crate::abi::*;
use crate::device::{self};
use crate::error::{DriverError, Kind};
use crate::log;
use std::ffi::c_void;

pub(super) unsafe extern "C" fn read<const H: usize>(
    f: *mut H5FD_t,
    kind: H5FD_mem_t,
    _dxpl: hid_t,
    addr: haddr_t,
    size: usize,
    buf: *mut c_void,
) -> herr_t {
    guard(H, "h5tile_gds_read", -1, || {
        transfer(f, kind, addr, size, buf, false)
    })
}

pub(super) unsafe extern "C" fn write<const H: usize>(
    f: *mut H5FD_t,
    kind: H5FD_mem_t,
    _dxpl: hid_t,
    addr: haddr_t,
    size: usize,
    buf: *const c_void,
) -> herr_t {
    guard(H, "h5tile_gds_write", -1, || {
        transfer(f, kind, addr, size, buf as *mut c_void, true)
    })
}

/// Moves `size` bytes between `addr` of the file and `buf` (`write`: to the file): device
/// memory by the file's device path, host memory by POSIX I/O.
unsafe fn transfer(
    f: *mut H5FD_t,
    kind: H5FD_mem_t,
    addr: haddr_t,
    size: usize,
    buf: *mut c_void,
    write: bool,
) -> Outcome<herr_t> {
    let f = file_mut(f)?;
    check_range(f, addr, size, write)?;
    let op = if write { "write" } else { "read" };
    if size == 0 {
        return Ok(0);
    }
    if buf.is_null() {
        return Err(format!("{op} buffer is NULL for {size} bytes at {addr}").into());
    }
    if let Some(mem) = raw_device_memory(kind, buf) {
        return f.device_transfer(write, addr, mem, size);
    }
    let moved = match write {
        true => f.write_bytes(
            kind,
            addr,
            std::slice::from_raw_parts(buf as *const u8, size),
        ),
        false => f.read_bytes(
            kind,
            addr,
            std::slice::from_raw_parts_mut(buf as *mut u8, size),
        ),
    };
    moved.map_err(|e| {
        let what = format!("cannot {op} {size} bytes at {addr} of");
        failed_transfer(DriverError::os(&what, &f.name, &e))
    })?;
    Ok(0)
}

/// Device memory behind a raw-data buffer (metadata buffers are always HDF5's own host memory).
pub(super) fn raw_device_memory(kind: H5FD_mem_t, buf: *const c_void) -> Option<device::DevicePtr> {
    match kind {
        H5FD_MEM_DRAW => device::device_memory(buf),
        _ => None,
    }
}

impl GdsFile {
    /// Moves `size` bytes between `addr` of the file and device memory `mem` (`write`: to
    /// the file), by the file's device path.
    fn device_transfer(
        &mut self,
        write: bool,
        addr: u64,
        mem: device::DevicePtr,
        size: usize,
    ) -> Outcome<herr_t> {
        let GdsFile {
            name,
            file,
            config,
            device,
            ..
        } = self;
        file.write_held().map_err(|e| held_failed(name, &e))?;
        let (op, moved) = match write {
            false => ("read", device.read(file, config, addr, mem, size)),
            true => ("write", device.write(file, config, addr, mem, size)),
        };
        moved.map(|()| 0).map_err(|e| {
            let message =
                format!("{e}: cannot {op} {size} bytes of device memory at {addr} of '{name}'");
            failed_transfer(DriverError::new(Kind::TransferFailed, message))
        })
    }

    /// Raw data takes the configured route (O_DIRECT, or pieces over workers); metadata is
    /// read and written plainly.
    fn read_bytes(&mut self, kind: H5FD_mem_t, addr: u64, buf: &mut [u8]) -> std::io::Result<()> {
        match kind {
            H5FD_MEM_DRAW => self.file.read_raw(addr, buf, &self.config),
            _ => {
                self.file.write_held()?;
                self.file.read_at(addr, buf)
            }
        }
    }

    fn write_bytes(&mut self, kind: H5FD_mem_t, addr: u64, buf: &[u8]) -> std::io::Result<()> {
        match kind {
            H5FD_MEM_DRAW => self.file.write_raw(addr, buf, &self.config),
            _ => self.file.write_at(addr, buf),
        }
    }
}

/// A failed read or write is logged at `error` (HDF5 reports it too, but only to its caller).
pub(super) fn failed_transfer(e: DriverError) -> DriverError {
    log::error(&e.message);
    e
}

/// Entry `i` of a vector argument: HDF5 ends the list early by repeating the last entry
/// (a size of 0, or a type of `H5FD_MEM_NOLIST`, means "as the previous one from here on").
pub(super) fn vector_entry<T: Copy + PartialEq>(values: &[T], i: usize, stop: T) -> T {
    let end = values
        .iter()
        .position(|&v| v == stop)
        .unwrap_or(values.len());
    values[i.min(end.saturating_sub(1))]
}

/// A vector request: the `count` entries of `types`, `addrs`, `sizes` and `bufs` moved one by
/// one (`write`: to the file), stopping at the first failure (which the entry's own callback
/// has reported).
#[allow(clippy::too_many_arguments)]
unsafe fn each_entry<const H: usize>(
    f: *mut H5FD_t,
    dxpl: hid_t,
    count: u32,
    types: *const H5FD_mem_t,
    addrs: *const haddr_t,
    sizes: *const usize,
    bufs: *const *mut c_void,
    write: bool,
) -> Outcome<herr_t> {
    let n = count as usize;
    if n == 0 {
        return Ok(0);
    }
    if types.is_null() || addrs.is_null() || sizes.is_null() || bufs.is_null() {
        return Err(format!("a vector request of {n} entries has a NULL list").into());
    }
    let types = std::slice::from_raw_parts(types, n);
    let (addrs, sizes) = (
        std::slice::from_raw_parts(addrs, n),
        std::slice::from_raw_parts(sizes, n),
    );
    for (i, &addr) in addrs.iter().enumerate() {
        let (t, size) = (
            vector_entry(types, i, H5FD_MEM_NOLIST),
            vector_entry(sizes, i, 0),
        );
        let buf = *bufs.add(i);
        let done = match write {
            true => self::write::<H>(f, t, dxpl, addr, size, buf),
            false => read::<H>(f, t, dxpl, addr, size, buf),
        };
        if done < 0 {
            return Ok(-1);
        }
    }
    Ok(0)
}

pub(super) unsafe extern "C" fn read_vector<const H: usize>(
    f: *mut H5FD_t,
    dxpl: hid_t,
    count: u32,
    types: *mut H5FD_mem_t,
    addrs: *mut haddr_t,
    sizes: *mut usize,
    bufs: *mut *mut c_void,
) -> herr_t {
    guard(H, "h5tile_gds_read_vector", -1, || {
        each_entry::<H>(f, dxpl, count, types, addrs, sizes, bufs, false)
    })
}

pub(super) unsafe extern "C" fn write_vector<const H: usize>(
    f: *mut H5FD_t,
    dxpl: hid_t,
    count: u32,
    types: *mut H5FD_mem_t,
    addrs: *mut haddr_t,
    sizes: *mut usize,
    bufs: *mut *const c_void,
) -> herr_t {
    let bufs = bufs as *const *mut c_void;
    guard(H, "h5tile_gds_write_vector", -1, || {
        each_entry::<H>(f, dxpl, count, types, addrs, sizes, bufs, true)
    })
}
