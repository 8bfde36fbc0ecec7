//! Compressed datasets in HDF5: the zstd and LZ4 filters registered in this process's HDF5
//! (and deflate where that HDF5 was built without zlib), so HDF5 reads every compressed file
//! h5tile writes without a plugin path; filter pipelines set on and read from dataset creation
//! properties; chunks written as stored (`H5Dwrite_chunk`) and found in the file.

use super::{check, Dataset, Handle, Plist};
use crate::platform::codecs::{self, Codec, Filter, Pipeline};
use crate::status::Result;
use hdf5_sys::h5::{haddr_t, hsize_t, H5allocate_memory, H5free_memory, HADDR_UNDEF};
use hdf5_sys::h5d::{
    H5D_fill_time_t, H5Dget_chunk_info_by_coord, H5Dget_storage_size, H5Dwrite_chunk,
};
use hdf5_sys::h5p::{
    H5Pget_filter2, H5Pget_nfilters, H5Pset_chunk, H5Pset_deflate, H5Pset_fill_time, H5Pset_filter,
    H5Pset_shuffle, H5P_DEFAULT,
};
use hdf5_sys::h5z::{
    H5Z_class2_t, H5Zfilter_avail, H5Zregister, H5Z_FLAG_OPTIONAL, H5Z_FLAG_REVERSE,
};
use std::ffi::{c_uint, c_void};

/// Registers the filters h5tile writes that this HDF5 lacks: zstd and LZ4 always (h5tile's
/// own, replacing any a plugin path would load), deflate where HDF5 was built without zlib.
/// Called once, with the lock held, when the library is first used.
pub(super) fn register() {
    let classes: [(u32, &'static std::ffi::CStr, FilterFn); 3] = [
        (
            codecs::FILTER_ZSTD,
            c"zstd (h5tile)",
            codec_filter::<{ codecs::FILTER_ZSTD }>,
        ),
        (
            codecs::FILTER_LZ4,
            c"lz4 (h5tile)",
            codec_filter::<{ codecs::FILTER_LZ4 }>,
        ),
        (
            codecs::FILTER_DEFLATE,
            c"deflate (h5tile)",
            codec_filter::<{ codecs::FILTER_DEFLATE }>,
        ),
    ];
    for (id, name, filter) in classes {
        if id == codecs::FILTER_DEFLATE && unsafe { H5Zfilter_avail(id as _) } > 0 {
            continue;
        }
        let class = H5Z_class2_t {
            version: 1,
            id: id as _,
            encoder_present: 1,
            decoder_present: 1,
            name: name.as_ptr(),
            can_apply: None,
            set_local: None,
            filter: Some(filter),
        };
        // HDF5 copies the class. A failure leaves HDF5 without the filter: reading such a
        // dataset through HDF5 then fails, naming the filter, and h5tile decodes it itself.
        if unsafe { H5Zregister((&class as *const H5Z_class2_t).cast()) } < 0 {
            super::take_error_stack();
        }
    }
}

type FilterFn = unsafe extern "C" fn(
    c_uint,
    usize,
    *const c_uint,
    usize,
    *mut usize,
    *mut *mut c_void,
) -> usize;

/// The filter callback of h5tile's codec filter `ID` (`code`).
unsafe extern "C" fn codec_filter<const ID: u32>(
    flags: c_uint,
    cd_nelmts: usize,
    cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    let cd = first_cd(cd_nelmts, cd_values);
    run_filter(flags, nbytes, buf_size, buf, |input, reverse| {
        code(ID, cd, input, reverse)
    })
}

/// What codec filter `id` makes of `input`, decoding with `reverse`; `cd` is its first
/// cd_value, the parameter the registered plugins take (zstd's level, 0 for its default; LZ4's
/// block size; deflate's level).
fn code(
    id: u32,
    cd: Option<u32>,
    input: &[u8],
    reverse: bool,
) -> std::result::Result<Vec<u8>, String> {
    let mut out = Vec::new();
    match (id, reverse) {
        (codecs::FILTER_ZSTD, true) => return codecs::zstd_decode(input, codecs::MAX_CHUNK),
        (codecs::FILTER_ZSTD, false) => {
            let level = match cd.map_or(0, |l| l as i32) {
                0 => Codec::Zstd.default_level(),
                l => l,
            };
            return codecs::zstd_encode(input, level);
        }
        (codecs::FILTER_LZ4, true) => return codecs::lz4_decode_any(input, codecs::MAX_CHUNK),
        (codecs::FILTER_LZ4, false) => codecs::lz4_encode(input, cd.unwrap_or(0), &mut out),
        (codecs::FILTER_DEFLATE, true) => {
            return codecs::deflate_decode_any(input, codecs::MAX_CHUNK)
        }
        (codecs::FILTER_DEFLATE, false) => {
            let level = cd.map_or(6, |l| l.min(9) as i32);
            codecs::deflate_encode(input, level, &mut out)?;
        }
        _ => return Err(format!("filter {id} is none of h5tile's codecs")),
    }
    Ok(out)
}

/// The first of a filter's `cd_values`, if it has any.
unsafe fn first_cd(n: usize, values: *const c_uint) -> Option<u32> {
    (n > 0 && !values.is_null()).then(|| *values)
}

/// A filter callback's work: `code(input, decoding)` on the `nbytes` at `*buf`, whose result
/// replaces them (HDF5's memory, freed and allocated through HDF5). Returns the new size, or
/// 0 for a failure, which HDF5 reports as the filter's (a panic is one too).
unsafe fn run_filter(
    flags: c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
    code: impl FnOnce(&[u8], bool) -> std::result::Result<Vec<u8>, String>,
) -> usize {
    if buf.is_null() || (*buf).is_null() || buf_size.is_null() {
        return 0;
    }
    let input = std::slice::from_raw_parts(*buf as *const u8, nbytes);
    let reverse = flags & H5Z_FLAG_REVERSE != 0;
    let out = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| code(input, reverse)))
    {
        Ok(Ok(out)) => out,
        Ok(Err(why)) => {
            crate::platform::device::log::debug(&format!("filter: {why}"));
            return 0;
        }
        Err(_) => return 0,
    };
    let new = H5allocate_memory(out.len().max(1), 0);
    if new.is_null() {
        return 0;
    }
    std::ptr::copy_nonoverlapping(out.as_ptr(), new as *mut u8, out.len());
    H5free_memory(*buf);
    *buf = new;
    *buf_size = out.len().max(1);
    out.len()
}

