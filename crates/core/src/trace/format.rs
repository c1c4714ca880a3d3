//! Trace files. CSV, one call per line:
//!
//! ```text
//! id,thread,op,file,offset,len,start_ns,end_ns,result
//! 0,0,read,/data/f,40960,4096,1200,5300,4096
//! ```
//!
//! `op` is read, write, open, close, fsync or fdatasync; `result` is bytes transferred or a
//! negative errno; a file name with a comma or quote is quoted the CSV way. Lines starting
//! with `#` are comments. The binary form (`.bin`) holds the same fields: magic `FSBTRC01`,
//! file table, then fixed 57-byte little-endian records.

use super::{Trace, TraceOp, TraceRecord};
use crate::error::UsageError;
use crate::usage;
use std::io::Write;
use std::path::Path;

pub const CSV_HEADER: &str = "id,thread,op,file,offset,len,start_ns,end_ns,result";
const MAGIC: &[u8; 8] = b"FSBTRC01";
const RECORD_BYTES: usize = 57;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    Csv,
    Bin,
}

impl TraceFormat {
    pub fn parse(s: &str) -> Result<TraceFormat, UsageError> {
        match s {
            "csv" => Ok(TraceFormat::Csv),
            "bin" | "binary" => Ok(TraceFormat::Bin),
            _ => Err(usage!("unknown trace format '{s}': expected csv or bin")),
        }
    }
    /// `.bin` means binary, anything else CSV.
    pub fn from_path(p: &Path) -> TraceFormat {
        if p.extension().is_some_and(|e| e == "bin") {
            TraceFormat::Bin
        } else {
            TraceFormat::Csv
        }
    }
}

/// The trace as CSV through the `csv` crate: a file name with a comma, quote, CR or LF is
/// quoted (inner quotes doubled); rows end in `\n`.
pub fn to_csv(t: &Trace, out: &mut impl Write) -> std::io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(CSV_HEADER.split(','))?;
    for r in &t.records {
        let file = t
            .files
            .get(r.file as usize)
            .map(String::as_str)
            .unwrap_or("");
        w.write_record([
            r.id.to_string().as_str(),
            &r.thread.to_string(),
            r.op.name(),
            file,
            &r.offset.to_string(),
            &r.len.to_string(),
            &r.start_ns.to_string(),
            &r.end_ns.to_string(),
            &r.result.to_string(),
        ])?;
    }
    w.flush()
}

pub fn to_bin(t: &Trace, out: &mut impl Write) -> std::io::Result<()> {
    out.write_all(MAGIC)?;
    out.write_all(&(t.files.len() as u32).to_le_bytes())?;
    for f in &t.files {
        out.write_all(&(f.len() as u32).to_le_bytes())?;
        out.write_all(f.as_bytes())?;
    }
    out.write_all(&(t.records.len() as u64).to_le_bytes())?;
    let mut b = [0u8; RECORD_BYTES];
    for r in &t.records {
        b[0..8].copy_from_slice(&r.id.to_le_bytes());
        b[8..12].copy_from_slice(&r.thread.to_le_bytes());
        b[12] = r.op.code();
        b[13..17].copy_from_slice(&r.file.to_le_bytes());
        b[17..25].copy_from_slice(&r.offset.to_le_bytes());
        b[25..33].copy_from_slice(&r.len.to_le_bytes());
        b[33..41].copy_from_slice(&r.start_ns.to_le_bytes());
        b[41..49].copy_from_slice(&r.end_ns.to_le_bytes());
        b[49..57].copy_from_slice(&r.result.to_le_bytes());
        out.write_all(&b)?;
    }
    Ok(())
}

