//! A dataset's filters, and the chunk encoder and decoder they make.

use super::*;
use crate::platform::shuffle::{shuffle, unshuffle, unshuffle_streaming};

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
