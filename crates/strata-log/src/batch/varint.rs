//! Zig-zag varints and varlongs as Kafka's `ByteUtils` encodes them.
//!
//! Format: the signed value is zig-zag mapped (`(n << 1) ^ (n >> 31)`, or
//! `>> 63` for a varlong), then written as unsigned LEB128: 7 bits per byte,
//! least significant group first, high bit set when more bytes follow.
//! A varint is at most 5 bytes and a varlong at most 10; a longer encoding is
//! an error (Kafka's "Varint is too long"), which the record reader reports as
//! an invalid record. As in Kafka, surplus high bits in the last permitted byte
//! are discarded rather than rejected.

use thiserror::Error;

/// The longest encoding of a varint.
pub const MAX_VARINT_LEN: usize = 5;
/// The longest encoding of a varlong.
pub const MAX_VARLONG_LEN: usize = 10;

/// Why a varint could not be read.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The input ended inside the encoding.
    #[error("input ended inside a varint")]
    Eof,
    /// The continuation bit was still set on the last permitted byte.
    #[error("varint longer than {max} bytes")]
    TooLong { max: usize },
}

/// Read a zig-zag varint (`i32`) at `*pos`, advancing `*pos` past it.
///
/// # Errors
/// [`VarintError::Eof`] when `buf` ends first, [`VarintError::TooLong`] past 5 bytes.
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Result<i32, VarintError> {
    let mut raw: u32 = 0;
    let mut shift = 0u32;
    let mut at = *pos;
    loop {
        let b = *buf.get(at).ok_or(VarintError::Eof)?;
        at += 1;
        if b & 0x80 == 0 {
            // Shifting into bits 32+ drops them, as Java's `b << 28` does.
            raw |= (b as u32).wrapping_shl(shift);
            break;
        }
        raw |= ((b & 0x7f) as u32) << shift;
        shift += 7;
        if shift > 28 {
            return Err(VarintError::TooLong {
                max: MAX_VARINT_LEN,
            });
        }
    }
    *pos = at;
    Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Read a zig-zag varlong (`i64`) at `*pos`, advancing `*pos` past it.
///
/// # Errors
/// [`VarintError::Eof`] when `buf` ends first, [`VarintError::TooLong`] past 10 bytes.
pub fn read_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, VarintError> {
    let mut raw: u64 = 0;
    let mut shift = 0u32;
    let mut at = *pos;
    loop {
        let b = *buf.get(at).ok_or(VarintError::Eof)?;
        at += 1;
        if b & 0x80 == 0 {
            raw |= (b as u64).wrapping_shl(shift);
            break;
        }
        raw |= ((b & 0x7f) as u64) << shift;
        shift += 7;
        if shift > 63 {
            return Err(VarintError::TooLong {
                max: MAX_VARLONG_LEN,
            });
        }
    }
    *pos = at;
    Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

/// Append the zig-zag varint encoding of `value` to `out`.
pub fn write_varint(out: &mut Vec<u8>, value: i32) {
    let mut v = ((value << 1) ^ (value >> 31)) as u32;
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Append the zig-zag varlong encoding of `value` to `out`.
pub fn write_varlong(out: &mut Vec<u8>, value: i64) {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bytes [`write_varint`] produces for `value`.
pub fn varint_size(value: i32) -> usize {
    let v = ((value << 1) ^ (value >> 31)) as u32;
    let bits = 32 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Bytes [`write_varlong`] produces for `value`.
pub fn varlong_size(value: i64) -> usize {
    let v = ((value << 1) ^ (value >> 63)) as u64;
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc32(v: i32) -> Vec<u8> {
        let mut out = Vec::new();
        write_varint(&mut out, v);
        out
    }

    fn enc64(v: i64) -> Vec<u8> {
        let mut out = Vec::new();
        write_varlong(&mut out, v);
        out
    }

    #[test]
    fn reference_examples() {
        // docs/kafka-behaviour.md §1.5.
        let cases: &[(i32, &[u8])] = &[
            (-1, &[0x01]),
            (0, &[0x00]),
            (1, &[0x02]),
            (63, &[0x7e]),
            (64, &[0x80, 0x01]),
            (-65, &[0x81, 0x01]),
            (300, &[0xd8, 0x04]),
        ];
        for (v, bytes) in cases {
            assert_eq!(enc32(*v), *bytes, "varint {v}");
            assert_eq!(enc64(*v as i64), *bytes, "varlong {v}");
            let mut pos = 0;
            assert_eq!(read_varint(bytes, &mut pos), Ok(*v));
            assert_eq!(pos, bytes.len());
        }
    }

    #[test]
    fn extremes_round_trip_with_max_lengths() {
        for v in [i32::MIN, i32::MAX, i32::MIN + 1, -64, 8191, -8193] {
            let b = enc32(v);
            assert_eq!(b.len(), varint_size(v));
            assert!(b.len() <= MAX_VARINT_LEN);
            let mut pos = 0;
            assert_eq!(read_varint(&b, &mut pos), Ok(v));
        }
        assert_eq!(enc32(i32::MIN).len(), 5);
        for v in [i64::MIN, i64::MAX, 0, -1, 1 << 40, -(1 << 50)] {
            let b = enc64(v);
            assert_eq!(b.len(), varlong_size(v));
            let mut pos = 0;
            assert_eq!(read_varlong(&b, &mut pos), Ok(v));
            assert_eq!(pos, b.len());
        }
        assert_eq!(enc64(i64::MIN).len(), 10);
    }

    #[test]
    fn too_long_encodings_are_rejected() {
        let six = [0x80, 0x80, 0x80, 0x80, 0x80, 0x00];
        let mut pos = 0;
        assert_eq!(
            read_varint(&six, &mut pos),
            Err(VarintError::TooLong { max: 5 })
        );
        assert_eq!(pos, 0, "position untouched on error");
        let eleven = [0x80u8; 11];
        let mut pos = 0;
        assert_eq!(
            read_varlong(&eleven, &mut pos),
            Err(VarintError::TooLong { max: 10 })
        );
        // Ten bytes with the last one terminating is fine.
        let mut ten = [0xffu8; 10];
        ten[9] = 0x01;
        let mut pos = 0;
        assert_eq!(read_varlong(&ten, &mut pos), Ok(i64::MIN));
    }

    #[test]
    fn truncated_input_is_eof() {
        let mut pos = 0;
        assert_eq!(read_varint(&[], &mut pos), Err(VarintError::Eof));
        assert_eq!(read_varint(&[0x80, 0x80], &mut pos), Err(VarintError::Eof));
        assert_eq!(read_varlong(&[0xff], &mut pos), Err(VarintError::Eof));
    }

    #[test]
    fn fifth_byte_high_bits_are_dropped_like_java() {
        // 0x7f in the fifth byte: Java computes (0x7f << 28) in 32 bits.
        let b = [0xff, 0xff, 0xff, 0xff, 0x7f];
        let mut pos = 0;
        let raw: u32 = 0x0fff_ffff | (0x7fu32 << 28);
        let expected = ((raw >> 1) as i32) ^ -((raw & 1) as i32);
        assert_eq!(read_varint(&b, &mut pos), Ok(expected));
    }
}