/// Refuse to replace a file that is not an fsbench trace (never lose data): a new name, or an
/// earlier trace, is fine. Called before the run, so nothing is measured in vain.
pub fn check_writable(path: &Path) -> Result<(), UsageError> {
    use std::io::Read;
    let shown = path.display();
    match std::fs::symlink_metadata(path) {
        Err(_) => Ok(()),
        Ok(m) if !m.is_file() => Err(usage!(
            "trace output {shown} exists and is not a regular file: choose another name"
        )),
        Ok(_) => {
            let mut head = [0u8; 64];
            let n = std::fs::File::open(path)
                .and_then(|mut f| f.read(&mut head))
                .unwrap_or(0);
            let head = &head[..n];
            if head.starts_with(MAGIC) || head.starts_with(CSV_HEADER.as_bytes()) || n == 0 {
                Ok(())
            } else {
                Err(usage!(
                    "trace output {shown} exists and is not an fsbench trace: choose another name (fsbench does not overwrite other files)"
                ))
            }
        }
    }
}

/// Write a trace atomically (temporary file, then rename).
pub fn write_file(t: &Trace, path: &Path, fmt: TraceFormat) -> anyhow::Result<()> {
    use anyhow::Context;
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".fsbench-partial-{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    {
        // A new file of ours only: never through a link, never over something already there.
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o644)
            .open(&tmp)
            .with_context(|| format!("creating {}", tmp.display()))?;
        let mut w = std::io::BufWriter::new(f);
        match fmt {
            TraceFormat::Csv => to_csv(t, &mut w),
            TraceFormat::Bin => to_bin(t, &mut w),
        }
        .and_then(|_| w.flush())
        .inspect_err(|_e| {
            let _ = std::fs::remove_file(&tmp);
        })
        .with_context(|| format!("writing {}", tmp.display()))?;
    }
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Split one CSV line into fields (double-quoted fields may hold commas and `""`).
fn split_csv(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut at_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    cur.push('"');
                } else {
                    quoted = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == '"' && at_start {
            quoted = true;
            at_start = false;
        } else if c == ',' {
            out.push(std::mem::take(&mut cur));
            at_start = true;
        } else {
            cur.push(c);
            at_start = false;
        }
    }
    if quoted {
        return None;
    }
    out.push(cur);
    Some(out)
}

/// Parse a CSV trace. `origin` names the input in error messages.
pub fn parse_csv(text: &str, origin: &str) -> Result<Trace, UsageError> {
    let mut t = Trace::default();
    let mut saw_header = false;
    // At most one record per line: reserved once, fallibly.
    let lines = text.bytes().filter(|&b| b == b'\n').count() + 1;
    super::budget::try_reserve(&mut t.records, lines, &format!("reading trace {origin}"))?;
    // File names to their index: a linear search per record would make a trace with many
    // files quadratic.
    let mut index: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        let n = i + 1;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if !saw_header {
            if line.trim() != CSV_HEADER {
                return Err(usage!(
                    "{origin}:{n}: not an fsbench trace: the first line must be '{CSV_HEADER}'"
                ));
            }
            saw_header = true;
            continue;
        }
        let f = split_csv(line).ok_or_else(|| usage!("{origin}:{n}: unterminated quote"))?;
        if f.len() != 9 {
            return Err(usage!(
                "{origin}:{n}: expected 9 fields ({CSV_HEADER}), found {}",
                f.len()
            ));
        }
        let num = |k: usize, what: &str| -> Result<u64, UsageError> {
            f[k].trim()
                .parse::<u64>()
                .map_err(|_| usage!("{origin}:{n}: {what} '{}' is not a whole number", f[k]))
        };
        let op = TraceOp::parse(f[2].trim()).ok_or_else(|| {
            usage!(
                "{origin}:{n}: unknown op '{}': expected read, write, open, close, fsync or fdatasync",
                f[2]
            )
        })?;
        let result = f[8]
            .trim()
            .parse::<i64>()
            .map_err(|_| usage!("{origin}:{n}: result '{}' is not a number", f[8]))?;
        let thread = num(1, "thread")?;
        if thread > u32::MAX as u64 {
            return Err(usage!("{origin}:{n}: thread {thread} is too large"));
        }
        let (start_ns, end_ns) = (num(6, "start_ns")?, num(7, "end_ns")?);
        if end_ns < start_ns {
            return Err(usage!(
                "{origin}:{n}: end_ns {end_ns} is before start_ns {start_ns}"
            ));
        }
        let file = match index.get(&f[3]) {
            Some(&i) => i,
            None => {
                let i = t.files.len() as u32;
                t.files.push(f[3].clone());
                index.insert(f[3].clone(), i);
                i
            }
        };
        t.records.push(TraceRecord {
            id: num(0, "id")?,
            thread: thread as u32,
            op,
            file,
            offset: num(4, "offset")?,
            len: num(5, "len")?,
            start_ns,
            end_ns,
            result,
        });
    }
    if !saw_header {
        return Err(usage!("{origin}: empty: not an fsbench trace"));
    }
    Ok(t)
}