impl Plist {
    /// Dataset-creation properties of chunks of shape `chunk` stored through `pipeline`'s
    /// filters, marked as HDF5's own `H5Pset_shuffle` and `H5Pset_deflate` mark theirs, and
    /// as h5py marks the plugins' filters (optional), with the plugins' cd_values. Chunks are
    /// never filled: every one is written.
    pub fn chunked_filtered(chunk: &[u64], pipeline: &Pipeline) -> Result<Plist> {
        let dcpl = Plist::dataset_create()?;
        dcpl.set_chunked_filtered(chunk, pipeline)?;
        Ok(dcpl)
    }

    /// Sets these dataset-creation properties as `chunked_filtered` makes them.
    pub fn set_chunked_filtered(&self, chunk: &[u64], pipeline: &Pipeline) -> Result<()> {
        let _l = super::lock();
        let what = || format!("cannot set up chunks of {chunk:?} compressed with {pipeline:?}");
        unsafe {
            check(
                H5Pset_chunk(self.id(), chunk.len() as i32, chunk.as_ptr()),
                what,
            )?;
            let never = H5D_fill_time_t::H5D_FILL_TIME_NEVER;
            check(H5Pset_fill_time(self.id(), never), what)?;
            for Filter { id, cd_values } in pipeline.filters() {
                let set = match id {
                    // HDF5 adds the element size to the shuffle's cd_values itself.
                    codecs::FILTER_SHUFFLE => H5Pset_shuffle(self.id()),
                    codecs::FILTER_DEFLATE if H5Zfilter_avail(id as _) > 0 => {
                        H5Pset_deflate(self.id(), cd_values[0])
                    }
                    _ => H5Pset_filter(
                        self.id(),
                        id as _,
                        H5Z_FLAG_OPTIONAL,
                        cd_values.len(),
                        cd_values.as_ptr(),
                    ),
                };
                check(set, what)?;
            }
        }
        Ok(())
    }

    /// The filters of these dataset-creation properties, in pipeline order.
    pub fn filters(&self) -> Result<Vec<Filter>> {
        let _l = super::lock();
        let n = check(unsafe { H5Pget_nfilters(self.id()) }, || {
            "cannot count the dataset's filters".into()
        })?;
        (0..n as c_uint)
            .map(|i| {
                let mut flags: c_uint = 0;
                let mut cd = [0 as c_uint; 16];
                let mut count = cd.len();
                let mut config: c_uint = 0;
                let id = unsafe {
                    H5Pget_filter2(
                        self.id(),
                        i,
                        &mut flags,
                        &mut count,
                        cd.as_mut_ptr(),
                        0,
                        std::ptr::null_mut(),
                        &mut config,
                    )
                };
                check(id, || format!("cannot read the dataset's filter {i}"))?;
                Ok(Filter {
                    id: id as u32,
                    cd_values: cd[..count.min(cd.len())].to_vec(),
                })
            })
            .collect()
    }
}

/// Where a chunk is stored in its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoredChunk {
    pub addr: u64,
    pub size: u64,
    /// Bit i set: filter i of the pipeline was skipped for this chunk.
    pub filter_mask: u32,
}

