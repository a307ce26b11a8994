//! Compression codecs of the records section (§1.7), bounded on the way in.
//!
//! Decompression never trusts a length read from the input: output is capped
//! at a caller-given limit ([`DEFAULT_MAX_DECOMPRESSED`] by default) and every
//! codec is read incrementally, so a hostile batch can cost at most `limit`
//! bytes of memory (plus the codec's own bounded working state).
//!
//! Stream formats:
//!
//! - gzip: RFC 1952 members (concatenated members are read as one stream, as
//!   Java's `GZIPInputStream` does).
//! - snappy: xerial snappy-java framing, see [`SNAPPY_XERIAL_MAGIC`].
//! - lz4: the LZ4 frame format; written with 64 KiB independent blocks, no
//!   block or content checksum and no content size, exactly as Kafka writes.
//! - zstd: a standard zstd frame.
//!
//! Compressed bytes need not match Java's encoders: Kafka only checks the CRC.

use std::io::{Read, Write};

use super::error::{BatchError, DecompressionFault};
use super::Compression;

/// Default cap on the decompressed size of one batch's records section.
pub const DEFAULT_MAX_DECOMPRESSED: usize = 64 << 20;

/// Format: the xerial snappy-java stream header, 16 bytes:
///
/// ```text
/// 0  magic    0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00
/// 8  version  i32 BE (= 1)
/// 12 compat   i32 BE (= 1)
/// 16 chunks   repeated { length i32 BE, raw snappy block of `length` bytes }
/// ```
///
/// A chunk position may instead hold another 16-byte header (concatenated
/// streams). Input that does not start with the magic is one raw snappy block,
/// which snappy-java also accepts.
pub const SNAPPY_XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const SNAPPY_XERIAL_HEADER_LEN: usize = 16;
/// snappy-java's default block size (`SnappyOutputStream.DEFAULT_BLOCK_SIZE`).
const SNAPPY_BLOCK_SIZE: usize = 32 * 1024;

fn fault(codec: Compression, reason: DecompressionFault) -> BatchError {
    BatchError::Decompression {
        codec: codec.name(),
        reason,
    }
}

fn too_large(codec: Compression, limit: usize) -> BatchError {
    BatchError::DecompressedTooLarge {
        codec: codec.name(),
        limit,
    }
}

/// Decompress `input` and append the result to `out`, producing at most
/// `limit` bytes. `out` is not cleared, so a buffer can be reused.
///
/// # Errors
/// [`BatchError::Decompression`] for a corrupt or truncated stream,
/// [`BatchError::DecompressedTooLarge`] past `limit`. `Compression::None`
/// copies the input (subject to the same limit).
pub fn decompress_into(
    codec: Compression,
    input: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), BatchError> {
    match codec {
        Compression::None => {
            if input.len() > limit {
                return Err(too_large(codec, limit));
            }
            out.extend_from_slice(input);
            Ok(())
        }
        Compression::Gzip => {
            read_bounded(codec, flate2::read::MultiGzDecoder::new(input), out, limit)
        }
        Compression::Snappy => snappy_xerial_decompress(input, out, limit),
        Compression::Lz4 => {
            read_bounded(codec, lz4_flex::frame::FrameDecoder::new(input), out, limit)
        }
        Compression::Zstd => {
            let decoder = zstd::stream::read::Decoder::with_buffer(input)
                .map_err(|_| fault(codec, DecompressionFault::Corrupt))?;
            read_bounded(codec, decoder, out, limit)
        }
    }
}

/// [`decompress_into`] a fresh buffer.
///
/// # Errors
/// As [`decompress_into`].
pub fn decompress(codec: Compression, input: &[u8], limit: usize) -> Result<Vec<u8>, BatchError> {
    let mut out = Vec::new();
    decompress_into(codec, input, &mut out, limit)?;
    Ok(out)
}

/// Read a decoder to its end, refusing to grow `out` by more than `limit`.
fn read_bounded<R: Read>(
    codec: Compression,
    reader: R,
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), BatchError> {
    let start = out.len();
    // One byte more than the limit tells "exactly at the limit" from "beyond".
    let mut bounded = reader.take(limit as u64 + 1);
    match bounded.read_to_end(out) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            out.truncate(start);
            return Err(fault(codec, DecompressionFault::UnexpectedEnd));
        }
        Err(_) => {
            out.truncate(start);
            return Err(fault(codec, DecompressionFault::Corrupt));
        }
    }
    if out.len() - start > limit {
        out.truncate(start);
        return Err(too_large(codec, limit));
    }
    Ok(())
}

