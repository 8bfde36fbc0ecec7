//! The h5tile_gds driver takes its file-locking choice from the file-access property list, as
//! HDF5's sec2 driver does: `H5Pset_file_locking(fapl, 1, ignore_when_disabled)` decides
//! whether a file system without locks is an error. Such a file system is made for real on this
//! test's thread with a seccomp filter under which `flock` fails with ENOSYS. Its own test
//! binary with one test: the filter stays on the thread that installed it.

use h5tile::internals::hdf5::gds::file_access;
use h5tile::internals::hdf5::{cstr, File, Handle};
use h5tile::internals::status::H5TILE_ERR_IO;
use hdf5_sys::h5f::{H5Fcreate, H5F_ACC_TRUNC};
use hdf5_sys::h5p::{H5Pset_file_locking, H5P_DEFAULT};

/// From now on, `flock` on this thread (and threads it starts) fails with ENOSYS.
fn flock_is_not_implemented() -> bool {
    use libc::{sock_filter, sock_fprog};
    let stmt = |code: u16, k: u32| sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let filter = [
        // Load the system call number; flock → ENOSYS, anything else allowed.
        stmt((libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16, 0),
        sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            jt: 0,
            jf: 1,
            k: libc::SYS_flock as u32,
        },
        stmt(
            (libc::BPF_RET | libc::BPF_K) as u16,
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        ),
        stmt(
            (libc::BPF_RET | libc::BPF_K) as u16,
            libc::SECCOMP_RET_ALLOW,
        ),
    ];
    let program = sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut sock_filter,
    };
    unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &program as *const sock_fprog,
            ) == 0
    }
}

#[test]
fn a_file_system_without_locks_is_tolerated_only_where_the_property_list_says_so() {
    if std::env::var_os("HDF5_USE_FILE_LOCKING").is_some() {
        eprintln!("SKIPPED: HDF5_USE_FILE_LOCKING is set and would override the property list");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    if !flock_is_not_implemented() {
        eprintln!("SKIPPED: this machine does not let a process install a seccomp filter");
        return;
    }
    let probe = std::fs::File::create(d.path().join("probe")).unwrap();
    use std::os::fd::AsRawFd;
    assert_eq!(unsafe { libc::flock(probe.as_raw_fd(), libc::LOCK_EX) }, -1);
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::ENOSYS)
    );

    let _l = h5tile::internals::hdf5::lock();
    let create = |name: &str, ignore_when_disabled: bool| {
        let fapl = file_access("").unwrap();
        assert!(unsafe { H5Pset_file_locking(fapl.id(), 1, ignore_when_disabled as u8) } >= 0);
        let path = cstr(d.path().join(name).to_str().unwrap());
        let id = unsafe { H5Fcreate(path.as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id()) };
        File::from_id(id, || format!("cannot create '{name}'"))
    };
    // Locks asked for, a missing lock tolerated: the file opens.
    create("tolerated.h5", true).unwrap().close().unwrap();
    // Locks required: the file system's refusal is the error, with the OS reason first.
    let e = create("required.h5", false).unwrap_err();
    assert_eq!(e.status, H5TILE_ERR_IO, "{}", e.message);
    assert!(
        e.message
            .starts_with("Function not implemented: cannot lock '"),
        "{}",
        e.message
    );
}
