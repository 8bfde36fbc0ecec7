//! The codecs of compressed tiles. Each writes exactly the bytes HDF5's registered filter of
//! its id reads and writes, so h5py with `hdf5plugin` and HDF5's tools with a filter plugin
//! path read what h5tile writes, and h5tile reads what they write:
//! - zstd, filter 32015: one zstd frame (its content size in its header, and a checksum of
//!   the content after it); cd_values `[level]`;
//! - LZ4, filter 32004: the original size (8 bytes, big-endian), the block size (4 bytes,
//!   big-endian), then per block its stored size (4 bytes, big-endian) and the block: LZ4's
//!   block format, or the bytes as they are where LZ4 does not shrink them (a stored size
//!   equal to the block's size says so); cd_values `[block size]`;
//! - deflate, filter 1 (built into HDF5): a zlib stream; cd_values `[level]`;
//! - byte shuffle, filter 2 (built into HDF5), before the codec: byte j of every element
//!   together, for each j in turn (bytes past the last whole element left in place);
//!   cd_values `[element size]`.
//!
//! Only bytes move here: `platform::hdf5` sets the filters on datasets, writes and reads
//! chunks, and registers zstd and LZ4 with HDF5 so it reads them without a plugin path.
//! Decoding never trusts its input: a damaged chunk is an error, never a panic or bytes of
//! another length than the chunk's.

use super::shuffle::{shuffle, unshuffle, unshuffle_streaming};
use std::ops::RangeInclusive;

pub(crate) const FILTER_DEFLATE: u32 = 1;
pub(crate) const FILTER_SHUFFLE: u32 = 2;
pub(crate) const FILTER_LZ4: u32 = 32004;
pub(crate) const FILTER_ZSTD: u32 = 32015;

/// What the LZ4 filter splits a chunk into: HDF5's LZ4 filter reads any block size, this one
/// writes chunks of up to 1 MiB (h5tile's chunks) as one block.
pub(crate) const LZ4_BLOCK: u32 = 1 << 20;

/// Largest chunk a filter callback decodes without knowing the chunk's size (HDF5's own limit
/// on a chunk): a damaged size field must not make it allocate more.
pub(crate) const MAX_CHUNK: u64 = u32::MAX as u64;

/// A compression codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    Zstd,
    Lz4,
    Deflate,
}

impl Codec {
    /// Its name as users write it ("zstd", "lz4", "deflate").
    pub fn name(self) -> &'static str {
        match self {
            Codec::Zstd => "zstd",
            Codec::Lz4 => "lz4",
            Codec::Deflate => "deflate",
        }
    }

    /// The codec a name (any case) names.
    pub fn from_name(name: &str) -> Option<Codec> {
        [Codec::Zstd, Codec::Lz4, Codec::Deflate]
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name.trim()))
    }

    /// HDF5's registered filter id.
    pub fn filter_id(self) -> u32 {
        match self {
            Codec::Zstd => FILTER_ZSTD,
            Codec::Lz4 => FILTER_LZ4,
            Codec::Deflate => FILTER_DEFLATE,
        }
    }

    /// The level a level of 0 stands for (LZ4 has no levels).
    pub fn default_level(self) -> i32 {
        match self {
            Codec::Zstd => zstd::DEFAULT_COMPRESSION_LEVEL,
            Codec::Lz4 => 0,
            Codec::Deflate => 6,
        }
    }

    /// The levels it accepts, 0 (its default) aside.
    pub fn levels(self) -> RangeInclusive<i32> {
        match self {
            Codec::Zstd => zstd::compression_level_range(),
            Codec::Lz4 => 0..=0,
            Codec::Deflate => 1..=9,
        }
    }
}

/// How a tile's chunks are compressed: a codec at a level (never 0: `new` puts the codec's
/// default in its place), after a byte shuffle or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compression {
    pub codec: Codec,
    pub level: i32,
    pub shuffle: bool,
}

