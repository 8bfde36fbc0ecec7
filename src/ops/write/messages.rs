//! What ranks tell each other during a commit, as typed records: each kind is turned into
//! `u64` words (what the communicator moves) and back in one place, by `Message`.

use crate::geometry::tile::Tile;
use crate::layout::checksums::Summary;
use crate::layout::vds::TileBytes;

/// A record that travels between ranks as words. `Context` is what the receiver knows that
/// the words leave out (the number of dimensions, the element size).
pub trait Message: Sized {
    type Context<'c>: Copy;
    fn to_words(&self, out: &mut Vec<u64>);
    /// The record at the front of `words`, and how many words it took.
    fn from_words(words: &[u64], context: Self::Context<'_>) -> (Self, usize);
}

/// `items` as one message.
pub fn encode<M: Message>(items: &[M]) -> Vec<u64> {
    let mut out = Vec::new();
    items.iter().for_each(|m| m.to_words(&mut out));
    out
}

/// The records `encode` made of `words`.
pub fn decode<M: Message>(mut words: &[u64], context: M::Context<'_>) -> Vec<M> {
    let mut items = Vec::new();
    while !words.is_empty() {
        let (m, used) = M::from_words(words, context);
        items.push(m);
        words = &words[used..];
    }
    items
}

/// One tile a rank will write, as rank 0 (all tiles) or its group's first rank (the tiles of
/// its subfile) learns of it before anything is written. `k` numbers the rank's tiles over
/// every field of the commit, in field order; it names the tile's file or dataset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    pub rank: usize,
    pub k: usize,
    pub field: usize,
    pub tile: Tile,
}

/// Context: the number of dimensions of each field.
impl Message for Planned {
    type Context<'c> = &'c [usize];

    fn to_words(&self, out: &mut Vec<u64>) {
        out.extend([self.rank as u64, self.k as u64, self.field as u64]);
        out.extend(self.tile.offset.iter().chain(&self.tile.shape));
    }

    fn from_words(w: &[u64], ndims: &[usize]) -> (Planned, usize) {
        let field = w[2] as usize;
        let n = ndims[field];
        let tile = Tile::new(w[3..3 + n].to_vec(), w[3 + n..3 + 2 * n].to_vec());
        let planned = Planned {
            rank: w[0] as usize,
            k: w[1] as usize,
            field,
            tile,
        };
        (planned, 3 + 2 * n)
    }
}

/// Where a subfile's first rank allocated a tile of its group, sent to the group: the bytes of
/// its dataset, and where the tile is one of several filling a box stored as one dataset
/// (coalesced), that box.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocated {
    pub rank: usize,
    pub k: usize,
    pub bytes: TileBytes,
    pub within: Option<Tile>,
}

impl Message for Allocated {
    type Context<'c> = ();

    fn to_words(&self, out: &mut Vec<u64>) {
        let b = self.bytes;
        out.extend([self.rank as u64, self.k as u64, b.data_offset, b.file_size]);
        match &self.within {
            None => out.push(0),
            Some(t) => {
                out.push(t.ndim() as u64);
                out.extend(t.offset.iter().chain(&t.shape));
            }
        }
    }

    fn from_words(w: &[u64], (): ()) -> (Allocated, usize) {
        let bytes = TileBytes {
            data_offset: w[2],
            file_size: w[3],
        };
        let n = w[4] as usize;
        let within = (n > 0).then(|| Tile::new(w[5..5 + n].to_vec(), w[5 + n..5 + 2 * n].to_vec()));
        let allocated = Allocated {
            rank: w[0] as usize,
            k: w[1] as usize,
            bytes,
            within,
        };
        (allocated, 5 + 2 * n)
    }
}

/// The sizes of a compressed tile's stored chunks, in chunk order, sent to its subfile's
/// first rank, which reserves their places.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    pub rank: usize,
    pub k: usize,
    pub sizes: Vec<u64>,
}

impl Message for Encoded {
    type Context<'c> = ();

    fn to_words(&self, out: &mut Vec<u64>) {
        out.extend([self.rank as u64, self.k as u64, self.sizes.len() as u64]);
        out.extend(&self.sizes);
    }

    fn from_words(w: &[u64], (): ()) -> (Encoded, usize) {
        let n = w[2] as usize;
        let encoded = Encoded {
            rank: w[0] as usize,
            k: w[1] as usize,
            sizes: w[3..3 + n].to_vec(),
        };
        (encoded, 3 + n)
    }
}

/// Where a subfile's first rank reserved a compressed tile's chunks (their addresses, in
/// chunk order), sent to the group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reserved {
    pub rank: usize,
    pub k: usize,
    pub file_size: u64,
    pub addrs: Vec<u64>,
}

impl Message for Reserved {
    type Context<'c> = ();

    fn to_words(&self, out: &mut Vec<u64>) {
        out.extend([self.rank as u64, self.k as u64, self.file_size]);
        out.push(self.addrs.len() as u64);
        out.extend(&self.addrs);
    }

