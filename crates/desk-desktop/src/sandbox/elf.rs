//! Just enough of ELF for the sandbox's allowlist ([`super::view`]): whether a file is ELF, and
//! what a 64-bit little-endian ELF file asks of the loader (its interpreter, `DT_NEEDED`
//! names, `DT_RUNPATH`/`DT_RPATH`). Reads headers only, never the whole file.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Whether `path` starts with the ELF magic.
pub(super) fn is_elf(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut magic))
        .is_ok_and(|()| &magic == b"\x7fELF")
}

/// What an ELF file asks of the loader.
#[derive(Debug, Default)]
pub(super) struct ElfDeps {
    /// `PT_INTERP`: the loader.
    pub(super) interp: Option<PathBuf>,
    /// `DT_NEEDED` names.
    pub(super) needed: Vec<String>,
    /// `DT_RUNPATH` and `DT_RPATH` lists (colon-separated, `$ORIGIN` unexpanded).
    pub(super) runpath: Vec<String>,
}

/// The interpreter, `DT_NEEDED` names and run paths of a 64-bit little-endian ELF file; `None`
/// for anything else.
pub(super) fn deps(path: &Path) -> Option<ElfDeps> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut header = [0u8; 64];
    file.read_exact(&mut header).ok()?;
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let u16_at = |bytes: &[u8], at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let u64_at = |bytes: &[u8], at: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(word)
    };
    let phoff = u64_at(&header, 32);
    let phentsize = usize::from(u16_at(&header, 54));
    let phnum = usize::from(u16_at(&header, 56));
    if phentsize < 56 || phnum > 256 {
        return None;
    }
    let mut table = vec![0u8; phentsize * phnum];
    file.seek(SeekFrom::Start(phoff)).ok()?;
    file.read_exact(&mut table).ok()?;
    let mut read_at = |offset: u64, len: u64| -> Option<Vec<u8>> {
        let len = usize::try_from(len).ok().filter(|len| *len <= 1 << 24)?;
        let mut bytes = vec![0u8; len];
        file.seek(SeekFrom::Start(offset)).ok()?;
        file.read_exact(&mut bytes).ok()?;
        Some(bytes)
    };
    let mut deps = ElfDeps::default();
    let mut loads = Vec::new();
    let mut dynamic = None;
    for entry in table.chunks_exact(phentsize) {
        let kind = u32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]);
        let (offset, vaddr, filesz) = (u64_at(entry, 8), u64_at(entry, 16), u64_at(entry, 32));
        match kind {
            1 => loads.push((vaddr, offset, filesz)),
            2 => dynamic = Some((offset, filesz)),
            3 => {
                let bytes = read_at(offset, filesz)?;
                let text = bytes.split(|byte| *byte == 0).next()?;
                deps.interp = Some(PathBuf::from(String::from_utf8_lossy(text).into_owned()));
            }
            _ => {}
        }
    }
    let Some((offset, size)) = dynamic else {
        return Some(deps);
    };
    let entries = read_at(offset, size)?;
    let mut strtab = None;
    let mut strsz = 0;
    let mut names = Vec::new();
    for entry in entries.chunks_exact(16) {
        let (tag, value) = (u64_at(entry, 0), u64_at(entry, 8));
        match tag {
            0 => break,
            1 | 15 | 29 => names.push((tag, value)),
            5 => strtab = Some(value),
            10 => strsz = value,
            _ => {}
        }
    }
    let strtab = strtab?;
    let (vaddr, file_offset, _) = loads
        .iter()
        .find(|(vaddr, _, filesz)| (*vaddr..vaddr + filesz).contains(&strtab))?;
    let strings = read_at(strtab - vaddr + file_offset, strsz)?;
    for (tag, at) in names {
        let at = usize::try_from(at).ok()?;
        let text = strings.get(at..)?.split(|byte| *byte == 0).next()?;
        let text = String::from_utf8_lossy(text).into_owned();
        if tag == 1 {
            deps.needed.push(text);
        } else {
            deps.runpath.push(text);
        }
    }
    Some(deps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_needs_libc_through_the_loader_and_a_text_file_is_not_elf() {
        let env = std::fs::canonicalize("/usr/bin/env").unwrap();
        assert!(is_elf(&env));
        let found = deps(&env).unwrap();
        assert!(
            found.needed.iter().any(|name| name.starts_with("libc.so")),
            "{found:?}"
        );
        assert!(found.interp.is_some_and(|interp| interp.is_absolute()));
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("script");
        std::fs::write(&text, "#!/bin/sh\n").unwrap();
        assert!(!is_elf(&text));
        assert!(deps(&text).is_none());
        // Truncated after the magic: not read past its end.
        std::fs::write(&text, b"\x7fELF\x02\x01").unwrap();
        assert!(deps(&text).is_none());
    }
}