impl Compression {
    /// `codec` at `level` (0: its default); why not, for a level it does not have.
    pub fn new(codec: Codec, level: i32, shuffle: bool) -> Result<Compression, String> {
        let level = match level {
            0 => codec.default_level(),
            l if codec.levels().contains(&l) => l,
            l if codec == Codec::Lz4 => {
                return Err(format!(
                    "compression level {l} for lz4, which has no levels: give 0"
                ))
            }
            l => {
                let r = codec.levels();
                return Err(format!(
                    "compression level {l} for {}: expected 0 (its default, {}) or {} to {}",
                    codec.name(),
                    codec.default_level(),
                    r.start(),
                    r.end()
                ));
            }
        };
        Ok(Compression {
            codec,
            level,
            shuffle,
        })
    }

    /// `codec[:level][+shuffle]` as in `H5TILE_COMPRESSION`, and as `h5tile ls` shows a
    /// compression ("zstd", "zstd:3", "lz4+shuffle", "none": None); shuffled too with `shuffle`.
    pub fn parse(text: &str, shuffle: bool) -> Result<Option<Compression>, String> {
        let (spec, suffixed) = match text.rsplit_once('+') {
            Some((spec, s)) if s.trim().eq_ignore_ascii_case("shuffle") => (spec, true),
            Some((_, s)) => {
                return Err(format!(
                    "'{text}': only 'shuffle' may follow '+' (as in 'zstd:1+shuffle'), not '{s}'"
                ))
            }
            None => (text, false),
        };
        let (name, level) = match spec.split_once(':') {
            Some((name, level)) => {
                let level = level
                    .trim()
                    .parse::<i32>()
                    .map_err(|_| format!("'{text}': the level after ':' must be a whole number"))?;
                (name, level)
            }
            None => (spec, 0),
        };
        if name.trim().eq_ignore_ascii_case("none") && level == 0 {
            return match suffixed {
                true => Err(format!("'{text}': a shuffle needs a codec")),
                false => Ok(None),
            };
        }
        let codec = Codec::from_name(name).ok_or_else(|| {
            format!("'{text}': unknown codec '{name}' (known: none, zstd, lz4, deflate)")
        })?;
        Compression::new(codec, level, shuffle || suffixed).map(Some)
    }

    /// The filters, in pipeline order, of a dataset of elements of `elem` bytes stored so.
    pub fn pipeline(self, elem: usize) -> Pipeline {
        Pipeline {
            shuffle: (self.shuffle && elem > 1).then_some(elem),
            codec: self.codec,
            level: self.level,
            lz4_block: LZ4_BLOCK,
        }
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.codec.name())?;
        if self.codec != Codec::Lz4 {
            write!(f, ":{}", self.level)?;
        }
        if self.shuffle {
            write!(f, " after a byte shuffle")?;
        }
        Ok(())
    }
}

/// One filter of a dataset's pipeline as HDF5 records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub id: u32,
    pub cd_values: Vec<u32>,
}

/// The filters of one dataset, as h5tile writes them or as it can decode them: a byte shuffle
/// of `shuffle`-byte elements (None: no shuffle), then the codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pipeline {
    pub shuffle: Option<usize>,
    pub codec: Codec,
    /// The level chunks are written at (decoding needs none).
    pub level: i32,
    /// LZ4: the block size chunks are written in (decoding reads it from each chunk).
    pub lz4_block: u32,
}

impl Pipeline {
    /// The filters as HDF5 records them, in the order they are applied when writing.
    pub fn filters(&self) -> Vec<Filter> {
        let mut filters = Vec::new();
        if let Some(elem) = self.shuffle {
            filters.push(Filter {
                id: FILTER_SHUFFLE,
                cd_values: vec![elem as u32],
            });
        }
        let cd = match self.codec {
            Codec::Zstd | Codec::Deflate => self.level as u32,
            Codec::Lz4 => self.lz4_block,
        };
        filters.push(Filter {
            id: self.codec.filter_id(),
            cd_values: vec![cd],
        });
        filters
    }

