//! Device buffers: recognising a CUDA device pointer (through the h5tile_gds driver's
//! detection, which loads nothing on a machine without CUDA) and deciding how its bytes move:
//! `H5TILE_GDS=auto|on|off` in the environment, overridden by the options' `gds` field.

use crate::status::*;
/// Logging as the driver logs (`H5TILE_LOG`), so h5tile and its driver speak with one voice.
pub use h5tile_gds::log;
pub use h5tile_gds::{device_memory, DevicePtr};
/// The pieces of memory a write moves, shown as they are written (tile checksums): device
/// memory on the compat path, host memory written as raw data on one thread.
pub use h5tile_gds::{watching_host_writes, watching_staged_writes, Watch};
pub use h5tile_gds::{Config, Gds};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::OnceLock;

/// Where a caller's buffer lives, and so how its bytes move.
#[derive(Clone, Copy, Debug)]
pub enum Route {
    /// Host memory: HDF5 and POSIX I/O as for any buffer.
    Host,
    /// Device memory, through the h5tile_gds driver in this mode.
    Device(DevicePtr, Gds),
}

impl Route {
    /// The h5tile_gds configuration for files this route touches: raw data in 8 MiB pieces
    /// over this rank's share of the node's cores, their writeback started at once.
    pub fn driver_config(&self) -> Config {
        let gds = match self {
            Route::Host => Gds::Auto,
            Route::Device(_, gds) => *gds,
        };
        Config {
            gds,
            block: 8 << 20,
            threads: io_threads(),
            writeback: true,
            ..Config::default()
        }
    }

    /// The configuration for writing a tile's bytes, synced afterwards or not (`sync`). Without
    /// a sync to prepare for, no writeback is started, and host bytes are copied into the page
    /// cache by one thread: local file systems (ext4, xfs) copy into one file under its inode
    /// lock, so a second thread only spins on that lock. Measured here, 1 GiB into one file
    /// took 0.19-0.33 s from one thread and 0.20-0.85 s (0.59 typical) from two.
    pub fn write_config(&self, sync: bool) -> Config {
        let config = self.driver_config();
        match (sync, self) {
            (true, _) => config,
            (false, Route::Host) => Config {
                writeback: false,
                threads: 1,
                ..config
            },
            // Device bytes are staged through pinned buffers: the threads overlap those copies.
            (false, Route::Device(..)) => Config {
                writeback: false,
                ..config
            },
        }
    }
}

/// Threads a rank uses for one large read or write: `H5TILE_THREADS` when set, else the CPUs this
/// process may run on shared among the ranks of its node (as the MPI launcher reports them),
/// at most 8. Worked out once per process (asking for the CPUs reads cgroup files).
pub fn io_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    let override_ = THREADS_HERE.with(|t| t.get());
    override_.unwrap_or_else(|| *THREADS.get_or_init(threads_from_environment))
}

thread_local! {
    /// `with_io_threads`' thread count, on the thread running its work.
    static THREADS_HERE: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Runs `work` with `io_threads()` answering `threads` on this thread: a write in the
/// background leaving the caller a core (`leaving_a_core`), or a test taking a machine's shape.
pub fn with_io_threads<R>(threads: usize, work: impl FnOnce() -> R) -> R {
    let before = THREADS_HERE.with(|t| t.replace(Some(threads)));
    let result = work();
    THREADS_HERE.with(|t| t.set(before));
    result
}

/// Runs `work` (a write in the background) on one thread fewer than `io_threads`, at least one:
/// the caller goes on computing meanwhile, on a core of its own. With one rank on two cores, a
/// background write's summing thread beside its writing one took a third of the solver's
/// speed; summed as written, on one thread, the write leaves the solver its core.
pub fn leaving_a_core<R>(work: impl FnOnce() -> R) -> R {
    with_io_threads(io_threads().saturating_sub(1).max(1), work)
}

fn threads_from_environment() -> usize {
    if let Some(n) = std::env::var("H5TILE_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n >= 1)
    {
        return n.min(256);
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cpus / local_ranks()).clamp(1, 8)
}

/// The ranks of this node, as the MPI launcher reports them (1 where it does not).
pub fn local_ranks() -> usize {
    [
        "OMPI_COMM_WORLD_LOCAL_SIZE",
        "MPI_LOCALNRANKS",
        "SLURM_NTASKS_PER_NODE",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.trim().parse::<usize>().ok())
    .filter(|&n| n >= 1)
    .unwrap_or(1)
}

/// A caller's tile buffer, made once at the C boundary (`ffi`): host memory as the slice of the
/// tile's bytes, or device memory with the mode its bytes move in. Below the boundary it is
/// plain, safe data.
#[derive(Clone, Copy, Debug)]
pub enum Buffer<'a> {
    Host(&'a [u8]),
    Device(DevicePtr, Gds),
}

impl Buffer<'_> {
    /// How its bytes move.
    pub fn route(&self) -> Route {
        match self {
            Buffer::Host(_) => Route::Host,
            Buffer::Device(ptr, gds) => Route::Device(*ptr, *gds),
        }
    }
}

/// A caller's buffer to read a tile into, made once at the C boundary as `Buffer` is.
#[derive(Debug)]
pub enum BufferMut<'a> {
    Host(&'a mut [u8]),
    Device(DevicePtr, Gds),
}

impl BufferMut<'_> {
    /// The same buffer, lent again (a read that starts over fills it again).
    pub fn reborrow(&mut self) -> BufferMut<'_> {
        match self {
            BufferMut::Host(bytes) => BufferMut::Host(bytes),
            BufferMut::Device(ptr, gds) => BufferMut::Device(*ptr, *gds),
        }
    }
}

