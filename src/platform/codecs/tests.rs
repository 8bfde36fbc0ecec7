//! The codecs against their formats and HDF5-compatible bytes.

use super::*;
use crate::platform::shuffle::unshuffle;
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
