//! The codec and level users choose for compressed tiles, as they write them.

use super::*;
use std::ops::RangeInclusive;

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