    fn from_words(w: &[u64], (): ()) -> (Reserved, usize) {
        let n = w[3] as usize;
        let reserved = Reserved {
            rank: w[0] as usize,
            k: w[1] as usize,
            file_size: w[2],
            addrs: w[4..4 + n].to_vec(),
        };
        (reserved, 4 + n)
    }
}

/// Which file holds a written tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlacedIn {
    /// A tile file of its own (the VDS layout).
    OwnFile,
    /// The subfile of the group whose first rank is this.
    Subfile(usize),
    /// The new master itself (the single-file layout).
    Master,
}

/// What a rank tells rank 0 about a tile it wrote: the master records it.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    pub k: usize,
    pub placed_in: PlacedIn,
    pub bytes: TileBytes,
    pub summary: Summary,
}

/// The record `placed[p.rank]` holds for planned tile `p` (each rank places its non-empty
/// tiles in the order of `k`).
pub fn placed_record<'a>(placed: &'a [Vec<Placed>], p: &Planned) -> &'a Placed {
    let at = placed[p.rank].binary_search_by_key(&p.k, |r| r.k);
    &placed[p.rank][at.expect("every non-empty tile was placed")]
}

const OWN_FILE: u64 = u64::MAX;
const MASTER: u64 = u64::MAX - 1;

/// Context: the element size of the sending rank's tile `k`.
impl Message for Placed {
    type Context<'c> = &'c dyn Fn(usize) -> usize;

    fn to_words(&self, out: &mut Vec<u64>) {
        let placed_in = match self.placed_in {
            PlacedIn::OwnFile => OWN_FILE,
            PlacedIn::Master => MASTER,
            PlacedIn::Subfile(first) => first as u64,
        };
        let b = self.bytes;
        out.extend([self.k as u64, placed_in, b.data_offset, b.file_size]);
        self.summary.to_words(out);
    }

    fn from_words(w: &[u64], elem_of: &dyn Fn(usize) -> usize) -> (Placed, usize) {
        let k = w[0] as usize;
        let (summary, used) = Summary::from_words(&w[4..], elem_of(k));
        let placed_in = match w[1] {
            OWN_FILE => PlacedIn::OwnFile,
            MASTER => PlacedIn::Master,
            first => PlacedIn::Subfile(first as usize),
        };
        let bytes = TileBytes {
            data_offset: w[2],
            file_size: w[3],
        };
        let placed = Placed {
            k,
            placed_in,
            bytes,
            summary,
        };
        (placed, 4 + used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::extremes::Extremes;

    #[test]
    fn every_record_comes_back_as_it_was_sent() {
        let planned = vec![
            Planned {
                rank: 3,
                k: 0,
                field: 1,
                tile: Tile::new(vec![4, 0, 2], vec![1, 2, 3]),
            },
            Planned {
                rank: 3,
                k: 1,
                field: 0,
                tile: Tile::new(vec![7], vec![0]),
            },
        ];
        assert_eq!(decode::<Planned>(&encode(&planned), &[1, 3]), planned);
        let bytes = TileBytes {
            data_offset: 4096,
            file_size: 1 << 40,
        };
        let allocated = vec![
            Allocated {
                rank: 9,
                k: 2,
                bytes,
                within: None,
            },
            Allocated {
                rank: 1,
                k: 0,
                bytes,
                within: Some(Tile::new(vec![0, 8], vec![4, 8])),
            },
        ];
        assert_eq!(decode::<Allocated>(&encode(&allocated), ()), allocated);
        let encoded = vec![
            Encoded {
                rank: 1,
                k: 4,
                sizes: vec![10, 20, 30],
            },
            Encoded {
                rank: 2,
                k: 0,
                sizes: vec![],
            },
        ];
        assert_eq!(decode::<Encoded>(&encode(&encoded), ()), encoded);
        let reserved = vec![Reserved {
            rank: 5,
            k: 1,
            file_size: 1 << 33,
            addrs: vec![4096, 8192],
        }];
        assert_eq!(decode::<Reserved>(&encode(&reserved), ()), reserved);
        let summary = Summary {
            sums: Some(vec![1, 2, 3]),
            extremes: Some(Extremes {
                nan: 2,
                min: vec![1, 2],
                max: vec![3, 4],
            }),
            chunk_sums: Some(vec![7, 8]),
        };
        let placed: Vec<Placed> = [PlacedIn::OwnFile, PlacedIn::Master, PlacedIn::Subfile(5)]
            .into_iter()
            .enumerate()
            .map(|(k, placed_in)| Placed {
                k,
                placed_in,
                bytes: TileBytes {
                    data_offset: 10 * k as u64,
                    file_size: 99,
                },
                summary: match k {
                    1 => Summary::default(),
                    _ => summary.clone(),
                },
            })
            .collect();
        let elem_of = |_k: usize| 2;
        assert_eq!(decode::<Placed>(&encode(&placed), &elem_of), placed);
        assert!(decode::<Placed>(&[], &elem_of).is_empty());
    }
}
