//! Device memory: recognising it, and moving it between a file and the GPU, by cuFile
//! (GPUDirect Storage) or, where cuFile cannot be used, through two pinned staging buffers.
//! The compat path shows the pieces it writes to the thread's `watch`, for checksums. Nothing
//! here loads a CUDA library unless CUDA is already in the process or `gds=on` asks for it.

pub mod cuda;
pub mod cufile;
pub mod staging;

pub use cuda::{device_memory, DevicePtr};

use crate::config::{Config, Gds};
use crate::error::{DriverError, Kind};
use crate::log;
use crate::posix::PosixFile;

/// How one open file moves device memory, chosen the first time it sees some.
enum DevicePath {
    Undecided,
    Gds(cufile::Handle),
    Compat(Option<Compat>),
}

/// The compat path's pinned buffers and stream, made on the context of the memory they
/// serve (and made again for memory of another context).
struct Compat {
    context: usize,
    slots: [cuda::Pinned; 2],
    stream: cuda::Stream,
}

/// The device side of one open file.
pub struct DeviceIo {
    name: String,
    /// Opened for writing: cuFile's own descriptor is opened the same way.
    write: bool,
    path: DevicePath,
    /// The path taken was logged (once, on the first device transfer).
    logged: bool,
}

/// The refusal of `gds=on` for file `name`, pushed under the driver's `GdsRefused` code.
pub fn refusal(name: &str, why: impl std::fmt::Display) -> DriverError {
    DriverError::new(
        Kind::GdsRefused,
        format!("gds=on, but cuFile cannot be used: {why} (opening '{name}')"),
    )
}

/// The path device memory takes, as the log names it.
pub fn path_name(gds: bool) -> &'static str {
    if gds {
        "gds"
    } else {
        "compat"
    }
}

impl DeviceIo {
    pub fn new(name: &str, write: bool) -> DeviceIo {
        DeviceIo {
            name: name.to_string(),
            write,
            path: DevicePath::Undecided,
            logged: false,
        }
    }

    /// `gds=on`: registers the file with cuFile now, so an open that cannot use it fails.
    pub fn require_gds(&mut self) -> Result<(), DriverError> {
        self.path = DevicePath::Gds(register_required(&self.name, self.write)?);
        Ok(())
    }

    /// Whether this file's device memory goes through cuFile (None before any was seen).
    pub fn uses_gds(&self) -> Option<bool> {
        match self.path {
            DevicePath::Undecided => None,
            DevicePath::Gds(_) => Some(true),
            DevicePath::Compat(_) => Some(false),
        }
    }

    /// Chooses the path on the first device transfer (`on`: cuFile or an error; `auto`: cuFile
    /// where it can be used; `off`: compat) and logs it once at `info`.
    fn choose_path(&mut self, config: &Config) -> Result<(), String> {
        let name = &self.name;
        if matches!(self.path, DevicePath::Undecided) {
            self.path = match config.gds {
                Gds::Off => DevicePath::Compat(None),
                Gds::On => {
                    DevicePath::Gds(register_required(name, self.write).map_err(|e| e.message)?)
                }
                Gds::Auto => match register(name, self.write) {
                    Ok(handle) => DevicePath::Gds(handle),
                    Err(why) => {
                        // Once a process at warn (the default), every file at info: a run
                        // opens thousands of tile files, each falling back alike.
                        static SAID: std::sync::atomic::AtomicBool =
                            std::sync::atomic::AtomicBool::new(false);
                        let fallback = "device memory takes the compat path instead";
                        let line = format!("'{name}': cuFile cannot be used ({why}); {fallback}");
                        match SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                            false => log::warn(&format!(
                                "{line} (said once a process; H5TILE_LOG=info: every file)"
                            )),
                            true => log::info(&line),
                        }
                        DevicePath::Compat(None)
                    }
                },
            };
        }
        if !self.logged {
            self.logged = true;
            let gds = matches!(self.path, DevicePath::Gds(_));
            let how = if gds {
                format!("block={} threads={}", config.block, config.threads)
            } else {
                format!("two pinned buffers of {} bytes", config.bounce)
            };
            log::info(&format!(
                "'{name}': device memory path={} ({how})",
                path_name(gds)
            ));
        }
        Ok(())
    }

    /// Reads `len` bytes at `addr` of `file` into device memory `dst`; bytes past the end of
    /// the file arrive as zeros.
    pub fn read(
        &mut self,
        file: &PosixFile,
        config: &Config,
        addr: u64,
        dst: DevicePtr,
        len: usize,
    ) -> Result<(), String> {
        self.choose_path(config)?;
        match &mut self.path {
            DevicePath::Gds(handle) => in_blocks(len, config, |off, n| {
                handle.read(addr + off as u64, dst.offset(off), n)
            }),
            DevicePath::Compat(compat) => {
                let mut engine = Engine::new(compat, dst, config.bounce)?;
                staging::read_to_device(&mut engine, len, config.bounce, |off, part| {
                    file.read_at(addr + off as u64, part)
                        .map_err(|e| e.to_string())
                })
            }
            DevicePath::Undecided => unreachable!("decided above"),
        }
    }

    /// Writes `len` bytes of device memory `src` at `addr` of `file`; the compat path shows
    /// each piece to this thread's watch (`crate::watch::watching_staged_writes`).
    pub fn write(
        &mut self,
        file: &mut PosixFile,
        config: &Config,
        addr: u64,
        src: DevicePtr,
        len: usize,
    ) -> Result<(), String> {
        self.choose_path(config)?;
        match &mut self.path {
            DevicePath::Gds(handle) => {
                in_blocks(len, config, |off, n| {
                    handle.write(addr + off as u64, src.offset(off), n)
                })?;
                file.eof = file.eof.max(addr + len as u64);
                Ok(())
            }
            DevicePath::Compat(compat) => {
                let mut engine = Engine::new(compat, src, config.bounce)?;
                staging::write_from_device(&mut engine, len, config.bounce, |off, part| {
                    file.write_at(addr + off as u64, part)
                        .map_err(|e| e.to_string())?;
                    crate::watch::staged_write(src.addr + off as u64, part);
                    Ok(())
                })
            }
            DevicePath::Undecided => unreachable!("decided above"),
        }
    }
}