/// Parse the binary form.
pub fn parse_bin(data: &[u8], origin: &str) -> Result<Trace, UsageError> {
    let bad = |what: &str| usage!("{origin}: corrupt binary trace: {what}");
    if data.len() < 12 || &data[..8] != MAGIC {
        return Err(usage!(
            "{origin}: not an fsbench binary trace (no FSBTRC01 magic)"
        ));
    }
    let mut p = 8usize;
    let take = |p: &mut usize, n: usize| -> Result<&[u8], UsageError> {
        let s = data.get(*p..p.checked_add(n).ok_or_else(|| bad("length overflow"))?);
        let s = s.ok_or_else(|| bad("truncated"))?;
        *p += n;
        Ok(s)
    };
    let nfiles = u32::from_le_bytes(take(&mut p, 4)?.try_into().expect("4 bytes")) as usize;
    let mut t = Trace::default();
    for _ in 0..nfiles {
        let len = u32::from_le_bytes(take(&mut p, 4)?.try_into().expect("4 bytes")) as usize;
        let name =
            std::str::from_utf8(take(&mut p, len)?).map_err(|_| bad("file name not UTF-8"))?;
        t.files.push(name.to_string());
    }
    let nrec = u64::from_le_bytes(take(&mut p, 8)?.try_into().expect("8 bytes"));
    let rest = data.len() - p;
    if nrec.checked_mul(RECORD_BYTES as u64) != Some(rest as u64) {
        return Err(bad("record count does not match the file length"));
    }
    super::budget::try_reserve(
        &mut t.records,
        nrec as usize,
        &format!("reading trace {origin}"),
    )?;
    for _ in 0..nrec {
        let b = take(&mut p, RECORD_BYTES)?;
        let u64at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let op = TraceOp::from_code(b[12]).ok_or_else(|| bad("unknown op code"))?;
        let file = u32::from_le_bytes(b[13..17].try_into().expect("4 bytes"));
        if file as usize >= t.files.len() {
            return Err(bad("file index out of range"));
        }
        t.records.push(TraceRecord {
            id: u64at(0),
            thread: u32::from_le_bytes(b[8..12].try_into().expect("4 bytes")),
            op,
            file,
            offset: u64at(17),
            len: u64at(25),
            start_ns: u64at(33),
            end_ns: u64at(41),
            result: u64at(49) as i64,
        });
    }
    Ok(t)
}