    /// The pipeline a dataset's `filters` make, when h5tile decodes it itself: one codec,
    /// after a byte shuffle or not. None for anything else (HDF5 then reads it).
    pub fn from_filters(filters: &[Filter]) -> Option<Pipeline> {
        let (shuffle, codec) = match filters {
            [codec] => (None, codec),
            [shuffle, codec] if shuffle.id == FILTER_SHUFFLE => {
                let elem = *shuffle.cd_values.first()? as usize;
                (Some(elem).filter(|&e| e > 1), codec)
            }
            _ => return None,
        };
        let first = codec.cd_values.first().copied();
        let (codec, level) = match codec.id {
            FILTER_ZSTD => (Codec::Zstd, first.map_or(0, |l| l as i32)),
            FILTER_LZ4 => (Codec::Lz4, 0),
            FILTER_DEFLATE => (Codec::Deflate, first.map_or(0, |l| l as i32)),
            _ => return None,
        };
        Some(Pipeline {
            shuffle,
            codec,
            level,
            lz4_block: first.filter(|_| codec == Codec::Lz4).unwrap_or(LZ4_BLOCK),
        })
    }

    /// An encoder of chunks for one thread (it keeps the codec's state between chunks).
    pub fn encoder(&self) -> Encoder {
        Encoder {
            pipeline: *self,
            zstd: None,
            shuffled: Vec::new(),
        }
    }

    /// A decoder of chunks for one thread.
    pub fn decoder(&self) -> Decoder {
        Decoder {
            pipeline: *self,
            zstd: None,
            frame_checksums: true,
            scratch: Vec::new(),
        }
    }
}

/// Encodes chunks of one pipeline, keeping the codec's state and a scratch buffer between them.
pub struct Encoder {
    pipeline: Pipeline,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    shuffled: Vec<u8>,
}

impl Encoder {
    /// The chunk `raw` as the pipeline stores it, into `out` (replacing what it held).
    pub fn encode(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let p = self.pipeline;
        let input = match p.shuffle {
            Some(elem) => {
                self.shuffled.resize(raw.len(), 0);
                shuffle(elem, raw, &mut self.shuffled);
                &self.shuffled[..]
            }
            None => raw,
        };
        out.clear();
        match p.codec {
            Codec::Zstd => {
                if self.zstd.is_none() {
                    self.zstd = Some(zstd_compressor(p.level)?);
                }
                let c = self.zstd.as_mut().expect("just made");
                out.reserve(zstd::zstd_safe::compress_bound(input.len()));
                c.compress_to_buffer(input, out)
                    .map(|_| ())
                    .map_err(|e| format!("zstd: {e}"))
            }
            Codec::Lz4 => {
                lz4_encode(input, p.lz4_block, out);
                Ok(())
            }
            Codec::Deflate => deflate_encode(input, p.level, out),
        }
    }
}

/// Decodes chunks of one pipeline, keeping the codec's state and a scratch buffer between them.
pub struct Decoder {
    pipeline: Pipeline,
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    /// Whether zstd checks the checksum of a frame's content (on unless the caller checks the
    /// decoded bytes itself).
    frame_checksums: bool,
    scratch: Vec<u8>,
}

impl Decoder {
    /// Whether the codec checks the checksum a stored chunk carries of its content (zstd's
    /// frame checksum; the others carry none). On by default. A caller that checks every
    /// decoded byte against h5tile's own checksums turns it off: the frame's XXH64 took a
    /// third of zstd's decode time on a smooth float64 field (`perf`, 1 GiB, zstd:1 + shuffle).
    pub fn check_frame_checksums(&mut self, on: bool) -> Result<(), String> {
        if on != self.frame_checksums {
            if let Some(d) = self.zstd.as_mut() {
                set_frame_checksums(d, on)?;
            }
            self.frame_checksums = on;
        }
        Ok(())
    }

    /// The chunk `stored` decoded into `out`, which must come out exactly full: why not.
    pub fn decode(&mut self, stored: &[u8], out: &mut [u8]) -> Result<(), String> {
        self.decode_into(stored, out, false)
    }

    /// `decode`, its bytes written around the cache where the pipeline shuffles 8-byte elements
    /// (`shuffle::unshuffle_streaming`): for a large read straight into the caller's buffer,
    /// which is not read back soon.
    pub fn decode_streaming(&mut self, stored: &[u8], out: &mut [u8]) -> Result<(), String> {
        self.decode_into(stored, out, true)
    }