fn snappy_xerial_decompress(
    input: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), BatchError> {
    let codec = Compression::Snappy;
    let start = out.len();
    let result = (|| {
        if !input.starts_with(&SNAPPY_XERIAL_MAGIC) {
            return snappy_raw_block(input, out, start, limit);
        }
        let mut pos = 0;
        while pos < input.len() {
            if input[pos..].starts_with(&SNAPPY_XERIAL_MAGIC) {
                if input.len() - pos < SNAPPY_XERIAL_HEADER_LEN {
                    return Err(fault(codec, DecompressionFault::UnexpectedEnd));
                }
                pos += SNAPPY_XERIAL_HEADER_LEN;
                continue;
            }
            let Some(len_bytes) = input.get(pos..pos + 4) else {
                return Err(fault(codec, DecompressionFault::UnexpectedEnd));
            };
            let length = i32::from_be_bytes(len_bytes.try_into().expect("4 bytes"));
            pos += 4;
            let chunk = usize::try_from(length)
                .ok()
                .and_then(|len| input.get(pos..pos.checked_add(len)?))
                .ok_or_else(|| fault(codec, DecompressionFault::BadChunkLength { length }))?;
            snappy_raw_block(chunk, out, start, limit)?;
            pos += chunk.len();
        }
        Ok(())
    })();
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Decode one raw snappy block, checking its declared length against the limit
/// before allocating.
fn snappy_raw_block(
    block: &[u8],
    out: &mut Vec<u8>,
    start: usize,
    limit: usize,
) -> Result<(), BatchError> {
    let codec = Compression::Snappy;
    let len =
        snap::raw::decompress_len(block).map_err(|_| fault(codec, DecompressionFault::Corrupt))?;
    if out.len() - start + len > limit {
        return Err(too_large(codec, limit));
    }
    let at = out.len();
    out.resize(at + len, 0);
    match snap::raw::Decoder::new().decompress(block, &mut out[at..]) {
        Ok(n) if n == len => Ok(()),
        _ => Err(fault(codec, DecompressionFault::Corrupt)),
    }
}

/// Compress `input` with `codec`, appending the stream to `out`.
/// `Compression::None` appends the input unchanged.
pub fn compress_into(codec: Compression, input: &[u8], out: &mut Vec<u8>) {
    match codec {
        Compression::None => out.extend_from_slice(input),
        Compression::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            enc.write_all(input).expect("writing to a Vec cannot fail");
            enc.finish().expect("writing to a Vec cannot fail");
        }
        Compression::Snappy => {
            out.extend_from_slice(&SNAPPY_XERIAL_MAGIC);
            out.extend_from_slice(&1i32.to_be_bytes()); // version
            out.extend_from_slice(&1i32.to_be_bytes()); // compat
            let mut enc = snap::raw::Encoder::new();
            for block in input.chunks(SNAPPY_BLOCK_SIZE) {
                let compressed = enc.compress_vec(block).expect("block within snappy limits");
                out.extend_from_slice(&(compressed.len() as i32).to_be_bytes());
                out.extend_from_slice(&compressed);
            }
        }
        Compression::Lz4 => {
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent)
                .block_checksums(false)
                .content_checksum(false);
            let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, out);
            enc.write_all(input).expect("writing to a Vec cannot fail");
            enc.finish().expect("writing to a Vec cannot fail");
        }
        Compression::Zstd => {
            // Level 3 is Kafka's default `compression.zstd.level`.
            let compressed = zstd::bulk::compress(input, 3).expect("zstd compression of a buffer");
            out.extend_from_slice(&compressed);
        }
    }
}

