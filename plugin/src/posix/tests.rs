//! The file's routes against plain I/O, and what reaches the disk when.

use super::*;
use crate::config::{Config, ALIGN};

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
fn small_writes_start_their_writeback_in_batches_of_whole_pages() {
    let d = tempfile::tempdir().unwrap();
    let mut f = create(&d.path().join("f"));
    let config = Config {
        writeback: true,
        ..Config::default()
    };
    // 30000 chunks of 100 bytes, one after the other: about 2.9 MiB, each chunk's
    // writeback batched whether it was held or not.
    let chunk: Vec<u8> = (0..100u8).collect();
    for i in 0..30000u64 {
        f.raw_end = u64::MAX;
        f.write_raw(i * 100, &chunk, &config).unwrap();
    }
    // One writeback a MiB, not one a chunk.
    assert_eq!(f.stats.writebacks, 2);
    assert_eq!(f.unsubmitted.map(|(lo, _)| lo % ALIGN as u64), Some(0));
    let mut back = vec![0u8; 3_000_000];
    f.read_raw(0, &mut back, &config).unwrap();
    assert!(back.chunks(100).all(|c| c == &chunk[..]));
    // Held, the same chunks start one writeback when they are written together.
    for i in 0..30000u64 {
        f.write_raw(3_000_000 + i * 100, &chunk, &config).unwrap();
    }
    assert_eq!(f.stats.writebacks, 2);
    f.write_held().unwrap();
    assert_eq!(f.stats.writebacks, 3);
    // A large write starts one writeback a piece.
    let big = vec![7u8; 4 << 20];
    let config = Config {
        block: 1 << 20,
        ..config
    };
    f.write_raw(8 << 20, &big, &config).unwrap();
    assert_eq!(f.stats.writebacks, 3 + 4);
}

#[test]
fn small_writes_in_a_row_reach_the_file_together_on_8_mib_boundaries() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("f");
    let mut f = create(&path);
    let config = Config::default();
    let on_disk = || std::fs::metadata(&path).unwrap().len();
    // Chunks of 300 KB from byte 4096, as a compressed tile's: the first is written at
    // once (nothing before it to continue), the rest are held until their bytes reach
    // 8 MiB, then written up to there; the remainder stays held.
    let chunk = |i: u64| vec![(i % 251) as u8; 300_000];
    let at = |i: u64| 4096 + i * 300_000;
    f.write_raw(at(0), &chunk(0), &config).unwrap();
    assert_eq!(on_disk(), at(1));
    let mut i = 1;
    while at(i + 1) <= 8 << 20 {
        f.write_raw(at(i), &chunk(i), &config).unwrap();
        i += 1;
    }
    assert_eq!(on_disk(), at(1), "held below the first 8 MiB boundary");
    f.write_raw(at(i), &chunk(i), &config).unwrap();
    assert_eq!(
        on_disk(),
        8 << 20,
        "written up to the boundary, the rest held"
    );
    assert_eq!(f.eof, at(i + 1), "the EOF counts what is held");
    // A write elsewhere (metadata) writes what is held first; so does a read.
    f.write_at(0, b"head").unwrap();
    assert_eq!(on_disk(), at(i + 1));
    for j in i + 1..i + 4 {
        f.write_raw(at(j), &chunk(j), &config).unwrap();
    }
    let mut back = vec![0u8; (at(i + 4) - at(0)) as usize];
    f.read_raw(at(0), &mut back, &config).unwrap();
    for j in 0..i + 4 {
        let k = (at(j) - at(0)) as usize;
        assert!(back[k..k + 300_000] == chunk(j)[..], "chunk {j}");
    }
    // Dropping the file (HDF5's close writes them first, and says if it fails) writes
    // them too.
    for j in i + 4..i + 6 {
        f.write_raw(at(j), &chunk(j), &config).unwrap();
    }
    assert_eq!(on_disk(), at(i + 4));
    drop(f);
    assert_eq!(on_disk(), at(i + 6));
}

/// Chunks each starting on a 4 KiB boundary, as in a compressed subfile: held together
/// across the padding between them only where the file was told the gaps are padding
/// (elsewhere a gap may be someone else's bytes), the padding written as zeros.
#[test]
fn aligned_small_writes_are_held_across_padding_only_where_gaps_are_padding() {
    let d = tempfile::tempdir().unwrap();
    let config = Config::default();
    let chunk = |i: u64| vec![(i % 251) as u8 + 1; 300_000];
    let at = |i: u64| 4096 + i * 303_104; // 300 000 bytes rounded up to 4 KiB
    for padded in [false, true] {
        let path = d.path().join(format!("f{padded}"));
        std::fs::write(&path, vec![0xeeu8; 4096 * 1000]).unwrap();
        let mut f = PosixFile::open(
            path.to_str().unwrap(),
            OpenMode {
                write: true,
                ..Default::default()
            },
        )
        .unwrap();
        if padded {
            f.gaps_are_padding();
        }
        for i in 0..10 {
            f.write_raw(at(i), &chunk(i), &config).unwrap();
        }
        let written = |f: &PosixFile| f.held.bytes.is_empty();
        match padded {
            true => assert!(!written(&f), "held across the padding"),
            false => assert!(written(&f), "a gap that is not padding ends what is held"),
        }
        f.write_held().unwrap();
        drop(f);
        let back = std::fs::read(&path).unwrap();
        for i in 0..10 {
            let a = at(i) as usize;
            assert!(back[a..a + 300_000] == chunk(i)[..], "chunk {i}");
        }
        for i in 0..9 {
            let gap = &back[at(i) as usize + 300_000..at(i + 1) as usize];
            match padded {
                true => assert!(gap.iter().all(|&b| b == 0), "padding {i} zeroed"),
                false => assert!(gap.iter().all(|&b| b == 0xee), "gap {i} untouched"),
            }
        }
    }
}