    fn decode_into(
        &mut self,
        stored: &[u8],
        out: &mut [u8],
        streaming: bool,
    ) -> Result<(), String> {
        let p = self.pipeline;
        let target: &mut [u8] = match p.shuffle {
            Some(_) => {
                self.scratch.resize(out.len(), 0);
                &mut self.scratch[..]
            }
            None => &mut *out,
        };
        match p.codec {
            Codec::Zstd => {
                if self.zstd.is_none() {
                    let mut d =
                        zstd::bulk::Decompressor::new().map_err(|e| format!("zstd: {e}"))?;
                    set_frame_checksums(&mut d, self.frame_checksums)?;
                    self.zstd = Some(d);
                }
                let d = self.zstd.as_mut().expect("just made");
                let n = d
                    .decompress_to_buffer(stored, target)
                    .map_err(|e| format!("zstd: {e}"))?;
                if n != target.len() {
                    return Err(format!(
                        "zstd: {n} bytes decoded, the chunk holds {}",
                        target.len()
                    ));
                }
            }
            Codec::Lz4 => lz4_decode(stored, target)?,
            Codec::Deflate => deflate_decode(stored, target)?,
        }
        match p.shuffle {
            Some(elem) if streaming => unshuffle_streaming(elem, &self.scratch, out),
            Some(elem) => unshuffle(elem, &self.scratch, out),
            None => {}
        }
        Ok(())
    }
}

fn set_frame_checksums(d: &mut zstd::bulk::Decompressor<'static>, on: bool) -> Result<(), String> {
    d.set_parameter(zstd::zstd_safe::DParameter::ForceIgnoreChecksum(!on))
        .map_err(|e| format!("zstd: {e}"))
}

fn zstd_compressor(level: i32) -> Result<zstd::bulk::Compressor<'static>, String> {
    let mut c = zstd::bulk::Compressor::new(level).map_err(|e| format!("zstd: {e}"))?;
    // A checksum of the content in the frame: readers without h5tile's checksums (h5py)
    // detect a damaged chunk too.
    c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
        .map_err(|e| format!("zstd: {e}"))?;
    Ok(c)
}

/// `input` as one zstd frame at `level`.
pub fn zstd_encode(input: &[u8], level: i32) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(input.len()));
    zstd_compressor(level)?
        .compress_to_buffer(input, &mut out)
        .map_err(|e| format!("zstd: {e}"))?;
    Ok(out)
}

/// The content of the zstd frames `input`, of at most `limit` bytes (what a frame's header
/// says its content is, when it says, else decoded as a stream up to the limit).
pub fn zstd_decode(input: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    let declared = zstd::zstd_safe::get_frame_content_size(input)
        .map_err(|_| "zstd: not a zstd frame".to_string())?;
    match declared {
        Some(n) if n > limit => Err(format!(
            "zstd: the frame declares {n} bytes, more than a chunk holds"
        )),
        Some(n) => {
            let mut out = vec![0u8; n as usize];
            let mut d = zstd::bulk::Decompressor::new().map_err(|e| format!("zstd: {e}"))?;
            let got = d
                .decompress_to_buffer(input, &mut out[..])
                .map_err(|e| format!("zstd: {e}"))?;
            out.truncate(got);
            Ok(out)
        }
        None => {
            let decoder =
                zstd::stream::read::Decoder::new(input).map_err(|e| format!("zstd: {e}"))?;
            let too_long = "zstd: the frames hold more than a chunk holds";
            read_at_most(decoder, limit, "zstd", too_long)
        }
    }
}

/// `input` in HDF5's LZ4 framing, in blocks of `block` bytes (0: one block).
pub fn lz4_encode(input: &[u8], block: u32, out: &mut Vec<u8>) {
    let block = match block {
        0 => input.len().max(1),
        b => (b as usize).min(input.len().max(1)),
    };
    out.clear();
    out.extend_from_slice(&(input.len() as u64).to_be_bytes());
    out.extend_from_slice(&(block as u32).to_be_bytes());
    for piece in input.chunks(block) {
        let at = out.len();
        let bound = lz4_flex::block::get_maximum_output_size(piece.len());
        out.resize(at + 4 + bound, 0);
        let n = lz4_flex::block::compress_into(piece, &mut out[at + 4..])
            .expect("the output holds LZ4's bound");
        // Where LZ4 does not shrink a block, it is stored as is, its size saying so.
        let n = match n < piece.len() {
            true => n,
            false => {
                out[at + 4..at + 4 + piece.len()].copy_from_slice(piece);
                piece.len()
            }
        };
        out.truncate(at + 4 + n);
        out[at..at + 4].copy_from_slice(&(n as u32).to_be_bytes());
    }
}

