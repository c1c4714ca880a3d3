//! What a run that shaped its data (`--buffer-compress`, `--dedupe`, `--buffer-pattern`)
//! actually left in its files: after the timed run, untimed, a sample of the targets' blocks
//! is read back through the descriptors prepare opened, compressed one block at a time with
//! LZ4 (the kind of fast block compressor storage uses) and hashed to count repeats. The
//! Result carries what was asked beside what was measured (probe `data`), and `explain`
//! says when they differ.

use super::target::{Held, Plan};
use crate::job::Job;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::FileExt;

/// Most blocks sampled over all targets.
const MAX_SAMPLE_BLOCKS: u64 = 4096;
/// Most bytes read back for the sample.
const MAX_SAMPLE_BYTES: u64 = 64 << 20;

/// What was sampled and found.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Measured {
    pub blocks: u64,
    pub bytes: u64,
    pub compressed_bytes: u64,
    pub distinct: u64,
    /// Distinct blocks counting only the bytes after the first `header` of each (with
    /// `--verify`, whose header makes every whole block unique).
    pub distinct_after_header: u64,
}

impl Measured {
    pub(crate) fn compress_saved_pct(&self) -> f64 {
        if self.bytes == 0 {
            return 0.0;
        }
        100.0 * (1.0 - self.compressed_bytes as f64 / self.bytes as f64)
    }
    pub(crate) fn dedupe_pct(&self) -> f64 {
        dup_pct(self.blocks, self.distinct)
    }
    pub(crate) fn dedupe_after_header_pct(&self) -> f64 {
        dup_pct(self.blocks, self.distinct_after_header)
    }
}

fn dup_pct(blocks: u64, distinct: u64) -> f64 {
    if blocks == 0 {
        return 0.0;
    }
    100.0 * (blocks - distinct) as f64 / blocks as f64
}

/// The `data` probe of a run of `job` over `plan`, reading the files `held`. With
/// `--verify` each block starts with its verify header and only the rest carries the
/// shape: the probe says how many bytes that is, what compression can then save, and
/// counts duplicates over the bytes after the header too (no whole block repeats).
pub(crate) fn probe(job: &Job, plan: &Plan, held: &[Held]) -> Value {
    let bs = job.block_size.max(1);
    let sources: Vec<(&std::fs::File, u64)> = held
        .iter()
        .filter_map(|h| {
            let t = plan.targets.iter().find(|t| t.path == h.path)?;
            Some((&h.file, t.size / bs))
        })
        .collect();
    let header = if job.verifying() {
        crate::verify::block::HEADER_BYTES as u64
    } else {
        0
    };
    let mut asked = json!({
        "compress_saved_pct": job.buffer_compress,
        "dedupe_pct": job.dedupe,
        "dedupe_mode": job.dedupe.map(|_| job.dedupe_mode.unwrap_or_default().name()),
        "dedupe_working_set_pct": (job.dedupe_mode == Some(crate::job::DedupeMode::WorkingSet))
            .then(|| job.working_set_pct()),
        "buffer_pattern": job.buffer_pattern.as_ref().map(|p| p.spec()),
    });
    if header > 0 {
        asked["verify_header_bytes"] = json!(header);
        if let Some(p) = job.buffer_compress {
            // The header's bytes do not compress: the shape covers the rest of the block.
            asked["deliverable_compress_saved_pct"] = json!(round1(
                p as f64 * bs.saturating_sub(header) as f64 / bs as f64
            ));
        }
    }
    match sample(&sources, bs, header) {
        Ok(m) => json!({
            "asked": asked,
            "measured": {
                "compress_saved_pct": round1(m.compress_saved_pct()),
                "dedupe_pct": round1(m.dedupe_pct()),
                "dedupe_after_header_pct": (header > 0).then(|| round1(m.dedupe_after_header_pct())),
                "sampled_blocks": m.blocks,
                "sampled_bytes": m.bytes,
                "block_bytes": bs,
                "compressor": "lz4, one block at a time",
            },
        }),
        Err(e) => json!({ "asked": asked, "error": format!("reading the sample back: {e}") }),
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Read up to [`MAX_SAMPLE_BLOCKS`] blocks of `bs` bytes, spread evenly over each source's
/// `blocks` blocks, and measure them (duplicates also over the bytes after the first
/// `header` of each).
pub(crate) fn sample(
    sources: &[(&std::fs::File, u64)],
    bs: u64,
    header: u64,
) -> std::io::Result<Measured> {
    let header = (header as usize).min(bs as usize);
    let mut seen_after = HashSet::new();
    let total: u64 = sources.iter().map(|s| s.1).sum();
    let cap = MAX_SAMPLE_BLOCKS.min((MAX_SAMPLE_BYTES / bs).max(1));
    let mut buf = vec![0u8; bs as usize];
    let mut out = vec![0u8; lz4_flex::block::get_maximum_output_size(bs as usize)];
    let mut seen = HashSet::new();
    let mut m = Measured::default();
    for &(file, blocks) in sources {
        if blocks == 0 || total == 0 {
            continue;
        }
        // This source's share of the sample, at least one block.
        let want = ((cap as u128 * blocks as u128 / total as u128) as u64).clamp(1, blocks);
        for i in 0..want {
            let block = (i as u128 * blocks as u128 / want as u128) as u64;
            let got = read_full(file, &mut buf, block * bs)?;
            if got < buf.len() {
                continue;
            }
            let n = lz4_flex::block::compress_into(&buf, &mut out)
                .map_err(|e| std::io::Error::other(format!("lz4: {e}")))?;
            let mut h = std::collections::hash_map::DefaultHasher::new();
            buf.hash(&mut h);
            if seen.insert(h.finish()) {
                m.distinct += 1;
            }
            let mut h = std::collections::hash_map::DefaultHasher::new();
            buf[header..].hash(&mut h);
            if seen_after.insert(h.finish()) {
                m.distinct_after_header += 1;
            }
            m.blocks += 1;
            m.bytes += bs;
            m.compressed_bytes += (n as u64).min(bs);
        }
    }
    Ok(m)
}

/// pread until `buf` is full or the file ends.
fn read_full(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn measures_what_the_file_holds() {
        let dir = std::env::temp_dir().join(format!("fsb-datacheck-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let mut f = std::fs::OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&dir)
            .unwrap();
        // 8 blocks of 4 KiB: 4 copies of one random block, 4 all-zero blocks.
        let mut x = 0x1234_5678_9abc_def1u64;
        let random: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for _ in 0..4 {
            f.write_all(&random).unwrap();
        }
        f.write_all(&[0u8; 4 * 4096]).unwrap();
        let m = sample(&[(&f, 8)], 4096, 0).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(m.blocks, 8);
        assert_eq!(m.distinct, 2);
        assert_eq!(m.dedupe_pct(), 75.0);
        let saved = m.compress_saved_pct();
        assert!((45.0..52.0).contains(&saved), "{saved}");
    }
}
