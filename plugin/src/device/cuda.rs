//! The few CUDA driver calls the device paths make, through cudarc's dynamically loaded
//! bindings. libcuda is never loaded by h5tile on its own initiative: a process that has not
//! loaded it holds no device memory, so every buffer is host memory there.

use cudarc::driver::sys as cu;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Whether libcuda is already loaded in this process (asked of the loader's list of loaded
/// objects: no file is opened, nothing is loaded). Asked for every raw transfer, so the list
/// is walked again only once the loader has loaded something since the last walk.
pub fn in_process() -> bool {
    static SEEN: AtomicBool = AtomicBool::new(false);
    static WALKED_AT: AtomicU64 = AtomicU64::new(u64::MAX);
    if SEEN.load(Ordering::Relaxed) {
        return true;
    }
    let loads = crate::host::loads_so_far();
    if WALKED_AT.load(Ordering::Relaxed) == loads {
        return false;
    }
    let loaded = !crate::host::loaded_objects(|file| file.starts_with("libcuda.so")).is_empty();
    match loaded {
        true => SEEN.store(true, Ordering::Relaxed),
        false => WALKED_AT.store(loads, Ordering::Relaxed),
    }
    loaded
}

/// Loads libcuda (when `gds=on` asks for cuFile before any device buffer was seen) and
/// initialises the driver.
pub fn load() -> Result<(), String> {
    let present = std::panic::catch_unwind(|| unsafe { cu::is_culib_present() }).unwrap_or(false);
    if !present {
        return Err("the CUDA driver library (libcuda.so) is not installed".into());
    }
    check("cuInit", unsafe { cu::cuInit(0) })
}

/// A failed driver call as a message naming the call.
pub fn check(call: &str, result: cu::CUresult) -> Result<(), String> {
    if result == cu::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("{call} failed: {result:?}"))
    }
}

/// Device memory, with the context it belongs to (current on every thread touching it).
#[derive(Clone, Copy, Debug)]
pub struct DevicePtr {
    pub addr: u64,
    pub context: cu::CUcontext,
}

unsafe impl Send for DevicePtr {}
unsafe impl Sync for DevicePtr {}

impl DevicePtr {
    pub fn offset(self, bytes: usize) -> DevicePtr {
        DevicePtr {
            addr: self.addr + bytes as u64,
            ..self
        }
    }

    /// Makes this memory's context current on the calling thread until the guard is dropped,
    /// when the thread's own context comes back: a caller's thread is never left on another.
    pub fn bind(self) -> Result<Bound, String> {
        bind(self.context)
    }

    /// Sets `len` bytes to zero and waits for it.
    pub fn zero(self, len: usize) -> Result<(), String> {
        if len == 0 {
            return Ok(());
        }
        let _bound = self.bind()?;
        check("cuMemsetD8", unsafe {
            cu::cuMemsetD8_v2(self.addr, 0, len)
        })?;
        check("cuCtxSynchronize", unsafe { cu::cuCtxSynchronize() })
    }
}

/// A context pushed on this thread's stack, popped on drop.
pub struct Bound(());

fn bind(context: cu::CUcontext) -> Result<Bound, String> {
    check("cuCtxPushCurrent", unsafe {
        cu::cuCtxPushCurrent_v2(context)
    })?;
    Ok(Bound(()))
}

impl Drop for Bound {
    fn drop(&mut self) {
        let mut popped: cu::CUcontext = std::ptr::null_mut();
        unsafe { cu::cuCtxPopCurrent_v2(&mut popped) };
    }
}

/// Copies `src` from host memory into device memory `dst`, waiting for it.
pub fn copy_to_device(dst: DevicePtr, src: &[u8]) -> Result<(), String> {
    let _bound = dst.bind()?;
    check("cuMemcpyHtoD", unsafe {
        cu::cuMemcpyHtoD_v2(dst.addr, src.as_ptr() as *const c_void, src.len())
    })
}

/// Copies `dst.len()` bytes of device memory `src` into host memory `dst`, waiting for it.
pub fn copy_to_host(dst: &mut [u8], src: DevicePtr) -> Result<(), String> {
    let _bound = src.bind()?;
    check("cuMemcpyDtoH", unsafe {
        cu::cuMemcpyDtoH_v2(dst.as_mut_ptr() as *mut c_void, src.addr, dst.len())
    })
}

