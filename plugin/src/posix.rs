//! A file as HDF5's sec2 driver handles it: `pread`/`pwrite` looping over short transfers and
//! `EINTR`, zeros for reads past the end of the file, the end of address space (EOA) and of
//! file (EOF) tracked, the file extended or cut to the EOA on truncate, and `flock` locks.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// How a file is opened, from HDF5's `H5F_ACC_*` flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenMode {
    pub write: bool,
    pub create: bool,
    pub truncate: bool,
    pub exclusive: bool,
}

pub struct PosixFile {
    fd: OwnedFd,
    pub eoa: u64,
    pub eof: u64,
    pub device: u64,
    pub inode: u64,
}

impl PosixFile {
    pub fn open(name: &str, mode: OpenMode) -> io::Result<PosixFile> {
        let path = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let mut flags = if mode.write {
            libc::O_RDWR
        } else {
            libc::O_RDONLY
        } | libc::O_CLOEXEC;
        if mode.truncate {
            flags |= libc::O_TRUNC;
        }
        if mode.create {
            flags |= libc::O_CREAT;
        }
        if mode.exclusive {
            flags |= libc::O_EXCL;
        }
        let fd = unsafe { libc::open(path.as_ptr(), flags, 0o666 as libc::c_uint) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PosixFile {
            fd,
            eoa: 0,
            eof: st.st_size as u64,
            device: st.st_dev,
            inode: st.st_ino,
        })
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Fills `buf` from `addr`; bytes past the end of the file read as zero.
    pub fn read_at(&self, addr: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut done = 0usize;
        while done < buf.len() {
            let rest = &mut buf[done..];
            let n = unsafe {
                libc::pread(
                    self.raw_fd(),
                    rest.as_mut_ptr().cast(),
                    rest.len(),
                    (addr + done as u64) as libc::off_t,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                // End of file: the rest of the request is zeros.
                rest.fill(0);
                break;
            }
            done += n as usize;
        }
        Ok(())
    }

    /// Writes all of `buf` at `addr`, extending the file as needed.
    pub fn write_at(&mut self, addr: u64, buf: &[u8]) -> io::Result<()> {
        let mut done = 0usize;
        while done < buf.len() {
            let rest = &buf[done..];
            let n = unsafe {
                libc::pwrite(
                    self.raw_fd(),
                    rest.as_ptr().cast(),
                    rest.len(),
                    (addr + done as u64) as libc::off_t,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "write returned 0 bytes",
                ));
            }
            done += n as usize;
        }
        self.eof = self.eof.max(addr + buf.len() as u64);
        Ok(())
    }

    /// Makes the file exactly EOA bytes long (HDF5 calls this on flush and close).
    pub fn truncate_to_eoa(&mut self) -> io::Result<()> {
        if self.eoa != self.eof {
            if unsafe { libc::ftruncate(self.raw_fd(), self.eoa as libc::off_t) } < 0 {
                return Err(io::Error::last_os_error());
            }
            self.eof = self.eoa;
        }
        Ok(())
    }

    /// A non-blocking shared (read) or exclusive (write) lock. With
    /// `HDF5_USE_FILE_LOCKING=BEST_EFFORT`, file systems without locks are tolerated.
    pub fn lock(&self, exclusive: bool) -> io::Result<()> {
        let op = if exclusive {
            libc::LOCK_EX
        } else {
            libc::LOCK_SH
        };
        self.flock(op | libc::LOCK_NB)
    }

    pub fn unlock(&self) -> io::Result<()> {
        self.flock(libc::LOCK_UN)
    }

    fn flock(&self, op: i32) -> io::Result<()> {
        if unsafe { libc::flock(self.raw_fd(), op) } < 0 {
            let e = io::Error::last_os_error();
            let best_effort = std::env::var("HDF5_USE_FILE_LOCKING")
                .is_ok_and(|v| v.eq_ignore_ascii_case("BEST_EFFORT"));
            if !(best_effort && e.raw_os_error() == Some(libc::ENOSYS)) {
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(path: &std::path::Path) -> PosixFile {
        let mode = OpenMode {
            write: true,
            create: true,
            truncate: true,
            exclusive: false,
        };
        PosixFile::open(path.to_str().unwrap(), mode).unwrap()
    }

    #[test]
    fn writes_read_back_and_reads_past_the_end_are_zero() {
        let d = tempfile::tempdir().unwrap();
        let mut f = create(&d.path().join("f"));
        f.write_at(10, b"hello").unwrap();
        assert_eq!(f.eof, 15);
        let mut buf = [0xffu8; 20];
        f.read_at(8, &mut buf).unwrap();
        assert_eq!(&buf[..7], b"\0\0hello");
        assert!(buf[7..].iter().all(|&b| b == 0), "past EOF reads as zeros");
    }

    #[test]
    fn truncate_sets_the_file_size_to_the_eoa() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let mut f = create(&path);
        f.write_at(0, &[1u8; 100]).unwrap();
        f.eoa = 40;
        f.truncate_to_eoa().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 40);
        f.eoa = 4096;
        f.truncate_to_eoa().unwrap();
        assert_eq!(
            (std::fs::metadata(&path).unwrap().len(), f.eof),
            (4096, 4096)
        );
    }

    #[test]
    fn open_follows_the_hdf5_flags() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let name = path.to_str().unwrap();
        assert_eq!(
            PosixFile::open(name, OpenMode::default())
                .err()
                .unwrap()
                .kind(),
            io::ErrorKind::NotFound
        );
        drop(create(&path));
        let excl = OpenMode {
            write: true,
            create: true,
            exclusive: true,
            truncate: false,
        };
        assert_eq!(
            PosixFile::open(name, excl).err().unwrap().kind(),
            io::ErrorKind::AlreadyExists
        );
        let ro = PosixFile::open(name, OpenMode::default()).unwrap();
        assert!(
            unsafe { libc::write(ro.raw_fd(), b"x".as_ptr().cast(), 1) } < 0,
            "read-only"
        );
    }

    #[test]
    fn an_exclusive_lock_excludes_a_second_one() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let a = create(&path);
        let b = PosixFile::open(path.to_str().unwrap(), OpenMode::default()).unwrap();
        a.lock(true).unwrap();
        assert!(b.lock(false).is_err());
        a.unlock().unwrap();
        b.lock(false).unwrap();
    }
}