/// The flags of the extents holding the `len` bytes at `start` of `fd`'s file (FIEMAP).
fn extent_flags(fd: i32, start: u64, len: u64) -> Vec<u32> {
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Extent {
        logical: u64,
        physical: u64,
        length: u64,
        reserved64: [u64; 2],
        flags: u32,
        reserved: [u32; 3],
    }
    #[repr(C)]
    #[derive(Default)]
    struct Fiemap {
        start: u64,
        length: u64,
        flags: u32,
        mapped: u32,
        count: u32,
        reserved: u32,
        extents: [Extent; 32],
    }
    let mut map = Fiemap {
        start,
        length: len,
        count: 32,
        ..Default::default()
    };
    let got = unsafe { libc::ioctl(fd, FS_IOC_FIEMAP, &mut map as *mut Fiemap) };
    assert_eq!(got, 0, "{}", io::Error::last_os_error());
    map.extents[..map.mapped as usize]
        .iter()
        .map(|e| e.flags)
        .collect()
}

/// On ext4 and XFS, a large unsynced write finds its blocks allocated (`fallocate`: its
/// extents are unwritten, not delayed), a small one does not, and both read back.
#[test]
fn large_unsynced_writes_have_their_blocks_allocated_first_where_the_system_can() {
    const DELALLOC: u32 = 0x4;
    const UNWRITTEN: u32 = 0x800;
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("f");
    let mut f = create(&path);
    if !f.allocates {
        eprintln!("skipped: {} is not on ext4 or XFS", d.path().display());
        return;
    }
    let config = Config::default();
    assert!(!config.writeback, "unsynced");
    let big: Vec<u8> = (0..4u32 << 20).map(|i| (i % 253) as u8).collect();
    f.write_raw(0, &big, &config).unwrap();
    let flags = extent_flags(f.raw_fd(), 0, big.len() as u64);
    assert!(!flags.is_empty());
    assert!(
        flags
            .iter()
            .all(|&x| x & UNWRITTEN != 0 && x & DELALLOC == 0),
        "{flags:x?}"
    );
    let small = vec![9u8; 64 << 10];
    let at = 64 << 20;
    f.write_raw(at, &small, &config).unwrap();
    let flags = extent_flags(f.raw_fd(), at, small.len() as u64);
    assert!(flags.iter().all(|&x| x & UNWRITTEN == 0), "{flags:x?}");
    let mut back = vec![0u8; big.len()];
    f.read_at(0, &mut back).unwrap();
    assert!(back == big);
    let mut back = vec![0u8; small.len()];
    f.read_at(at, &mut back).unwrap();
    assert!(back == small);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        at + small.len() as u64
    );
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
fn direct_and_parallel_raw_io_match_plain_io_byte_for_byte() {
    let d = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mode = OpenMode {
        write: true,
        create: true,
        truncate: true,
        exclusive: false,
    };
    let parallel = Config {
        block: 4096,
        threads: 4,
        ..Config::default()
    };
    let mut images = Vec::new();
    for (k, direct) in [false, true].into_iter().enumerate() {
        let path = d.path().join(format!("f{k}"));
        let mut f = PosixFile::open_with(path.to_str().unwrap(), mode, direct, 64 << 10).unwrap();
        // Unaligned pieces, overlapping rewrites, a hole, writes past the end.
        f.write_raw(10, &data[..70_000], &parallel).unwrap();
        // The route taken shows in the counts: O_DIRECT pieces, or transfers over workers.
        assert_eq!(
            (f.stats.direct_pieces > 0, f.stats.split_transfers > 0),
            (direct, !direct)
        );
        f.write_raw(5000, &data[100..9000], &parallel).unwrap();
        f.write_raw(250_001, &data[..33_333], &parallel).unwrap();
        f.eoa = 283_334;
        let mut back = vec![1u8; 283_400];
        f.read_raw(0, &mut back, &parallel).unwrap();
        f.truncate_to_eoa().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 283_334);
        images.push(back);
    }
    assert_eq!(images[0], images[1]);
    let image = &images[0];
    assert_eq!(&image[5000..13_900], &data[100..9000]);
    assert_eq!(&image[10..5000], &data[..4990]);
    assert!(
        image[70_010..250_001].iter().all(|&b| b == 0),
        "the hole reads as zeros"
    );
    assert!(
        image[283_334..].iter().all(|&b| b == 0),
        "past the end reads as zeros"
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