/// The bytes of `values` as a buffer to read into (the tests' way to hand over their arrays).
#[cfg(any(test, feature = "internals"))]
pub fn host_bytes_mut<T: Copy>(values: &mut [T]) -> BufferMut<'_> {
    BufferMut::Host(bytes_mut(values))
}

/// The bytes of `values` (plain numbers, for the tests).
#[cfg(any(test, feature = "internals"))]
pub fn bytes_mut<T: Copy>(values: &mut [T]) -> &mut [u8] {
    let len = std::mem::size_of_val(values);
    // Plain numbers: any bytes written make valid values, and the slice lives as `values`.
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), len) }
}

/// The bytes of `values` as a host buffer (the tests' way to hand over their arrays).
#[cfg(any(test, feature = "internals"))]
pub fn host_bytes<T: Copy>(values: &[T]) -> Buffer<'_> {
    let len = std::mem::size_of_val(values);
    // Plain numbers: every byte is initialised and the slice lives as long as `values`.
    Buffer::Host(unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), len) })
}

/// The route for `buf` in `mode`: host memory always takes the host route; device memory takes
/// the device route, and with `on` only where cuFile can be used (`H5TILE_ERR_CUDA` saying why
/// otherwise, before any file is touched).
pub fn route(buf: *const c_void, mode: Gds) -> Result<Route> {
    decide(h5tile_gds::device_memory(buf), mode, || {
        h5tile_gds::cufile_usable()
    })
}

/// The routing table itself, with cuFile's usability asked of `cufile` only when it matters.
fn decide(
    device: Option<DevicePtr>,
    mode: Gds,
    cufile: impl FnOnce() -> std::result::Result<(), String>,
) -> Result<Route> {
    match (device, mode) {
        (None, _) => Ok(Route::Host),
        (Some(ptr), Gds::On) => match cufile() {
            Ok(()) => Ok(Route::Device(ptr, Gds::On)),
            Err(why) => fail(
                H5TILE_ERR_CUDA,
                format!("gds=on asks for cuFile (GPUDirect Storage), which cannot be used: {why}"),
            ),
        },
        (Some(ptr), mode) => Ok(Route::Device(ptr, mode)),
    }
}

/// A file h5tile moves device memory to or from by itself (tile bytes at known offsets),
/// through the driver's device paths: cuFile, or the bounded compat path.
pub struct DeviceFile {
    file: h5tile_gds::PosixFile,
    io: h5tile_gds::DeviceIo,
    config: h5tile_gds::Config,
    name: String,
}

impl DeviceFile {
    /// Opens `path` to read into device memory.
    pub fn open(path: &std::path::Path, route: &Route) -> Result<DeviceFile> {
        DeviceFile::open_with(path, false, route.driver_config())
    }

    /// Opens `path` to write device memory into, to be synced afterwards or not (`sync`).
    pub fn open_to_write(path: &std::path::Path, route: &Route, sync: bool) -> Result<DeviceFile> {
        DeviceFile::open_with(path, true, route.write_config(sync))
    }