/// `Some(device memory)` when CUDA says `ptr` is device memory; None for host memory
/// (pageable, pinned or managed, which the CPU can touch), and whenever CUDA is not loaded
/// or cannot tell.
pub fn device_memory(ptr: *const c_void) -> Option<DevicePtr> {
    if ptr.is_null() || !in_process() {
        return None;
    }
    let addr = ptr as u64;
    let attribute = |what: cu::CUpointer_attribute, out: *mut c_void| unsafe {
        cu::cuPointerGetAttribute(out, what, addr) == cu::CUresult::CUDA_SUCCESS
    };
    let found = std::panic::catch_unwind(|| {
        let mut kind: u32 = 0;
        let mut managed: u32 = 0;
        let mut context: cu::CUcontext = std::ptr::null_mut();
        let mut ordinal: i32 = -1;
        use cu::CUpointer_attribute::*;
        let device = attribute(
            CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            &mut kind as *mut u32 as *mut c_void,
        ) && kind == cu::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32;
        if !device
            || !attribute(
                CU_POINTER_ATTRIBUTE_IS_MANAGED,
                &mut managed as *mut u32 as *mut c_void,
            )
            || managed != 0
        {
            return None;
        }
        let own = attribute(
            CU_POINTER_ATTRIBUTE_CONTEXT,
            &mut context as *mut _ as *mut c_void,
        );
        if !own || context.is_null() {
            // Memory from stream-ordered pools and the virtual memory API belongs to no
            // context: any context of its device reaches it, the primary one included.
            if !attribute(
                CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                &mut ordinal as *mut i32 as *mut c_void,
            ) {
                return None;
            }
            context = primary_context(ordinal)?;
        }
        Some(context as usize)
    });
    found.ok().flatten().map(|context| DevicePtr {
        addr,
        context: context as cu::CUcontext,
    })
}

/// The primary context of device `ordinal`, retained once for the life of the process.
fn primary_context(ordinal: i32) -> Option<cu::CUcontext> {
    if ordinal < 0 {
        return None;
    }
    static RETAINED: std::sync::Mutex<Vec<(i32, usize)>> = std::sync::Mutex::new(Vec::new());
    let mut retained = RETAINED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(&(_, context)) = retained.iter().find(|(o, _)| *o == ordinal) {
        return Some(context as cu::CUcontext);
    }
    let mut device: cu::CUdevice = 0;
    let mut context: cu::CUcontext = std::ptr::null_mut();
    let ok = unsafe {
        cu::cuDeviceGet(&mut device, ordinal) == cu::CUresult::CUDA_SUCCESS
            && cu::cuDevicePrimaryCtxRetain(&mut context, device) == cu::CUresult::CUDA_SUCCESS
    };
    if !ok || context.is_null() {
        return None;
    }
    retained.push((ordinal, context as usize));
    Some(context)
}

/// Page-locked host memory, so copies to and from the device run asynchronously; made and
/// freed with its context current.
pub struct Pinned {
    ptr: *mut u8,
    len: usize,
    context: cu::CUcontext,
}

unsafe impl Send for Pinned {}

impl Pinned {
    pub fn new(context: cu::CUcontext, len: usize) -> Result<Pinned, String> {
        let _bound = bind(context)?;
        let mut ptr: *mut c_void = std::ptr::null_mut();
        check("cuMemHostAlloc", unsafe {
            cu::cuMemHostAlloc(&mut ptr, len, cu::CU_MEMHOSTALLOC_PORTABLE)
        })?;
        Ok(Pinned {
            ptr: ptr as *mut u8,
            len,
            context,
        })
    }

    pub fn bytes(&mut self, len: usize) -> &mut [u8] {
        assert!(len <= self.len, "staging piece larger than its buffer");
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let _bound = bind(self.context);
        unsafe {
            cu::cuMemFreeHost(self.ptr as *mut c_void);
        }
    }
}

/// A stream with one event per staging buffer, on the device memory's context (current
/// whenever the stream is used or destroyed).
pub struct Stream {
    stream: cu::CUstream,
    events: [cu::CUevent; 2],
    context: cu::CUcontext,
}

unsafe impl Send for Stream {}

impl Stream {
    pub fn new(context: cu::CUcontext) -> Result<Stream, String> {
        let _bound = bind(context)?;
        let mut stream: cu::CUstream = std::ptr::null_mut();
        check("cuStreamCreate", unsafe {
            cu::cuStreamCreate(
                &mut stream,
                cu::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
            )
        })?;
        let mut s = Stream {
            stream,
            events: [std::ptr::null_mut(); 2],
            context,
        };
        for e in &mut s.events {
            check("cuEventCreate", unsafe {
                cu::cuEventCreate(e, cu::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32)
            })?;
        }
        Ok(s)
    }

    pub fn host_to_device(
        &mut self,
        slot: usize,
        dst: DevicePtr,
        src: *const u8,
        len: usize,
    ) -> Result<(), String> {
        check("cuMemcpyHtoDAsync", unsafe {
            cu::cuMemcpyHtoDAsync_v2(dst.addr, src as *const c_void, len, self.stream)
        })?;
        self.record(slot)
    }

    pub fn device_to_host(
        &mut self,
        slot: usize,
        dst: *mut u8,
        src: DevicePtr,
        len: usize,
    ) -> Result<(), String> {
        check("cuMemcpyDtoHAsync", unsafe {
            cu::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src.addr, len, self.stream)
        })?;
        self.record(slot)
    }

    fn record(&mut self, slot: usize) -> Result<(), String> {
        check("cuEventRecord", unsafe {
            cu::cuEventRecord(self.events[slot], self.stream)
        })
    }

    pub fn wait(&mut self, slot: usize) -> Result<(), String> {
        check("cuEventSynchronize", unsafe {
            cu::cuEventSynchronize(self.events[slot])
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _bound = bind(self.context);
        unsafe {
            for e in self.events {
                if !e.is_null() {
                    cu::cuEventDestroy_v2(e);
                }
            }
            cu::cuStreamDestroy_v2(self.stream);
        }
    }
}