impl Dataset {
    /// Writes the chunk at element `offset` as `stored`, the pipeline's filters applied.
    pub fn write_chunk(&self, offset: &[u64], stored: &[u8]) -> Result<()> {
        let _l = super::lock();
        let written = unsafe {
            H5Dwrite_chunk(
                self.id(),
                H5P_DEFAULT,
                0,
                offset.as_ptr(),
                stored.len(),
                stored.as_ptr().cast(),
            )
        };
        check(written, || format!("cannot write the chunk at {offset:?}")).map(|_| ())
    }

    /// Bytes the dataset's elements take in its file, as stored (compressed chunks as
    /// compressed; 0 where nothing is allocated), from its metadata alone.
    pub fn storage_size(&self) -> u64 {
        let _l = super::lock();
        // HDF5 returns 0 for a failure too: nothing allocated, as far as anyone can tell.
        let size = unsafe { H5Dget_storage_size(self.id()) };
        if size == 0 {
            super::take_error_stack();
        }
        size
    }

    /// Where the chunk at element `offset` is stored (None: it was never written).
    pub fn stored_chunk(&self, offset: &[u64]) -> Result<Option<StoredChunk>> {
        let _l = super::lock();
        let (mut mask, mut addr, mut size): (c_uint, haddr_t, hsize_t) = (0, 0, 0);
        let found = unsafe {
            H5Dget_chunk_info_by_coord(self.id(), offset.as_ptr(), &mut mask, &mut addr, &mut size)
        };
        check(found, || format!("cannot find the chunk at {offset:?}"))?;
        Ok((addr != HADDR_UNDEF).then_some(StoredChunk {
            addr,
            size,
            filter_mask: mask,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;
    use crate::platform::codecs::Compression;
    use crate::platform::hdf5::{File, Space};

    /// HDF5 reads chunks h5tile wrote as stored, through the registered filters, and its own
    /// pipeline writes what h5tile decodes.
    #[test]
    fn hdf5_reads_what_h5tile_stores_and_the_reverse() {
        let d = tempfile::tempdir().unwrap();
        let values: Vec<f64> = (0..6000).map(|i| (i / 7) as f64 * 0.5).collect();
        let raw: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        for codec in [Codec::Zstd, Codec::Lz4, Codec::Deflate] {
            for shuffle in [false, true] {
                let p = Compression::new(codec, 0, shuffle).unwrap().pipeline(8);
                let path = d.path().join(format!("{codec:?}{shuffle}.h5"));
                let t = Dtype::Float64.hdf5_type().unwrap();
                {
                    let file = File::create(&path).unwrap();
                    let dcpl = Plist::chunked_filtered(&[20, 100], &p).unwrap();
                    let space = Space::simple(&[60, 100]).unwrap();
                    let dset = Dataset::create(&file, "/x", &t, &space, &dcpl).unwrap();
                    assert_eq!(dset.create_plist().unwrap().filters().unwrap(), p.filters());
                    let mut enc = p.encoder();
                    for (c, rows) in raw.chunks(20 * 100 * 8).enumerate() {
                        let mut stored = Vec::new();
                        enc.encode(rows, &mut stored).unwrap();
                        dset.write_chunk(&[20 * c as u64, 0], &stored).unwrap();
                        let at = dset.stored_chunk(&[20 * c as u64, 0]).unwrap().unwrap();
                        assert_eq!((at.size, at.filter_mask), (stored.len() as u64, 0));
                    }
                    file.close().unwrap();
                }
                let file = File::open_read(&path).unwrap();
                let dset = Dataset::open(&file, "/x").unwrap();
                let mut back = vec![0f64; values.len()];
                unsafe { dset.read(&t, None, None, back.as_mut_ptr().cast()).unwrap() };
                assert_eq!(back, values, "{codec:?} shuffle {shuffle}");
                // And through HDF5's pipeline (H5Dwrite), read back by h5tile's decoder.
                drop(dset);
                drop(file);
                let file = File::open_write(&path).unwrap();
                let dset = Dataset::open(&file, "/x").unwrap();
                let twice: Vec<f64> = values.iter().map(|v| v * 2.0).collect();
                unsafe { dset.write(&t, None, None, twice.as_ptr().cast()).unwrap() };
                let at = dset.stored_chunk(&[40, 0]).unwrap().unwrap();
                file.close().unwrap();
                let bytes = std::fs::read(&path).unwrap();
                let stored = &bytes[at.addr as usize..(at.addr + at.size) as usize];
                let mut out = vec![0u8; 20 * 100 * 8];
                p.decoder().decode(stored, &mut out).unwrap();
                let expect: Vec<u8> = twice[4000..].iter().flat_map(|v| v.to_ne_bytes()).collect();
                assert_eq!(out, expect, "{codec:?} shuffle {shuffle}");
            }
        }
    }
}