/// [`compress_into`] a fresh buffer.
pub fn compress(codec: Compression, input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    compress_into(codec, input, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i % 251) as u8 ^ (i / 1000) as u8)
            .collect()
    }

    #[test]
    fn every_codec_round_trips_small_and_multi_block_inputs() {
        for codec in ALL {
            for len in [0, 1, 100, SNAPPY_BLOCK_SIZE + 7, 200_000] {
                let data = sample(len);
                let c = compress(codec, &data);
                let d = decompress(codec, &c, DEFAULT_MAX_DECOMPRESSED).unwrap();
                assert_eq!(d, data, "{} len {len}", codec.name());
            }
        }
    }

    #[test]
    fn snappy_uses_xerial_framing_with_32k_chunks() {
        let data = sample(SNAPPY_BLOCK_SIZE * 2 + 1);
        let c = compress(Compression::Snappy, &data);
        assert_eq!(&c[..8], &SNAPPY_XERIAL_MAGIC);
        assert_eq!(&c[8..16], &[0, 0, 0, 1, 0, 0, 0, 1]);
        // Walk the chunks: three of them.
        let mut pos = 16;
        let mut chunks = 0;
        while pos < c.len() {
            let len = i32::from_be_bytes(c[pos..pos + 4].try_into().unwrap()) as usize;
            pos += 4 + len;
            chunks += 1;
        }
        assert_eq!((pos, chunks), (c.len(), 3));
    }

    #[test]
    fn snappy_accepts_concatenated_streams_and_raw_blocks() {
        let mut two = compress(Compression::Snappy, b"hello ");
        two.extend(compress(Compression::Snappy, b"world"));
        assert_eq!(
            decompress(Compression::Snappy, &two, 100).unwrap(),
            b"hello world"
        );
        let raw = snap::raw::Encoder::new()
            .compress_vec(b"raw block")
            .unwrap();
        assert_eq!(
            decompress(Compression::Snappy, &raw, 100).unwrap(),
            b"raw block"
        );
    }

    #[test]
    fn lz4_frame_descriptor_is_kafkas() {
        let c = compress(Compression::Lz4, b"abc");
        assert_eq!(&c[..4], &[0x04, 0x22, 0x4d, 0x18]);
        // FLG: version 01, block independence, nothing else; BD: 64 KiB.
        assert_eq!(c[4], 0x60);
        assert_eq!(c[5], 0x40);
        // End mark, no content checksum.
        assert_eq!(&c[c.len() - 4..], &[0, 0, 0, 0]);
    }

    #[test]
    fn output_is_capped_at_the_limit() {
        let data = vec![0u8; 1 << 20];
        for codec in ALL {
            let c = compress(codec, &data);
            let mut out = b"keep".to_vec();
            let err = decompress_into(codec, &c, &mut out, 1000).unwrap_err();
            assert_eq!(
                err,
                BatchError::DecompressedTooLarge {
                    codec: codec.name(),
                    limit: 1000
                }
            );
            assert_eq!(out, b"keep", "{}: buffer restored", codec.name());
            // Exactly at the limit is fine.
            assert_eq!(decompress(codec, &c, 1 << 20).unwrap().len(), 1 << 20);
        }
    }

    #[test]
    fn snappy_hostile_declared_length_is_refused_before_allocating() {
        // A raw block claiming ~4 GiB of output.
        let mut hostile = SNAPPY_XERIAL_MAGIC.to_vec();
        hostile.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 5]);
        hostile.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(matches!(
            decompress(Compression::Snappy, &hostile, DEFAULT_MAX_DECOMPRESSED),
            Err(BatchError::DecompressedTooLarge { .. })
        ));
    }

    #[test]
    fn garbage_and_truncation_are_decompression_errors() {
        let garbage = b"definitely not a compressed stream at all";
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let err = decompress(codec, garbage, 1 << 20).unwrap_err();
            assert!(
                matches!(err, BatchError::Decompression { .. }),
                "{}: {err:?}",
                codec.name()
            );
            let c = compress(codec, &sample(5000));
            let err = decompress(codec, &c[..c.len() / 2], 1 << 20).unwrap_err();
            assert!(
                matches!(err, BatchError::Decompression { .. }),
                "{} truncated: {err:?}",
                codec.name()
            );
        }
        let mut bad_chunk = SNAPPY_XERIAL_MAGIC.to_vec();
        bad_chunk.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(
            decompress(Compression::Snappy, &bad_chunk, 100).unwrap_err(),
            BatchError::Decompression {
                codec: "snappy",
                reason: DecompressionFault::BadChunkLength { length: -2 }
            }
        );
    }
}