/// The original size and block size an LZ4-framed chunk declares.
fn lz4_header(input: &[u8]) -> Result<(u64, usize), String> {
    if input.len() < 12 {
        return Err(format!(
            "lz4: {} bytes, shorter than the 12-byte header",
            input.len()
        ));
    }
    let size = u64::from_be_bytes(input[..8].try_into().expect("8 bytes"));
    let block = u32::from_be_bytes(input[8..12].try_into().expect("4 bytes")) as usize;
    if block == 0 && size > 0 {
        return Err("lz4: a block size of 0".into());
    }
    Ok((size, block))
}

/// An LZ4-framed chunk decoded into `out`, which it must fill exactly.
pub fn lz4_decode(input: &[u8], out: &mut [u8]) -> Result<(), String> {
    let (size, block) = lz4_header(input)?;
    if size != out.len() as u64 {
        return Err(format!(
            "lz4: the chunk declares {size} bytes, it holds {}",
            out.len()
        ));
    }
    let mut at = 12usize;
    for piece in out.chunks_mut(block.max(1)) {
        let Some(head) = input.get(at..at + 4) else {
            return Err(format!(
                "lz4: the chunk ends at byte {at}, before its last block"
            ));
        };
        let n = u32::from_be_bytes(head.try_into().expect("4 bytes")) as usize;
        at += 4;
        let Some(body) = input.get(at..at + n) else {
            return Err(format!(
                "lz4: a block of {n} bytes at byte {at} runs past the chunk's {} bytes",
                input.len()
            ));
        };
        at += n;
        if n == piece.len() {
            piece.copy_from_slice(body);
            continue;
        }
        let got = lz4_flex::block::decompress_into(body, piece).map_err(|e| format!("lz4: {e}"))?;
        if got != piece.len() {
            return Err(format!(
                "lz4: a block decoded to {got} bytes, not {}",
                piece.len()
            ));
        }
    }
    match at == input.len() {
        true => Ok(()),
        false => Err(format!(
            "lz4: {} bytes follow the last block",
            input.len() - at
        )),
    }
}

/// An LZ4-framed chunk of at most `limit` bytes, its size read from its header.
pub fn lz4_decode_any(input: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    let (size, _) = lz4_header(input)?;
    if size > limit {
        return Err(format!(
            "lz4: the chunk declares {size} bytes, more than a chunk holds"
        ));
    }
    let mut out = vec![0u8; size as usize];
    lz4_decode(input, &mut out)?;
    Ok(out)
}

/// `input` as a zlib stream at `level`, into `out`.
pub fn deflate_encode(input: &[u8], level: i32, out: &mut Vec<u8>) -> Result<(), String> {
    use std::io::Write;
    let taken = std::mem::take(out);
    let level = flate2::Compression::new(level.clamp(0, 9) as u32);
    let mut e = flate2::write::ZlibEncoder::new(taken, level);
    e.write_all(input).map_err(|e| format!("deflate: {e}"))?;
    *out = e.finish().map_err(|e| format!("deflate: {e}"))?;
    Ok(())
}

/// A zlib stream decoded into `out`, which it must fill exactly, with nothing after it.
pub fn deflate_decode(input: &[u8], out: &mut [u8]) -> Result<(), String> {
    let mut d = flate2::Decompress::new(true);
    let status = d
        .decompress(input, out, flate2::FlushDecompress::Finish)
        .map_err(|e| format!("deflate: {e}"))?;
    let (read, written) = (d.total_in() as usize, d.total_out() as usize);
    match status {
        flate2::Status::StreamEnd if written == out.len() && read == input.len() => Ok(()),
        flate2::Status::StreamEnd if written != out.len() => Err(format!(
            "deflate: {written} bytes decoded, the chunk holds {}",
            out.len()
        )),
        flate2::Status::StreamEnd => Err(format!(
            "deflate: {} bytes follow the stream",
            input.len() - read
        )),
        _ => Err(format!(
            "deflate: the stream does not end within the chunk's {} bytes",
            out.len()
        )),
    }
}

