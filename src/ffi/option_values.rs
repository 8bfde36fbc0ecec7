//! The option fields whose value may come from the environment, read and checked: the
//! compression (`H5TILE_COMPRESSION`), coalescing (`H5TILE_COALESCE`) and ranks per subfile
//! (`H5TILE_RANKS_PER_FILE`).

use super::options::{
    h5tile_compression, H5TILE_COMPRESS_DEFLATE, H5TILE_COMPRESS_LZ4, H5TILE_COMPRESS_NONE,
    H5TILE_COMPRESS_ZSTD,
};
use crate::ops::write::{Codec, Compression, Layout};
use crate::status::*;

/// The compression the options ask for: the field's codec at its level, else (for the
/// layouts that compress) the environment's `H5TILE_COMPRESSION`, else none; shuffled before
/// the codec with `shuffle`, which needs one.
pub(super) fn compression(
    (field, level): (h5tile_compression, i32),
    shuffle: bool,
    layout: Layout,
    environment: impl FnOnce() -> Option<String>,
) -> Result<Option<Compression>> {
    let codec = match field {
        H5TILE_COMPRESS_NONE => None,
        H5TILE_COMPRESS_ZSTD => Some(Codec::Zstd),
        H5TILE_COMPRESS_LZ4 => Some(Codec::Lz4),
        H5TILE_COMPRESS_DEFLATE => Some(Codec::Deflate),
        other => {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "compression {other}: expected H5TILE_COMPRESS_NONE, _ZSTD, _LZ4 or _DEFLATE"
                ),
            )
        }
    };
    let bad = |why: String| Error::new(H5TILE_ERR_INVALID_ARGUMENT, why);
    let chosen = match codec {
        Some(codec) => Some(Compression::new(codec, level, shuffle).map_err(bad)?),
        None if level != 0 => {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!("compression_level {level} without a codec in compression"),
            )
        }
        None if !layout.compresses() => None,
        None => match environment() {
            Some(v) if !v.trim().is_empty() => Compression::parse(&v, shuffle)
                .map_err(|why| bad(format!("H5TILE_COMPRESSION={v}: {why}")))?,
            _ => None,
        },
    };
    if shuffle && chosen.is_none() {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            "H5TILE_SHUFFLE without compression: give a codec in compression (or \
             H5TILE_COMPRESSION)",
        );
    }
    Ok(chosen)
}

/// `H5TILE_COALESCE` (unset: 1): whether the subfiled layout stores a group's tiles of a
/// dataset that together fill one box as one dataset, mapped once (1), or one dataset per tile
/// (0).
pub(super) fn coalesce(value: Option<String>) -> Result<bool> {
    match value.as_deref().map(str::trim) {
        None | Some("") | Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(other) => fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!(
                "H5TILE_COALESCE={other}: give 1 (a group's tiles filling one box stored as one \
                 dataset, the default) or 0 (one dataset per tile)"
            ),
        ),
    }
}

/// Ranks per subfile: the options field when set, else the environment's
/// `H5TILE_RANKS_PER_FILE`, else None (the whole node).
pub(super) fn ranks_per_file(
    field: u64,
    environment: impl FnOnce() -> Option<String>,
) -> Result<Option<usize>> {
    if field != 0 {
        return Ok(Some(usize::try_from(field).unwrap_or(usize::MAX)));
    }
    match environment().as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => match v.parse::<usize>() {
            Ok(k) if k >= 1 => Ok(Some(k)),
            _ => fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!("H5TILE_RANKS_PER_FILE={v}: expected a number of ranks, 1 or more"),
            ),
        },
    }
}
