//! The `dwg` checkpoint validator: a saved AutoCAD drawing must be a DWG in the AutoCAD 2018
//! format, the one the benchmark contract pins (`../shared/spec/benchmark-contract.txt`: output
//! DWG format AutoCAD 2018): its first 6 bytes are the version string `AC1032`, and its file
//! header is the R2004-family header every AutoCAD 2004 to 2018 format shares: at byte `0x80`
//! `0x6C` bytes encrypted with the header's fixed pad (a linear congruential sequence from seed
//! 1), which decrypt to the file id `AcFssFcAJMB\0`. Another DWG version (`AC1027`, saved as
//! AutoCAD 2013) is named in the refusal; anything else is "not a DWG", never quoted.
//!
//! A valid signature is necessary, not sufficient: that the bytes differ from the reset file and
//! were written after the last input is the checkpoint's own rule (`checkpoint.rs`), the same for
//! every format, checked before this one. AutoCAD never runs here: a pure function of the bytes.

use crate::error::BrokerError;

/// The version string of the AutoCAD 2018 DWG format.
pub(crate) const DWG_2018_VERSION: &[u8; 6] = b"AC1032";
/// Where the encrypted file header starts, and its length.
const HEADER_AT: usize = 0x80;
const HEADER_LEN: usize = 0x6C;
/// What the encrypted header's first 12 bytes decrypt to.
const FILE_ID: &[u8; 12] = b"AcFssFcAJMB\0";

fn invalid(why: &str) -> BrokerError {
    BrokerError::ArtifactInvalid(format!(
        "save not proven: the attempt file {why}; save again from AutoCAD (Ctrl+S keeps the \
         AutoCAD 2018 format), then checkpoint"
    ))
}

/// The pad the R2004-family file header is XORed with: byte `i` is bits 16..24 of the `i+1`-th
/// value of `seed = seed * 0x343FD + 0x269EC3` from seed 1 (the same pad encrypts and decrypts).
pub(crate) fn header_pad(len: usize) -> Vec<u8> {
    let mut seed: u32 = 1;
    (0..len)
        .map(|_| {
            seed = seed.wrapping_mul(0x343FD).wrapping_add(0x269EC3);
            (seed >> 16) as u8
        })
        .collect()
}

/// Checks that `bytes` are an AutoCAD 2018 DWG; `artifact_invalid` says what is wrong.
pub(crate) fn validate_dwg(bytes: &[u8]) -> Result<(), BrokerError> {
    let Some(version) = bytes.get(..6) else {
        return Err(invalid(&format!(
            "has {} bytes, fewer than a DWG's version string",
            bytes.len()
        )));
    };
    if version != DWG_2018_VERSION {
        let other_dwg = version.starts_with(b"AC1") && version[3..].iter().all(u8::is_ascii_digit);
        return Err(if other_dwg {
            // Six ASCII characters of a known shape: safe to name.
            invalid(&format!(
                "is a DWG of version {}, not AC1032 (the AutoCAD 2018 format)",
                String::from_utf8_lossy(version)
            ))
        } else {
            invalid("is not a DWG: it does not open with a DWG version string")
        });
    }
    let Some(encrypted) = bytes.get(HEADER_AT..HEADER_AT + HEADER_LEN) else {
        return Err(invalid(&format!(
            "opens with AC1032 but has {} bytes, fewer than a DWG file header ({} bytes)",
            bytes.len(),
            HEADER_AT + HEADER_LEN
        )));
    };
    let file_id: Vec<u8> = encrypted
        .iter()
        .zip(header_pad(FILE_ID.len()))
        .map(|(byte, pad)| byte ^ pad)
        .collect();
    if file_id != FILE_ID {
        return Err(invalid(
            "opens with AC1032 but its file header does not decrypt to the DWG file id \
             (a damaged or unfinished save)",
        ));
    }
    Ok(())
}

/// Test fixture: a constructed AutoCAD 2018 file header (not a drawing AutoCAD wrote): `AC1032`,
/// zeros, the encrypted file id at `0x80` and `marker` in the bytes after the header, so two
/// markers give two different valid files.
#[cfg(test)]
pub(crate) fn fixture_dwg(marker: u8) -> Vec<u8> {
    let mut bytes = vec![0u8; 0x100];
    bytes[..6].copy_from_slice(DWG_2018_VERSION);
    let mut plain = [0u8; HEADER_LEN];
    plain[..FILE_ID.len()].copy_from_slice(FILE_ID);
    for ((out, plain), pad) in bytes[HEADER_AT..HEADER_AT + HEADER_LEN]
        .iter_mut()
        .zip(plain)
        .zip(header_pad(HEADER_LEN))
    {
        *out = plain ^ pad;
    }
    bytes.extend_from_slice(&[marker; 32]);
    bytes
}

#[cfg(test)]
mod tests;