/// A zlib stream of at most `limit` bytes decoded.
pub fn deflate_decode_any(input: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    let decoder = flate2::read::ZlibDecoder::new(input);
    let too_long = "deflate: the stream holds more than a chunk holds";
    read_at_most(decoder, limit, "deflate", too_long)
}

/// All that `decoder` (of `codec`) decodes, refused with `too_long` when it is more than
/// `limit` bytes. The streams whose size no header gives are decoded this way: one byte past
/// the limit is read, so a stream that ends at the limit passes and a longer one is stopped.
fn read_at_most(
    decoder: impl std::io::Read,
    limit: u64,
    codec: &str,
    too_long: &str,
) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::new();
    decoder
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("{codec}: {e}"))?;
    match out.len() as u64 > limit {
        true => Err(too_long.into()),
        false => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::xorshift;

    /// Bytes that compress somewhat: slowly varying little-endian numbers with noise.
    fn sample(len: usize, seed: u64) -> Vec<u8> {
        let start = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        xorshift(start)
            .take(len)
            .enumerate()
            .map(|(i, x)| match i % 8 {
                0 => (x & 3) as u8,
                1..=3 => (i / 4096) as u8,
                _ => 0,
            })
            .collect()
    }

    fn random(len: usize, seed: u64) -> Vec<u8> {
        xorshift(seed | 1)
            .take(len)
            .map(|x| (x >> 24) as u8)
            .collect()
    }

    fn every_pipeline() -> Vec<Pipeline> {
        let mut all = Vec::new();
        for codec in [Codec::Zstd, Codec::Lz4, Codec::Deflate] {
            for (shuffle, elem) in [
                (false, 8),
                (true, 1),
                (true, 2),
                (true, 3),
                (true, 4),
                (true, 8),
                (true, 16),
            ] {
                all.push(Compression::new(codec, 0, shuffle).unwrap().pipeline(elem));
            }
        }
        all
    }

    #[test]
    fn every_codec_round_trips_with_and_without_shuffle_at_many_lengths() {
        let lengths = [
            0usize,
            1,
            2,
            7,
            8,
            15,
            64,
            4095,
            4096,
            65_537,
            (1 << 20) + 13,
        ];
        for p in every_pipeline() {
            let (mut enc, mut dec) = (p.encoder(), p.decoder());
            for (i, &len) in lengths.iter().enumerate() {
                for raw in [sample(len, i as u64), random(len, i as u64 + 99)] {
                    let mut stored = Vec::new();
                    enc.encode(&raw, &mut stored).unwrap();
                    let mut back = vec![0xAAu8; len];
                    dec.decode(&stored, &mut back)
                        .unwrap_or_else(|e| panic!("{p:?} at {len} bytes: {e}"));
                    assert!(back == raw, "{p:?} at {len} bytes");
                    // The filter callbacks' decoding, which does not know the length.
                    let unfiltered = match p.codec {
                        Codec::Zstd => zstd_decode(&stored, MAX_CHUNK),
                        Codec::Lz4 => lz4_decode_any(&stored, MAX_CHUNK),
                        Codec::Deflate => deflate_decode_any(&stored, MAX_CHUNK),
                    }
                    .unwrap();
                    let mut unshuffled = vec![0u8; len];
                    match p.shuffle {
                        Some(elem) => unshuffle(elem, &unfiltered, &mut unshuffled),
                        None => unshuffled.copy_from_slice(&unfiltered),
                    }
                    assert!(unshuffled == raw, "{p:?} at {len} bytes, by the filter");
                    // A chunk of another length is refused, not cut or padded.
                    if len > 0 {
                        let mut short = vec![0u8; len - 1];
                        assert!(dec.decode(&stored, &mut short).is_err(), "{p:?} {len}");
                    }
                    let mut long = vec![0u8; len + 1];
                    assert!(dec.decode(&stored, &mut long).is_err(), "{p:?} {len}");
                }
            }
        }
    }

    #[test]
    fn compressible_chunks_shrink() {
        let raw = sample(1 << 20, 5);
        for p in every_pipeline() {
            let mut stored = Vec::new();
            p.encoder().encode(&raw, &mut stored).unwrap();
            assert!(
                stored.len() < raw.len() / 2,
                "{p:?}: {} bytes",
                stored.len()
            );
        }
    }

    #[test]
    fn the_lz4_framing_is_hdf5_s() {
        // Incompressible bytes: every block stored as is, its size equal to the block's.
        let raw = random(10_000, 3);
        let mut out = Vec::new();
        lz4_encode(&raw, 4096, &mut out);
        assert_eq!(&out[..8], &10_000u64.to_be_bytes());
        assert_eq!(&out[8..12], &4096u32.to_be_bytes());
        let mut at = 12;
        for piece in raw.chunks(4096) {
            let n = u32::from_be_bytes(out[at..at + 4].try_into().unwrap()) as usize;
            assert_eq!(n, piece.len());
            assert_eq!(&out[at + 4..at + 4 + n], piece);
            at += 4 + n;
        }
        assert_eq!(at, out.len());
        let mut back = vec![0u8; raw.len()];
        lz4_decode(&out, &mut back).unwrap();
        assert_eq!(back, raw);
        // Compressible and incompressible blocks mixed; the block size no larger than the
        // chunk; one block where the size is 0.
        let mut mixed = sample(8192, 1);
        mixed.extend(random(4096, 2));
        mixed.extend(vec![7u8; 5000]);
        for block in [0u32, 4096, 1 << 20] {
            lz4_encode(&mixed, block, &mut out);
            let declared = u32::from_be_bytes(out[8..12].try_into().unwrap());
            let expect = match block {
                0 | 1_048_576 => mixed.len() as u32,
                b => b,
            };
            assert_eq!(declared, expect);
            let mut back = vec![0u8; mixed.len()];
            lz4_decode(&out, &mut back).unwrap();
            assert_eq!(back, mixed);
        }
        // A stored size larger than what follows, or bytes left over, is an error.
        lz4_encode(&mixed, 4096, &mut out);
        let mut back = vec![0u8; mixed.len()];
        assert!(lz4_decode(&out[..out.len() - 1], &mut back).is_err());
        let mut longer = out.clone();
        longer.push(0);
        assert!(lz4_decode(&longer, &mut back).is_err());
        assert!(lz4_decode(&out[..11], &mut back).is_err());
        let mut zero_block = out.clone();
        zero_block[8..12].copy_from_slice(&0u32.to_be_bytes());
        assert!(lz4_decode(&zero_block, &mut back).is_err());
    }

    #[test]
    fn the_zstd_frame_declares_its_size() {
        let raw = sample(100_000, 4);
        let stored = zstd_encode(&raw, 3).unwrap();
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&stored).unwrap(),
            Some(raw.len() as u64)
        );
        assert!(zstd_decode(&stored, 99_999).is_err(), "more than the limit");
    }

    /// zstd (its frame's checksum) detects a changed byte; deflate (whose Adler-32 misses
    /// changes that cancel out, as flipping one bit here shows) and LZ4 (no check) cannot
    /// always: h5tile's block checksums catch what they miss. None panics.
    #[test]
    fn a_changed_byte_is_an_error_or_at_worst_other_bytes_never_a_panic() {
        let raw = sample(20_000, 8);
        for p in every_pipeline()
            .into_iter()
            .filter(|p| p.shuffle != Some(3))
        {
            let mut stored = Vec::new();
            p.encoder().encode(&raw, &mut stored).unwrap();
            let mut dec = p.decoder();
            let step = (stored.len() / 300).max(1);
            for at in (0..stored.len()).step_by(step) {
                for flip in [0x01u8, 0x80, 0xFF] {
                    let mut bad = stored.clone();
                    bad[at] ^= flip;
                    let mut out = vec![0u8; raw.len()];
                    let got = dec.decode(&bad, &mut out);
                    if p.codec == Codec::Zstd {
                        assert!(got.is_err() || out == raw, "{p:?}: byte {at} ^ {flip:#x}")
                    }
                }
            }
        }
    }

    /// A decoder whose caller checks the decoded bytes itself skips zstd's frame checksum, and
    /// checks it again once told to: a frame whose checksum alone changed decodes to the same
    /// bytes only while the check is off.
    #[test]
    fn the_frame_checksum_is_checked_unless_the_caller_checks_the_bytes() {
        let raw = sample(50_000, 5);
        let p = Compression::new(Codec::Zstd, 1, true).unwrap().pipeline(8);
        let mut stored = Vec::new();
        p.encoder().encode(&raw, &mut stored).unwrap();
        // The frame's last 4 bytes are its content checksum.
        let last = stored.len() - 1;
        stored[last] ^= 0x10;
        let mut dec = p.decoder();
        let mut out = vec![0u8; raw.len()];
        let why = dec.decode(&stored, &mut out).unwrap_err();
        assert!(why.starts_with("zstd: "), "{why}");
        dec.check_frame_checksums(false).unwrap();
        dec.decode(&stored, &mut out).unwrap();
        assert!(out == raw);
        dec.check_frame_checksums(true).unwrap();
        assert!(dec.decode(&stored, &mut out).is_err());
        // Set before the codec's context is made, it holds too.
        let mut fresh = p.decoder();
        fresh.check_frame_checksums(false).unwrap();
        fresh.decode(&stored, &mut out).unwrap();
        assert!(out == raw);
    }

    #[test]
    fn pipelines_come_back_from_their_filters() {
        for p in every_pipeline() {
            let back = Pipeline::from_filters(&p.filters()).unwrap();
            assert_eq!(back, p);
        }
        let p = Compression::new(Codec::Zstd, 5, true).unwrap().pipeline(8);
        assert_eq!(
            p.filters(),
            [
                Filter {
                    id: 2,
                    cd_values: vec![8]
                },
                Filter {
                    id: 32015,
                    cd_values: vec![5]
                }
            ]
        );
        let unknown = [Filter {
            id: 307,
            cd_values: vec![],
        }];
        assert_eq!(Pipeline::from_filters(&unknown), None);
        let twice = [
            Filter {
                id: 1,
                cd_values: vec![6],
            },
            Filter {
                id: 1,
                cd_values: vec![6],
            },
        ];
        assert_eq!(Pipeline::from_filters(&twice), None);
    }

    #[test]
    fn settings_parse_and_levels_are_checked() {
        let zstd3 = Compression::new(Codec::Zstd, 3, false).unwrap();
        assert_eq!(Compression::parse("zstd", false), Ok(Some(zstd3)));
        assert_eq!(Compression::parse("ZSTD:3", false), Ok(Some(zstd3)));
        assert_eq!(Compression::parse("none", true), Ok(None));
        let lz4 = Compression::parse("lz4", true).unwrap().unwrap();
        assert_eq!((lz4.codec, lz4.shuffle), (Codec::Lz4, true));
        assert_eq!(
            Compression::parse("deflate", false).unwrap().unwrap().level,
            6
        );
        assert_eq!(
            Compression::parse("zstd:-5", false).unwrap().unwrap().level,
            -5
        );
        // As `h5tile ls` shows them: the shuffle after '+'.
        let shuffled = Compression::new(Codec::Zstd, 1, true).unwrap();
        assert_eq!(
            Compression::parse("zstd:1+shuffle", false),
            Ok(Some(shuffled))
        );
        let lz4 = Compression::parse("LZ4 + Shuffle", false).unwrap().unwrap();
        assert_eq!((lz4.codec, lz4.shuffle), (Codec::Lz4, true));
        for bad in [
            "gzip",
            "zstd:x",
            "zstd:99",
            "deflate:10",
            "lz4:1",
            "none:3",
            "zstd+bitshuffle",
            "none+shuffle",
            "+shuffle",
        ] {
            let e = Compression::parse(bad, false).unwrap_err();
            assert!(
                e.contains(bad.split(':').next().unwrap().trim()) || e.contains(bad),
                "{bad}: {e}"
            );
        }
    }
}