    fn open_with(path: &std::path::Path, write: bool, config: Config) -> Result<DeviceFile> {
        let name = path.to_string_lossy().into_owned();
        let mode = h5tile_gds::OpenMode {
            write,
            ..Default::default()
        };
        let file = h5tile_gds::PosixFile::open(&name, mode)
            .map_err(|e| Error::io("cannot open", path, &e))?;
        let io = h5tile_gds::DeviceIo::new(&name, write);
        Ok(DeviceFile {
            file,
            io,
            config,
            name,
        })
    }

    /// Reads `len` bytes at `at` into device memory `dst` (zeros past the end of the file).
    pub fn read(&mut self, at: u64, dst: DevicePtr, len: usize) -> Result<()> {
        self.io
            .read(&self.file, &self.config, at, dst, len)
            .map_err(|e| self.failed("read", at, len, e))
    }

    /// Writes `len` bytes of device memory `src` at `at`.
    pub fn write(&mut self, at: u64, src: DevicePtr, len: usize) -> Result<()> {
        self.io
            .write(&mut self.file, &self.config, at, src, len)
            .map_err(|e| self.failed("write", at, len, e))
    }

    fn failed(&self, what: &str, at: u64, len: usize, why: String) -> Error {
        Error::new(
            H5TILE_ERR_CUDA,
            format!(
                "cannot {what} {len} bytes of device memory at {at} of '{}': {why}",
                self.name
            ),
        )
    }
}

/// Copies host bytes into device memory (a batched chunk, a staged slab), waiting for it.
pub fn copy_to_device(dst: DevicePtr, src: &[u8]) -> Result<()> {
    h5tile_gds::copy_to_device(dst, src).map_err(|e| {
        Error::new(
            H5TILE_ERR_CUDA,
            format!("cannot copy to device memory: {e}"),
        )
    })
}

/// Copies device memory into host bytes (a chunk to compress), waiting for it.
pub fn copy_to_host(dst: &mut [u8], src: DevicePtr) -> Result<()> {
    h5tile_gds::copy_to_host(dst, src).map_err(|e| {
        Error::new(
            H5TILE_ERR_CUDA,
            format!("cannot copy from device memory: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_device() -> DevicePtr {
        DevicePtr {
            addr: 0x7000_0000_0000,
            context: std::ptr::null_mut(),
        }
    }

    #[test]
    fn the_routing_table() {
        let usable = || Ok(());
        let unusable = || Err("libcufile.so is not installed".to_string());
        for mode in [Gds::Auto, Gds::On, Gds::Off] {
            // Host memory never needs cuFile, whatever the mode.
            let r = decide(None, mode, || panic!("cuFile asked about for host memory"));
            assert!(matches!(r, Ok(Route::Host)), "{mode:?}");
        }
        let d = Some(fake_device());
        assert!(matches!(
            decide(d, Gds::Auto, unusable),
            Ok(Route::Device(_, Gds::Auto))
        ));
        assert!(matches!(
            decide(d, Gds::Off, unusable),
            Ok(Route::Device(_, Gds::Off))
        ));
        assert!(matches!(
            decide(d, Gds::On, usable),
            Ok(Route::Device(_, Gds::On))
        ));
        let e = decide(d, Gds::On, unusable).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_CUDA);
        assert!(
            e.message.contains("libcufile.so is not installed"),
            "{}",
            e.message
        );
    }

    #[test]
    fn each_route_configures_the_driver_accordingly() {
        let host = Route::Host.driver_config();
        assert_eq!((host.block, host.writeback), (8 << 20, true), "{host}");
        assert_eq!(host.threads, io_threads());
        assert_eq!(host.gds, Gds::Auto);
        let d = fake_device();
        assert_eq!(Route::Device(d, Gds::On).driver_config().gds, Gds::On);
        assert_eq!(Route::Device(d, Gds::Off).driver_config().gds, Gds::Off);
        assert_eq!(Route::Host.write_config(true), host);
        let unsynced = Route::Host.write_config(false);
        assert_eq!((unsynced.writeback, unsynced.threads), (false, 1));
        let device = Route::Device(d, Gds::On).write_config(false);
        assert_eq!((device.writeback, device.threads), (false, io_threads()));
    }

    #[test]
    fn host_buffers_route_as_host_memory_without_loading_cuda() {
        let data = [0u8; 64];
        for mode in [Gds::Auto, Gds::On, Gds::Off] {
            assert!(matches!(route(data.as_ptr().cast(), mode), Ok(Route::Host)));
        }
        if !h5tile_gds::cuda_in_process() {
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
            assert!(!maps.contains("libcuda") && !maps.contains("libcufile"));
        }
    }
}
