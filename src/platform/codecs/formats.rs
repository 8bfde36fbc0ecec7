//! The codecs' byte formats, as HDF5's registered filters read and write them.

pub(super) fn set_frame_checksums(
    d: &mut zstd::bulk::Decompressor<'static>,
    on: bool,
) -> Result<(), String> {
    d.set_parameter(zstd::zstd_safe::DParameter::ForceIgnoreChecksum(!on))
        .map_err(|e| format!("zstd: {e}"))
}

pub(super) fn zstd_compressor(level: i32) -> Result<zstd::bulk::Compressor<'static>, String> {
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
pub(super) fn lz4_header(input: &[u8]) -> Result<(u64, usize), String> {
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
pub(super) fn read_at_most(
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