/// `register` where `gds=on` requires it: a failure is the refusal.
fn register_required(name: &str, write: bool) -> Result<cufile::Handle, DriverError> {
    register(name, write).map_err(|why| refusal(name, why))
}

/// Opens `name` again with O_DIRECT and registers that descriptor with cuFile.
fn register(name: &str, write: bool) -> Result<cufile::Handle, String> {
    cufile::driver()?;
    let fd = crate::posix::open_direct(name, write)
        .map_err(|e| format!("cannot open it with O_DIRECT: {e}"))?;
    cufile::Handle::register(fd)
}

/// Runs `work(offset, len)` over the `block`-sized pieces of `0..len` on up to `threads`
/// workers, each with the device memory's context current.
fn in_blocks(
    len: usize,
    config: &Config,
    work: impl Fn(usize, usize) -> Result<(), String> + Sync,
) -> Result<(), String> {
    crate::posix::in_pieces(len, config.block, config.threads, |a, b| {
        work(a, b - a).map_err(std::io::Error::other)
    })
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// The compat path's [`staging::Engine`] over pinned buffers and a CUDA stream.
struct Engine<'a> {
    compat: &'a mut Compat,
    device: DevicePtr,
    /// The memory's context stays current for the whole pipeline.
    _bound: cuda::Bound,
}

impl<'a> Engine<'a> {
    fn new(
        compat: &'a mut Option<Compat>,
        device: DevicePtr,
        bounce: usize,
    ) -> Result<Engine<'a>, String> {
        let bound = device.bind()?;
        if compat
            .as_ref()
            .is_none_or(|c| c.context != device.context as usize)
        {
            *compat = None; // the old context's buffers go first: never more than two
            *compat = Some(Compat {
                context: device.context as usize,
                slots: [
                    cuda::Pinned::new(device.context, bounce)?,
                    cuda::Pinned::new(device.context, bounce)?,
                ],
                stream: cuda::Stream::new(device.context)?,
            });
        }
        Ok(Engine {
            compat: compat.as_mut().expect("made above"),
            device,
            _bound: bound,
        })
    }
}

impl staging::Engine for Engine<'_> {
    fn slot(&mut self, slot: usize, len: usize) -> &mut [u8] {
        self.compat.slots[slot].bytes(len)
    }

    fn upload(&mut self, slot: usize, dev_off: usize, len: usize) -> Result<(), String> {
        let src = self.compat.slots[slot].bytes(len).as_ptr();
        let dst = self.device.offset(dev_off);
        self.compat.stream.host_to_device(slot, dst, src, len)
    }

    fn download(&mut self, slot: usize, dev_off: usize, len: usize) -> Result<(), String> {
        let dst = self.compat.slots[slot].bytes(len).as_mut_ptr();
        let src = self.device.offset(dev_off);
        self.compat.stream.device_to_host(slot, dst, src, len)
    }

    fn wait(&mut self, slot: usize) -> Result<(), String> {
        self.compat.stream.wait(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_memory_is_host_memory_and_nothing_of_cuda_gets_loaded() {
        let data = vec![1u8; 4096];
        let stack = [0u8; 16];
        assert!(device_memory(data.as_ptr() as *const _).is_none());
        assert!(device_memory(stack.as_ptr() as *const _).is_none());
        assert!(device_memory(std::ptr::null()).is_none());
        if !cuda::in_process() {
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
            assert!(
                !maps.contains("libcuda") && !maps.contains("libcufile"),
                "classifying host memory loaded a CUDA library"
            );
        }
    }
}
