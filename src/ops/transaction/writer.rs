//! A transaction's writers: any process or thread holding its token writes tiles, each to a
//! tile file of its own, and gets back a record of each for the commit. No MPI, no lock, no
//! state shared with the coordinator but the token and the tile folder.

use super::wire::{Record, Token};
use super::{random_u64, Declared};
use crate::layout;
use crate::ops::write::{self, Checkpoint, Field, LocalTile, WriteOptions};
use crate::platform::tile_bytes::{sync_paths, Durability};
use crate::status::*;
use std::os::unix::fs::MetadataExt;

/// Writes `tiles` of `dataset` for the transaction `token` (its bytes) and returns a record of
/// each, in order. Each tile goes to a new file in the tile folder, named by the transaction's
/// generation and an attempt identity of its own; the files are synced (unless the write
/// said `H5TILE_NO_SYNC`) before this returns. A tile with no elements writes nothing and
/// gets a record all the same. What fails removes the files this call made.
pub fn write_tiles(token: &[u8], dataset: &str, tiles: &[LocalTile]) -> Result<Vec<Vec<u8>>> {
    let token = Token::from_bytes(token)?;
    let f = field_index(&token, dataset)?;
    let declared = &token.fields[f];
    let field = Field {
        dataset: declared.dataset.clone(),
        dtype: declared.dtype,
        global: declared.global.clone(),
        tiles: tiles.to_vec(),
    };
    // The checks a rank of a collective write makes of its tiles: inside the shape, buffers
    // large enough.
    write::check(&Checkpoint {
        path: token.path.clone(),
        fields: vec![field.clone()],
        attributes: Vec::new(),
        options: WriteOptions {
            compression: token.compression,
            ..WriteOptions::default()
        },
    })?;
    let dir = layout::tile_dir(&token.path);
    if tiles.iter().any(|t| !t.tile.is_empty()) && !dir.is_dir() {
        return fail(
            H5TILE_ERR_NOT_FOUND,
            format!(
                "tile folder '{}' of the transaction is gone: it was aborted, or its \
                 coordinator exited and another write cleaned up after it",
                dir.display()
            ),
        );
    }
    let durability = match token.no_sync {
        false => Durability::SyncLater,
        true => Durability::Never,
    };
    let mut written = Vec::new();
    let outcome = (|| {
        let mut records = Vec::new();
        for (k, local) in tiles.iter().enumerate() {
            let record = write_one(&token, f, &field, local, durability, &mut written)
                .map_err(|e| e.context(&format!("tile {k} {}", local.tile)))?;
            records.push(record.to_bytes());
        }
        if durability == Durability::SyncLater {
            sync_paths(&written)?;
        }
        still_open(&token)?;
        Ok(records)
    })();
    if outcome.is_err() {
        for p in &written {
            let _ = std::fs::remove_file(p);
        }
    }
    outcome
}

/// Fails unless the transaction's coordinator still holds its lock, which it releases before
/// the cleanup of its commit or abort. Asked after this call's files are made, so a writer
/// still running when the transaction ended removes its files itself (the answer was no) or
/// they were there for the cleanup to see (yes): none is left behind.
fn still_open(token: &Token) -> Result<()> {
    if layout::in_flight::in_flight(&token.path, token.generation) {
        return Ok(());
    }
    fail(
        H5TILE_ERR_NOT_FOUND,
        format!(
            "transaction on '{}' ended before these tiles were written: it was committed or \
             aborted, or its coordinator exited; they are not kept",
            token.path.display()
        ),
    )
}

/// Writes one tile and returns its record; its file is pushed on `written` before it is made.
fn write_one(
    token: &Token,
    f: usize,
    field: &Field,
    local: &LocalTile,
    durability: Durability,
    written: &mut Vec<std::path::PathBuf>,
) -> Result<Record> {
    let attempt = random_u64();
    let mut record = Record {
        transaction: token.id,
        field: f,
        tile: local.tile.clone(),
        attempt,
        bytes: layout::vds::TileBytes {
            data_offset: 0,
            file_size: 0,
        },
        inode: 0,
        summary: Default::default(),
    };
    if local.tile.is_empty() {
        return Ok(record);
    }
    let path = tile_path(token, f, attempt);
    written.push(path.clone());
    let (bytes, summary) =
        write::write_tile_file(&path, field, local, token.compression, durability)?;
    let meta = std::fs::metadata(&path).map_err(|e| Error::io("cannot stat tile", &path, &e))?;
    record.bytes = bytes;
    record.inode = meta.ino();
    record.summary = summary;
    Ok(record)
}

/// The tile file of attempt `attempt` at field `f`'s tile: a tile file name (so that the
/// cleanup of later writes knows it by its generation) whose "rank" is the attempt.
pub fn tile_path(token: &Token, f: usize, attempt: u64) -> std::path::PathBuf {
    let name = layout::tile_file_name(
        &token.fields[f].dataset,
        token.generation,
        attempt as usize,
        0,
    );
    layout::tile_dir(&token.path).join(name)
}

/// The index of `dataset` among the token's fields.
fn field_index(token: &Token, dataset: &str) -> Result<usize> {
    let wanted = dataset.trim_start_matches('/');
    let names = |fields: &[Declared]| {
        fields
            .iter()
            .map(|d| format!("'{}'", d.dataset))
            .collect::<Vec<_>>()
            .join(", ")
    };
    token
        .fields
        .iter()
        .position(|d| d.dataset.trim_start_matches('/') == wanted)
        .ok_or_else(|| {
            Error::new(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "dataset '{dataset}' is not one of the transaction's: {}",
                    names(&token.fields)
                ),
            )
        })
}

/// The element type of the transaction's dataset `dataset`, whose tiles have `ndim` axes (as
/// a binding passes them, before it reads the buffer).
pub fn dtype_of(token: &[u8], dataset: &str, ndim: usize) -> Result<crate::dtype::Dtype> {
    let token = Token::from_bytes(token)?;
    let declared = &token.fields[field_index(&token, dataset)?];
    if declared.global.len() != ndim {
        return fail(
            H5TILE_ERR_SHAPE,
            format!(
                "dataset '{dataset}' has {} axes ({:?}); the tile has {ndim}",
                declared.global.len(),
                declared.global
            ),
        );
    }
    Ok(declared.dtype)
}
