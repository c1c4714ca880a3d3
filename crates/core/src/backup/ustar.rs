//! A small POSIX ustar archive format: 512-byte headers and data blocks, grouped into records
//! of a fixed size (pax `-b 32256` uses 63 blocks). Only what the backup study needs: regular
//! files and directories, names up to 255 bytes (prefix + name), sizes below 8 GiB.

use anyhow::{bail, Result};

pub(crate) const BLOCK: usize = 512;
/// The record size of the backup study: `pax -b 32256`.
pub(crate) const PAX_RECORD: usize = 32256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub name: String,
    pub kind: Kind,
    pub size: u64,
    pub mode: u32,
    pub mtime: u64,
}

fn put_octal(field: &mut [u8], value: u64) -> Result<()> {
    // Width-1 octal digits then NUL.
    let digits = field.len() - 1;
    let s = format!("{value:0digits$o}");
    if s.len() > digits {
        bail!(
            "value {value} does not fit a {}-byte ustar field",
            field.len()
        );
    }
    field[..digits].copy_from_slice(s.as_bytes());
    field[digits] = 0;
    Ok(())
}

fn get_octal(field: &[u8]) -> Result<u64> {
    let s: String = field
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| b as char)
        .collect();
    let t = s.trim();
    if t.is_empty() {
        return Ok(0);
    }
    u64::from_str_radix(t, 8).map_err(|_| anyhow::anyhow!("bad octal field '{t}' in ustar header"))
}

fn checksum(h: &[u8; BLOCK]) -> u64 {
    h.iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                b' ' as u64
            } else {
                b as u64
            }
        })
        .sum()
}

/// Split a path into ustar (prefix, name).
fn split_name(path: &str) -> Result<(&str, &str)> {
    if path.len() <= 100 {
        return Ok(("", path));
    }
    for (i, c) in path.char_indices() {
        if c == '/' && i <= 155 && path.len() - i - 1 <= 100 && path.len() - i - 1 > 0 {
            return Ok((&path[..i], &path[i + 1..]));
        }
    }
    bail!("name '{path}' is too long for a ustar header")
}

/// The 512-byte header of an entry.
pub(crate) fn header(e: &Entry) -> Result<[u8; BLOCK]> {
    let mut h = [0u8; BLOCK];
    let mut name = e.name.clone();
    if e.kind == Kind::Dir && !name.ends_with('/') {
        name.push('/');
    }
    let (prefix, short) = split_name(&name)?;
    h[..short.len()].copy_from_slice(short.as_bytes());
    put_octal(&mut h[100..108], e.mode as u64 & 0o7777)?;
    put_octal(&mut h[108..116], 0)?;
    put_octal(&mut h[116..124], 0)?;
    put_octal(
        &mut h[124..136],
        if e.kind == Kind::File { e.size } else { 0 },
    )?;
    put_octal(&mut h[136..148], e.mtime)?;
    h[156] = if e.kind == Kind::File { b'0' } else { b'5' };
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
    let sum = checksum(&h);
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    Ok(h)
}

/// Parse a header block; `None` for an all-zero block (end of archive).
pub(crate) fn parse_header(h: &[u8; BLOCK]) -> Result<Option<Entry>> {
    if h.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    if &h[257..262] != b"ustar" {
        bail!("not a ustar header (no magic)");
    }
    let stored = get_octal(&h[148..156])?;
    if stored != checksum(h) {
        bail!("ustar header checksum mismatch");
    }
    let cstr = |f: &[u8]| -> String {
        String::from_utf8_lossy(&f[..f.iter().position(|&b| b == 0).unwrap_or(f.len())]).to_string()
    };
    let prefix = cstr(&h[345..500]);
    let short = cstr(&h[..100]);
    let mut name = if prefix.is_empty() {
        short
    } else {
        format!("{prefix}/{short}")
    };
    let kind = match h[156] {
        b'0' | 0 => Kind::File,
        b'5' => Kind::Dir,
        t => bail!("unsupported ustar entry type '{}'", t as char),
    };
    if kind == Kind::Dir {
        while name.ends_with('/') {
            name.pop();
        }
    }
    if name.is_empty() || name.starts_with('/') || name.split('/').any(|c| c == "..") {
        bail!("unsafe name '{name}' in archive");
    }
    Ok(Some(Entry {
        name,
        kind,
        size: if kind == Kind::File {
            get_octal(&h[124..136])?
        } else {
            0
        },
        mode: get_octal(&h[100..108])? as u32,
        mtime: get_octal(&h[136..148])?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn header_roundtrip_and_records() {
        let e = Entry {
            name: "tree/big.iso".into(),
            kind: Kind::File,
            size: 7102510,
            mode: 0o644,
            mtime: 1_248_950_000,
        };
        let h = header(&e).unwrap();
        assert_eq!(parse_header(&h).unwrap(), Some(e));
        assert_eq!(parse_header(&[0u8; BLOCK]).unwrap(), None);
        let mut bad = h;
        bad[0] ^= 1;
        assert!(parse_header(&bad).is_err());
    }

    #[test]
    fn rejects_unsafe_names() {
        for n in ["../etc/passwd", "a/../../b"] {
            let h = header(&Entry {
                name: n.into(),
                kind: Kind::File,
                size: 1,
                mode: 0o644,
                mtime: 0,
            })
            .unwrap();
            assert!(parse_header(&h).is_err(), "{n}");
        }
    }

    proptest! {
        #[test]
        fn names_and_sizes_roundtrip(
            name in "[a-z]{1,20}(/[a-z0-9][a-z0-9._]{0,59}){0,3}",
            size in 0u64..(1u64 << 33) - 1,
            dir in any::<bool>()
        ) {
            let e = Entry {
                name: name.clone(),
                kind: if dir { Kind::Dir } else { Kind::File },
                size: if dir { 0 } else { size },
                mode: 0o640,
                mtime: 12345,
            };
            let h = header(&e).unwrap();
            prop_assert_eq!(parse_header(&h).unwrap(), Some(e));
        }

        // Arbitrary bytes never panic the parser.
        #[test]
        fn parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), BLOCK)) {
            let mut h = [0u8; BLOCK];
            h.copy_from_slice(&bytes);
            let _ = parse_header(&h);
        }
    }
}
