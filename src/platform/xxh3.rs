//! XXH3-64 with seed 0, the per-block checksum: from the system's xxhash library
//! (`libxxhash.so.0`, Debian's `libxxhash0`) where it has its run-time CPU dispatch, which
//! uses AVX-512 where the CPU has it, else from the twox-hash crate (AVX2 at best). Both give
//! the same values; the library is only faster. Measured on a 2-core AMD EPYC with AVX-512,
//! 1 MiB blocks in cache: 75-83 GB/s against twox-hash's 47 GB/s. A verified read copies out
//! of the page cache at 13-17 GB/s a core there and then sums each block while it is in cache,
//! so the sum's speed sets what checking costs.
//!
//! The library is loaded at run time, not linked: h5tile links as before where it is missing,
//! and it is used only if it gives twox-hash's values on test inputs when loaded.

use std::ffi::c_void;
use std::sync::OnceLock;

type OneShot = unsafe extern "C" fn(*const c_void, usize) -> u64;
type Create = unsafe extern "C" fn() -> *mut c_void;
type Free = unsafe extern "C" fn(*mut c_void) -> i32;
type Reset = unsafe extern "C" fn(*mut c_void) -> i32;
type Update = unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> i32;
type Digest = unsafe extern "C" fn(*const c_void) -> u64;

/// The library's entry points h5tile uses (xxhash 0.8's stable ABI).
#[derive(Clone, Copy)]
struct Library {
    oneshot: OneShot,
    create: Create,
    free: Free,
    reset: Reset,
    update: Update,
    digest: Digest,
}

/// The system library, once per process; None where it is missing, lacks the dispatching
/// entry points, or gives other values than twox-hash.
fn library() -> Option<&'static Library> {
    static LIBRARY: OnceLock<Option<Library>> = OnceLock::new();
    LIBRARY.get_or_init(load).as_ref()
}

fn load() -> Option<Library> {
    let handle = unsafe {
        libc::dlopen(
            c"libxxhash.so.0".as_ptr(),
            libc::RTLD_NOW | libc::RTLD_LOCAL,
        )
    };
    if handle.is_null() {
        return None;
    }
    let symbol = |name: &std::ffi::CStr| {
        let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
        (!p.is_null()).then_some(p)
    };
    // SAFETY: each symbol has this signature in xxhash.h and xxh_x86dispatch.h (0.8.x).
    let library = (|| unsafe {
        Some(Library {
            oneshot: std::mem::transmute::<*mut c_void, OneShot>(symbol(c"XXH3_64bits_dispatch")?),
            create: std::mem::transmute::<*mut c_void, Create>(symbol(c"XXH3_createState")?),
            free: std::mem::transmute::<*mut c_void, Free>(symbol(c"XXH3_freeState")?),
            reset: std::mem::transmute::<*mut c_void, Reset>(symbol(c"XXH3_64bits_reset")?),
            update: std::mem::transmute::<*mut c_void, Update>(symbol(
                c"XXH3_64bits_update_dispatch",
            )?),
            digest: std::mem::transmute::<*mut c_void, Digest>(symbol(c"XXH3_64bits_digest")?),
        })
    })()
    .filter(agrees_with_twox);
    if library.is_none() {
        // Not used: a build without the dispatch, or one that sums otherwise.
        unsafe { libc::dlclose(handle) };
    }
    library
}

/// Whether `library` gives twox-hash's values, whole and in pieces, on inputs that take each
/// of XXH3's paths (up to 16, 128 and 240 bytes, one stripe, several blocks). Run once, under
/// `library`'s lock, before any other thread can call the library: its first calls also fill
/// its dispatch table, which it does not guard against threads.
fn agrees_with_twox(library: &Library) -> bool {
    let input: Vec<u8> = (0u32..70_000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    [0, 1, 3, 16, 17, 128, 129, 240, 241, 1024, 4099, 70_000]
        .iter()
        .all(|&n| {
            let bytes = &input[..n];
            let expected = twox_hash::XxHash3_64::oneshot(bytes);
            let whole = unsafe { (library.oneshot)(bytes.as_ptr().cast(), n) };
            let mut stream = Stream::with(Some(*library));
            bytes.chunks(1000).for_each(|piece| stream.add(piece));
            whole == expected && stream.finish() == expected
        })
}

/// XXH3-64 of `bytes`.
pub fn oneshot(bytes: &[u8]) -> u64 {
    match library() {
        Some(library) => unsafe { (library.oneshot)(bytes.as_ptr().cast(), bytes.len()) },
        None => twox_hash::XxHash3_64::oneshot(bytes),
    }
}

/// XXH3-64 of bytes given in pieces.
pub struct Stream(State);

enum State {
    Library(Library, *mut c_void),
    Twox(Box<twox_hash::XxHash3_64>),
}

// The library's state is plain memory owned by this value alone.
unsafe impl Send for Stream {}

impl Stream {
    pub fn new() -> Stream {
        Stream::with(library().copied())
    }

    fn with(library: Option<Library>) -> Stream {
        let state = library.map(|l| (l, unsafe { (l.create)() }));
        Stream(match state {
            // Reset only fails for a null state: where its allocation failed, twox-hash sums.
            Some((l, state)) if !state.is_null() && unsafe { (l.reset)(state) } == 0 => {
                State::Library(l, state)
            }
            _ => State::Twox(Box::new(twox_hash::XxHash3_64::with_seed(0))),
        })
    }

    pub fn add(&mut self, piece: &[u8]) {
        match &mut self.0 {
            State::Library(l, state) => {
                // Fails only for a null state or input, neither of which reaches here.
                let failed = unsafe { (l.update)(*state, piece.as_ptr().cast(), piece.len()) };
                debug_assert_eq!(failed, 0);
            }
            State::Twox(hasher) => std::hash::Hasher::write(hasher.as_mut(), piece),
        }
    }

    /// The sum of the pieces so far.
    pub fn finish(&self) -> u64 {
        match &self.0 {
            State::Library(l, state) => unsafe { (l.digest)(*state) },
            State::Twox(hasher) => std::hash::Hasher::finish(hasher.as_ref()),
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let State::Library(l, state) = self.0 {
            unsafe { (l.free)(state) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_and_twox_hash_agree_whole_and_in_pieces() {
        let input: Vec<u8> = (0u64..3 << 20)
            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57) as u8)
            .collect();
        for n in [0, 5, 200, 239, 1 << 20, (1 << 20) + 7, 3 << 20] {
            let expected = twox_hash::XxHash3_64::oneshot(&input[..n]);
            assert_eq!(oneshot(&input[..n]), expected, "{n} bytes whole");
            let mut stream = Stream::new();
            input[..n].chunks(65_536 + 3).for_each(|p| stream.add(p));
            assert_eq!(stream.finish(), expected, "{n} bytes in pieces");
        }
    }

    #[test]
    fn the_system_library_is_used_where_it_is_installed() {
        // Debian's libxxhash0 has the dispatching entry points; `make setup` installs it.
        if std::path::Path::new("/usr/lib/x86_64-linux-gnu/libxxhash.so.0").exists() {
            assert!(
                library().is_some(),
                "libxxhash.so.0 is installed but not used"
            );
        }
    }
}
