//! Bytes a rank must keep for a while, such as compressed chunks between encoding them and
//! learning where they go: in memory up to a budget, the rest in an unnamed temporary file in
//! a given folder (`O_TMPFILE`), so that memory stays bounded however much is kept. The OS
//! reclaims the file when it is dropped, or when the process dies.

use crate::status::{Error, Result};
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub struct Spill {
    folder: PathBuf,
    budget: usize,
    memory: Vec<u8>,
    file: Option<File>,
    len: u64,
}

impl Spill {
    /// Keeps up to `budget` bytes in memory, the rest in a temporary file in `folder`
    /// (created when first needed).
    pub fn new(folder: &Path, budget: usize) -> Spill {
        Spill {
            folder: folder.to_path_buf(),
            budget,
            memory: Vec::new(),
            file: None,
            len: 0,
        }
    }

    /// Appends `bytes`; returns where they start.
    pub fn append(&mut self, bytes: &[u8]) -> Result<u64> {
        let at = self.len;
        if self.file.is_none() && self.memory.len() + bytes.len() <= self.budget {
            self.memory.extend_from_slice(bytes);
        } else {
            let file = match &mut self.file {
                Some(file) => file,
                None => self.file.insert(unnamed_file(&self.folder)?),
            };
            let file_at = at - self.memory.len() as u64;
            file.write_all_at(bytes, file_at)
                .map_err(|e| Error::io("cannot write temporary data in", &self.folder, &e))?;
        }
        self.len += bytes.len() as u64;
        Ok(at)
    }

    /// How many bytes went to the file rather than memory.
    #[cfg(test)]
    pub fn spilled(&self) -> u64 {
        self.len - self.memory.len() as u64
    }

    /// Calls `f` with the `len` bytes kept from `at`: where they lie in memory, or read into
    /// `scratch` (grown as needed) from the file.
    pub fn with_bytes<T>(
        &self,
        at: u64,
        len: usize,
        scratch: &mut Vec<u8>,
        f: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        let end = at as usize + len;
        assert!(
            end as u64 <= self.len,
            "bytes {at}..{end} of {} kept",
            self.len
        );
        if end <= self.memory.len() {
            return f(&self.memory[at as usize..end]);
        }
        scratch.resize(len, 0);
        let (at, kept) = (at as usize, self.memory.len());
        let in_memory = kept.saturating_sub(at).min(len);
        if in_memory > 0 {
            scratch[..in_memory].copy_from_slice(&self.memory[at..at + in_memory]);
        }
        let file = self
            .file
            .as_ref()
            .expect("bytes past memory are in the file");
        let file_at = (at + in_memory - kept) as u64;
        file.read_exact_at(&mut scratch[in_memory..], file_at)
            .map_err(|e| Error::io("cannot read temporary data in", &self.folder, &e))?;
        f(scratch)
    }
}

/// An unnamed file in `folder`: `O_TMPFILE`, or where the file system has none, a named one
/// removed as soon as it is open.
fn unnamed_file(folder: &Path) -> Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).mode(0o600);
    let unnamed = options.clone().custom_flags(libc::O_TMPFILE).open(folder);
    let no_tmpfile = |e: &std::io::Error| {
        matches!(
            e.raw_os_error(),
            Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)
        )
    };
    match unnamed {
        Ok(file) => Ok(file),
        Err(e) if no_tmpfile(&e) => {
            let name = format!(".h5tile-spill.{}.{:x}", std::process::id(), nonce());
            let path = folder.join(name);
            let file = options
                .create_new(true)
                .open(&path)
                .map_err(|e| Error::io("cannot create temporary file", &path, &e))?;
            std::fs::remove_file(&path)
                .map_err(|e| Error::io("cannot remove temporary file", &path, &e))?;
            Ok(file)
        }
        Err(e) => Err(Error::io("cannot create temporary file in", folder, &e)),
    }
}

/// A number that differs between calls in one process.
fn nonce() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ NEXT.fetch_add(1, Ordering::Relaxed).rotate_left(32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
    }

    #[test]
    fn bytes_come_back_from_memory_the_file_and_across_both() {
        let d = tempfile::tempdir().unwrap();
        let mut spill = Spill::new(d.path(), 1000);
        let pieces: Vec<Vec<u8>> = [600, 300, 500, 7, 2000]
            .iter()
            .enumerate()
            .map(|(i, &n)| pattern(n, i as u8))
            .collect();
        let at: Vec<u64> = pieces.iter().map(|p| spill.append(p).unwrap()).collect();
        assert_eq!(at, [0, 600, 900, 1400, 1407]);
        // 900 bytes fit in memory; the third piece would not, so it and the rest are in the file.
        assert_eq!(spill.spilled(), 500 + 7 + 2000);
        let mut scratch = Vec::new();
        for (p, &a) in pieces.iter().zip(&at) {
            let got = spill.with_bytes(a, p.len(), &mut scratch, |b| Ok(b.to_vec()));
            assert_eq!(&got.unwrap(), p);
        }
        // A range across memory and the file.
        let all: Vec<u8> = pieces.concat();
        let got = spill.with_bytes(500, 1000, &mut scratch, |b| Ok(b.to_vec()));
        assert_eq!(got.unwrap(), all[500..1500]);
        // The file has no name: the folder stays empty.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_missing_folder_is_named_when_bytes_must_go_there() {
        let d = tempfile::tempdir().unwrap();
        let gone = d.path().join("gone");
        let mut spill = Spill::new(&gone, 4);
        spill.append(b"1234").unwrap();
        let e = spill.append(b"5").unwrap_err();
        assert_eq!(e.status, crate::status::H5TILE_ERR_IO);
        assert!(e.message.contains("gone"), "{}", e.message);
    }
}
