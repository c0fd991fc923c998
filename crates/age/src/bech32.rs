//! Bech32 (BIP 173) without the 90-character limit, as the age specification uses it: the
//! hybrid recipients are almost 2,000 characters long.

const CHARSET: &[u8; 32] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";
const GENERATOR: [u32; 5] = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];

fn polymod(values: impl Iterator<Item = u8>) -> u32 {
    let mut check = 1u32;
    for value in values {
        let top = check >> 25;
        check = ((check & 0x1ff_ffff) << 5) ^ u32::from(value);
        for (i, generator) in GENERATOR.iter().enumerate() {
            if (top >> i) & 1 == 1 {
                check ^= generator;
            }
        }
    }
    check
}

fn hrp_expand(hrp: &[u8]) -> impl Iterator<Item = u8> + '_ {
    hrp.iter()
        .map(|c| c.to_ascii_lowercase() >> 5)
        .chain([0])
        .chain(hrp.iter().map(|c| c.to_ascii_lowercase() & 31))
}

/// Encodes `data` under the lowercase `hrp`; the result is lowercase.
pub(crate) fn encode(hrp: &str, data: &[u8]) -> String {
    let mut values = Vec::with_capacity(data.len() * 8 / 5 + 2);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &byte in data {
        acc = (acc << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            values.push(((acc >> bits) & 31) as u8);
        }
        acc &= (1 << bits) - 1;
    }
    if bits > 0 {
        values.push(((acc << (5 - bits)) & 31) as u8);
    }
    let hrp = hrp.to_ascii_lowercase();
    let check = polymod(
        hrp_expand(hrp.as_bytes())
            .chain(values.iter().copied())
            .chain([0; 6]),
    ) ^ 1;
    let mut out = String::with_capacity(hrp.len() + 1 + values.len() + 6);
    out.push_str(&hrp);
    out.push('1');
    out.extend(values.iter().map(|&v| CHARSET[usize::from(v)] as char));
    out.extend((0..6).map(|i| CHARSET[((check >> (5 * (5 - i))) & 31) as usize] as char));
    out
}

/// Decodes a Bech32 string: all lowercase or all uppercase, checksum over the lowercase
/// form, padding bits zero. Returns the human-readable part as written, and the data.
pub(crate) fn decode(s: &str) -> Result<(String, Vec<u8>), &'static str> {
    let bytes = s.as_bytes();
    if bytes.iter().any(|c| !(33..=126).contains(c)) {
        return Err("invalid character");
    }
    let has_lower = bytes.iter().any(u8::is_ascii_lowercase);
    let has_upper = bytes.iter().any(u8::is_ascii_uppercase);
    if has_lower && has_upper {
        return Err("mixed case");
    }
    let pos = s.rfind('1').ok_or("no separator")?;
    if pos < 1 || pos + 7 > bytes.len() {
        return Err("separator at an invalid position");
    }
    let hrp = &s[..pos];
    let mut values = Vec::with_capacity(bytes.len() - pos - 1);
    for &c in &bytes[pos + 1..] {
        let c = c.to_ascii_lowercase();
        let value = CHARSET
            .iter()
            .position(|&x| x == c)
            .ok_or("invalid character")?;
        values.push(value as u8);
    }
    if polymod(hrp_expand(hrp.as_bytes()).chain(values.iter().copied())) != 1 {
        return Err("invalid checksum");
    }
    values.truncate(values.len() - 6);
    let mut data = Vec::with_capacity(values.len() * 5 / 8);
    let (mut acc, mut bits) = (0u32, 0u32);
    for value in values {
        acc = (acc << 5) | u32::from(value);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            data.push(((acc >> bits) & 0xff) as u8);
        }
        acc &= (1 << bits) - 1;
    }
    if bits >= 5 || acc != 0 {
        return Err("invalid padding");
    }
    Ok((hrp.to_string(), data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_case() {
        let data: Vec<u8> = (0..=255).collect();
        let encoded = encode("age", &data);
        assert_eq!(decode(&encoded).unwrap(), ("age".to_string(), data.clone()));
        let upper = encoded.to_ascii_uppercase();
        assert_eq!(decode(&upper).unwrap(), ("AGE".to_string(), data));
        let mut mixed = encoded.clone();
        mixed.replace_range(0..1, "A");
        assert_eq!(decode(&mixed), Err("mixed case"));
        let mut flipped = encoded.into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'q' { b'p' } else { b'q' };
        assert_eq!(
            decode(std::str::from_utf8(&flipped).unwrap()),
            Err("invalid checksum")
        );
    }

    #[test]
    fn spec_example_recipient() {
        // The X25519 recipient of the age specification.
        let (hrp, data) =
            decode("age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwj").unwrap();
        assert_eq!(hrp, "age");
        assert_eq!(data.len(), 32);
        assert_eq!(
            encode("age", &data),
            "age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwj"
        );
    }
}