/// Read a trace file in either form (told apart by the magic).
pub fn read_file(path: &Path) -> Result<Trace, UsageError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let origin = path.display().to_string();
    // Non-blocking open, so a FIFO named as the trace cannot hang us; then only a regular
    // file is read (a device or /proc file has no honest size to budget for).
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| usage!("cannot read trace {origin}: {e}"))?;
    let meta = f
        .metadata()
        .map_err(|e| usage!("cannot read trace {origin}: {e}"))?;
    if !meta.is_file() {
        return Err(usage!(
            "cannot read trace {origin}: not a regular file (give a .csv or .bin trace)"
        ));
    }
    let size = meta.len();
    // The text plus the records it can hold (a CSV record line is at least ~20 bytes and
    // becomes a 64-byte record).
    super::budget::check(
        &format!("reading trace {origin} ({size} bytes)"),
        size.saturating_add(size / 20 * 64),
    )?;
    let mut data = super::budget::try_vec(size as usize, &format!("reading trace {origin}"))?;
    f.read_to_end(&mut data)
        .map_err(|e| usage!("cannot read trace {origin}: {e}"))?;
    if data.starts_with(MAGIC) {
        parse_bin(&data, &origin)
    } else {
        let text = String::from_utf8(data)
            .map_err(|_| usage!("{origin}: neither a CSV trace (not UTF-8) nor a binary one"))?;
        parse_csv(&text, &origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Trace {
        let mut t = Trace::default();
        let a = t.file_index("/data/a,b \"x\"");
        let b = t.file_index("/data/plain");
        for (i, (op, f)) in [
            (TraceOp::Open, a),
            (TraceOp::Read, a),
            (TraceOp::Write, b),
            (TraceOp::Fsync, b),
        ]
        .into_iter()
        .enumerate()
        {
            t.records.push(TraceRecord {
                id: i as u64,
                thread: 7,
                op,
                file: f,
                offset: 4096 * i as u64,
                len: if op.is_data() { 4096 } else { 0 },
                start_ns: 100 * i as u64,
                end_ns: 100 * i as u64 + 50,
                result: if i == 3 { -5 } else { 4096 },
            });
        }
        t
    }

    #[test]
    fn csv_round_trip_with_awkward_names() {
        let t = sample();
        let mut buf = Vec::new();
        to_csv(&t, &mut buf).unwrap();
        let back = parse_csv(std::str::from_utf8(&buf).unwrap(), "x").unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn csv_bytes() {
        let mut buf = Vec::new();
        to_csv(&sample(), &mut buf).unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            format!(
                "{CSV_HEADER}\n\
                 0,7,open,\"/data/a,b \"\"x\"\"\",0,0,0,50,4096\n\
                 1,7,read,\"/data/a,b \"\"x\"\"\",4096,4096,100,150,4096\n\
                 2,7,write,/data/plain,8192,4096,200,250,4096\n\
                 3,7,fsync,/data/plain,12288,0,300,350,-5\n"
            )
        );
    }

    #[test]
    fn bin_round_trip() {
        let t = sample();
        let mut buf = Vec::new();
        to_bin(&t, &mut buf).unwrap();
        assert_eq!(parse_bin(&buf, "x").unwrap(), t);
        assert!(parse_bin(&buf[..buf.len() - 1], "x").is_err());
    }

    #[test]
    fn bad_lines_are_usage_errors() {
        let h = CSV_HEADER;
        assert!(parse_csv("", "x").is_err());
        assert!(parse_csv("a,b\n", "x").is_err());
        assert!(parse_csv(&format!("{h}\n0,0,frobnicate,f,0,1,0,1,1\n"), "x").is_err());
        assert!(parse_csv(&format!("{h}\n0,0,read,f,-1,1,0,1,1\n"), "x").is_err());
        assert!(parse_csv(&format!("{h}\n0,0,read,\"f,0,1,0,1,1\n"), "x").is_err());
        assert!(parse_csv(&format!("{h}\n0,0,read,f,0,1,9,1,1\n"), "x").is_err());
    }

    proptest! {
        #[test]
        fn csv_parser_never_panics(s in "\\PC{0,300}") {
            let _ = parse_csv(&s, "p");
            let _ = parse_csv(&format!("{CSV_HEADER}\n{s}"), "p");
        }

        #[test]
        fn csv_lines_of_fields_never_panic(fields in proptest::collection::vec("[-0-9a-z\",]{0,6}", 0..12)) {
            let _ = parse_csv(&format!("{CSV_HEADER}\n{}", fields.join(",")), "p");
        }

        #[test]
        fn bin_parser_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut v = MAGIC.to_vec();
            v.extend_from_slice(&data);
            let _ = parse_bin(&v, "p");
            let _ = parse_bin(&data, "p");
        }
    }
}
