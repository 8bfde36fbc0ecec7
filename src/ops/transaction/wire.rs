//! What a transaction's processes hand each other as plain bytes: the token (the coordinator's
//! write, for its writers) and the record of each tile written (a writer's, for the commit).
//! Bytes, so that any runtime can carry them (pickled by Python, sent by Dask or Legate, put in
//! a file); each ends in a checksum of the rest, so a truncated or altered one is refused
//! rather than misread.

use super::Declared;
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::layout::checksums::Summary;
use crate::layout::vds::TileBytes;
use crate::platform::codecs::{Codec, Compression};
use crate::platform::xxh3;
use crate::status::*;
use std::path::PathBuf;

const TOKEN_MAGIC: &[u8; 8] = b"h5tileT1";
const RECORD_MAGIC: &[u8; 8] = b"h5tileR1";

/// A transaction as its writers know it.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// Unique to this transaction: a record names it, and a commit takes only its own.
    pub id: u64,
    /// The generation its tile files are named by (`layout::tile_file_name`).
    pub generation: u64,
    /// The master's path, absolute: writers may run in other folders.
    pub path: PathBuf,
    pub fields: Vec<Declared>,
    pub compression: Option<Compression>,
    pub no_sync: bool,
    /// `H5TILE_ALLOW_PARTIAL` and `H5TILE_KEEP_OTHERS`, for a commit made from the token.
    pub allow_partial: bool,
    pub keep_others: bool,
}

/// What a writer tells the commit of one tile it wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The transaction's `Token::id`.
    pub transaction: u64,
    /// The index of its dataset among the token's fields.
    pub field: usize,
    pub tile: Tile,
    /// Unique to this write of this tile: its file's name holds it, so two attempts at one
    /// tile (a retried or speculative task) never share a file.
    pub attempt: u64,
    /// Where the tile file keeps the bytes, and its size.
    pub bytes: TileBytes,
    /// The tile file's inode: a file of the same name that is not the one written (replaced,
    /// copied back) does not match.
    pub inode: u64,
    /// Its checksums and extremes, taken as it was written.
    pub summary: Summary,
}

/// Bytes built word by word: `u64`s little-endian, byte strings as a length and the bytes.
#[derive(Default)]
struct Out(Vec<u8>);

impl Out {
    fn word(&mut self, w: u64) {
        self.0.extend_from_slice(&w.to_le_bytes());
    }
    fn words(&mut self, ws: &[u64]) {
        ws.iter().for_each(|&w| self.word(w));
    }
    fn bytes(&mut self, b: &[u8]) {
        self.word(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    /// The bytes, behind `magic` and followed by their checksum.
    fn seal(self, magic: &[u8; 8]) -> Vec<u8> {
        let mut all = magic.to_vec();
        all.extend_from_slice(&self.0);
        let sum = xxh3::oneshot(&all);
        all.extend_from_slice(&sum.to_le_bytes());
        all
    }
}

/// Bytes read back as `Out` wrote them; running past the end is an error, not a panic.
struct In<'a>(&'a [u8]);

impl<'a> In<'a> {
    /// The body of `sealed` if it starts with `magic` and its checksum holds.
    fn open(sealed: &'a [u8], magic: &[u8; 8], what: &str) -> Result<In<'a>> {
        let damaged = || {
            Error::new(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "{what} is not one h5tile made, or was cut or changed on its way \
                     ({} bytes)",
                    sealed.len()
                ),
            )
        };
        if sealed.len() < 16 || &sealed[..8] != magic {
            return Err(damaged());
        }
        let (body, sum) = sealed.split_at(sealed.len() - 8);
        if xxh3::oneshot(body).to_le_bytes() != sum {
            return Err(damaged());
        }
        Ok(In(&body[8..]))
    }
    fn word(&mut self) -> Result<u64> {
        let (w, rest) = self.0.split_first_chunk::<8>().ok_or_else(short)?;
        self.0 = rest;
        Ok(u64::from_le_bytes(*w))
    }
    fn words(&mut self, n: usize) -> Result<Vec<u64>> {
        (0..n).map(|_| self.word()).collect()
    }
    fn count(&mut self) -> Result<usize> {
        let n = self.word()?;
        match n <= self.0.len() as u64 {
            true => Ok(n as usize),
            false => Err(short()),
        }
    }
    fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.count()?;
        let (b, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(b)
    }
    fn text(&mut self) -> Result<String> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| short())
    }
}

fn short() -> Error {
    Error::new(
        H5TILE_ERR_INVALID_ARGUMENT,
        "token or record is malformed inside a valid checksum (made by another version of h5tile?)",
    )
}

const CODECS: [Codec; 3] = [Codec::Zstd, Codec::Lz4, Codec::Deflate];

impl Token {
    pub fn to_bytes(&self) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt;
        let mut out = Out::default();
        let flags =
            self.no_sync as u64 | (self.allow_partial as u64) << 1 | (self.keep_others as u64) << 2;
        out.words(&[self.id, self.generation, flags]);
        out.bytes(self.path.as_os_str().as_bytes());
        match self.compression {
            None => out.word(0),
            Some(c) => {
                let codec = CODECS.iter().position(|&k| k == c.codec).unwrap_or(0);
                out.words(&[1 + codec as u64, c.level as i64 as u64, c.shuffle as u64]);
            }
        }
        out.word(self.fields.len() as u64);
        for f in &self.fields {
            out.bytes(f.dataset.as_bytes());
            out.words(&[f.dtype.code() as u64, f.global.len() as u64]);
            out.words(&f.global);
        }
        out.seal(TOKEN_MAGIC)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Token> {
        use std::os::unix::ffi::OsStrExt;
        let mut r = In::open(bytes, TOKEN_MAGIC, "the transaction token")?;
        let (id, generation, flags) = (r.word()?, r.word()?, r.word()?);
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(r.bytes()?));
        let compression = match r.word()? {
            0 => None,
            c => {
                let codec = *CODECS.get(c as usize - 1).ok_or_else(short)?;
                let (level, shuffle) = (r.word()? as i64 as i32, r.word()? != 0);
                Some(Compression::new(codec, level, shuffle).map_err(|_| short())?)
            }
        };
        let fields = (0..r.count()?)
            .map(|_| {
                let dataset = r.text()?;
                let code = r.word()?;
                let dtype = Dtype::from_c(code as _).ok_or_else(short)?;
                let ndim = r.count()?;
                Ok(Declared {
                    dataset,
                    dtype,
                    global: r.words(ndim)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Token {
            id,
            generation,
            path,
            fields,
            compression,
            no_sync: flags & 1 != 0,
            allow_partial: flags & 2 != 0,
            keep_others: flags & 4 != 0,
        })
    }
}

impl Record {
    /// Its bytes; `elem` is its dataset's element size.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Out::default();
        let b = self.bytes;
        out.words(&[self.transaction, self.field as u64, self.attempt]);
        out.word(self.tile.ndim() as u64);
        out.words(&self.tile.offset);
        out.words(&self.tile.shape);
        out.words(&[b.data_offset, b.file_size, self.inode]);
        let mut summary = Vec::new();
        self.summary.to_words(&mut summary);
        out.word(summary.len() as u64);
        out.words(&summary);
        out.seal(RECORD_MAGIC)
    }

    /// The record `bytes` hold; `elem_of(field)` is the element size of the dataset of the
    /// token's field `field` (None where the token has no such field).
    pub fn from_bytes(bytes: &[u8], elem_of: impl Fn(usize) -> Option<usize>) -> Result<Record> {
        let mut r = In::open(bytes, RECORD_MAGIC, "the tile record")?;
        let (transaction, field, attempt) = (r.word()?, r.word()? as usize, r.word()?);
        let ndim = r.count()?;
        let tile = Tile::new(r.words(ndim)?, r.words(ndim)?);
        let bytes = TileBytes {
            data_offset: r.word()?,
            file_size: r.word()?,
        };
        let inode = r.word()?;
        let n = r.count()?;
        let words = r.words(n)?;
        let summary = match elem_of(field) {
            Some(elem) if !words.is_empty() => Summary::from_words(&words, elem).0,
            _ => Summary::default(),
        };
        Ok(Record {
            transaction,
            field,
            tile,
            attempt,
            bytes,
            inode,
            summary,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::extremes::Extremes;

    fn token() -> Token {
        Token {
            id: 0xfeed,
            generation: 42,
            path: PathBuf::from("/run/out/a b.h5"),
            fields: vec![
                Declared {
                    dataset: "/u".into(),
                    dtype: Dtype::Float64,
                    global: vec![8, 6],
                },
                Declared {
                    dataset: "/g/v".into(),
                    dtype: Dtype::Int16,
                    global: vec![5],
                },
            ],
            compression: Some(Compression::new(Codec::Lz4, 0, true).unwrap()),
            no_sync: true,
            allow_partial: false,
            keep_others: true,
        }
    }

    #[test]
    fn tokens_and_records_come_back_as_they_were_made() {
        let t = token();
        assert_eq!(Token::from_bytes(&t.to_bytes()).unwrap(), t);
        let plain = Token {
            compression: None,
            ..t.clone()
        };
        assert_eq!(Token::from_bytes(&plain.to_bytes()).unwrap(), plain);
        let record = Record {
            transaction: t.id,
            field: 1,
            tile: Tile::new(vec![2], vec![3]),
            attempt: u64::MAX - 3,
            bytes: TileBytes {
                data_offset: 4096,
                file_size: 4102,
            },
            inode: 77,
            summary: Summary {
                sums: Some(vec![9]),
                extremes: Some(Extremes {
                    nan: 0,
                    min: vec![1, 0],
                    max: vec![7, 0],
                }),
                chunk_sums: None,
            },
        };
        let back = Record::from_bytes(&record.to_bytes(), |f| (f == 1).then_some(2)).unwrap();
        assert_eq!(back, record);
    }

    /// A token or record cut short, with a byte changed, or of the other kind is refused as
    /// an invalid argument, never misread.
    #[test]
    fn damaged_bytes_are_refused() {
        let bytes = token().to_bytes();
        let mut changed = bytes.clone();
        changed[20] ^= 1;
        for bad in [
            &bytes[..bytes.len() - 1],
            &changed[..],
            &bytes[..4],
            &[][..],
        ] {
            let e = Token::from_bytes(bad).unwrap_err();
            assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
            assert!(e
                .message
                .starts_with("the transaction token is not one h5tile made"));
        }
        let e = Record::from_bytes(&bytes, |_| Some(8)).unwrap_err();
        assert!(e
            .message
            .starts_with("the tile record is not one h5tile made"));
    }
}
