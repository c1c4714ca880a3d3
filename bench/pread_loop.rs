//! The bare pread loop fsbench's hot path is held against (issue 13: measuring must cost almost
//! nothing). Standard library only, built by bench/vs-pread.sh with `rustc -O`; not part of the
//! crate and not run in CI.
//!
//!   pread_loop FILE OFFSETS.csv
//!   pread_loop --hold FILE
//!
//! OFFSETS.csv is an fsbench `--trace` file (CSV) of a single-threaded read run: the loop takes
//! the `offset` and `len` of every record, in order, into memory before timing, so it reads
//! exactly the blocks fsbench read, in the same order, and computes nothing per I/O. Then it
//! times one pread (`FileExt::read_at`) per record into one page-aligned buffer, with no
//! clock read, counter or histogram inside the loop; a short read stops it with status 1.
//! It prints one JSON line: {"ops":N,"bytes":B,"elapsed_s":S,"iops":I,"cpu_s":C}, where C is
//! the CPU time of the loop (user + system, getrusage RUSAGE_THREAD: the instrument fsbench
//! uses for its workers), which a busy machine disturbs less than the wall time.
//!
//! `--hold FILE` maps FILE and locks it in memory until its standard input closes: the page
//! cache keeps the file whatever else runs (a `drop_caches` or a memory-hungry neighbour
//! evicts unmapped pages only), so "hot cache" stays true for the whole comparison. A page
//! being mapped elsewhere does not change what pread does with it.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::process::exit;
use std::time::Instant;

/// `struct rusage` of 64-bit Linux: two timevals, then fourteen longs.
#[repr(C)]
struct Rusage {
    utime: [i64; 2],
    stime: [i64; 2],
    rest: [i64; 14],
}

extern "C" {
    fn getrusage(who: i32, usage: *mut Rusage) -> i32;
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
    fn mlock(addr: *const u8, len: usize) -> i32;
}

/// Map FILE, lock it in memory, wait for standard input to close.
fn hold(path: &str) -> ! {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    const PROT_READ: i32 = 1;
    const MAP_SHARED: i32 = 1;
    let f = File::open(path).unwrap_or_else(|e| die(&format!("{path}: {e}")));
    let len = f.metadata().map(|m| m.len() as usize).unwrap_or(0);
    if len == 0 {
        die(&format!("{path}: empty"));
    }
    // SAFETY: a fresh read-only shared mapping of an open file, checked for MAP_FAILED (-1);
    // it stays mapped until the process exits and is never written through.
    let p = unsafe { mmap(std::ptr::null_mut(), len, PROT_READ, MAP_SHARED, f.as_raw_fd(), 0) };
    if p as isize == -1 {
        die(&format!("mmap {path}: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: locks the mapping made above (faulting every page in).
    if unsafe { mlock(p, len) } != 0 {
        die(&format!("mlock {path}: {}", std::io::Error::last_os_error()));
    }
    println!("held {len}");
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    exit(0)
}

/// User + system seconds of the calling thread.
fn thread_cpu_s() -> f64 {
    const RUSAGE_THREAD: i32 = 1;
    let mut r = Rusage {
        utime: [0; 2],
        stime: [0; 2],
        rest: [0; 14],
    };
    // SAFETY: getrusage writes one struct rusage into memory we own, laid out as above.
    if unsafe { getrusage(RUSAGE_THREAD, &mut r) } != 0 {
        die("getrusage failed");
    }
    let tv = |t: [i64; 2]| t[0] as f64 + t[1] as f64 / 1e6;
    tv(r.utime) + tv(r.stime)
}

fn die(msg: &str) -> ! {
    eprintln!("pread_loop: {msg}");
    exit(2)
}

/// (offset, len) of every read record of an fsbench CSV trace, in trace order.
fn load(path: &str) -> Vec<(u64, usize)> {
    let f = File::open(path).unwrap_or_else(|e| die(&format!("{path}: {e}")));
    let mut lines = BufReader::new(f).lines();
    let head = match lines.next() {
        Some(Ok(h)) => h,
        _ => die(&format!("{path}: empty; expected an fsbench --trace CSV")),
    };
    let cols: Vec<&str> = head.split(',').collect();
    let col = |name: &str| {
        cols.iter()
            .position(|c| *c == name)
            .unwrap_or_else(|| die(&format!("{path}: no `{name}` column in the header")))
    };
    let (c_op, c_off, c_len) = (col("op"), col("offset"), col("len"));
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        let line = line.unwrap_or_else(|e| die(&format!("{path}: {e}")));
        let f: Vec<&str> = line.split(',').collect();
        let parsed = if f.len() < cols.len() || f[c_op] != "read" {
            None
        } else {
            f[c_off].parse::<u64>().ok().zip(f[c_len].parse::<usize>().ok())
        };
        match parsed {
            Some(rec) => out.push(rec),
            None => die(&format!("{path}: record {} is not a read with offset and len", i + 1)),
        }
    }
    if out.is_empty() {
        die(&format!("{path}: no records"));
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--hold" {
        hold(&args[2]);
    }
    if args.len() != 3 {
        die("usage: pread_loop FILE OFFSETS.csv | pread_loop --hold FILE");
    }
    let ops = load(&args[2]);
    let file = File::open(&args[1]).unwrap_or_else(|e| die(&format!("{}: {e}", args[1])));
    let max = ops.iter().map(|&(_, l)| l).max().unwrap_or(0);
    // Page-aligned like fsbench's buffer pool, so the copy to user space is the same copy.
    let mut raw = vec![0u8; max + 4096];
    let skew = raw.as_ptr().align_offset(4096);
    let buf = &mut raw[skew..skew + max];
    let mut bytes = 0u64;
    let cpu0 = thread_cpu_s();
    let t0 = Instant::now();
    for &(off, len) in &ops {
        match file.read_at(&mut buf[..len], off) {
            Ok(n) if n == len => bytes += n as u64,
            Ok(n) => {
                eprintln!("pread_loop: short read at offset {off}: {n} of {len} bytes");
                exit(1)
            }
            Err(e) => {
                eprintln!("pread_loop: read at offset {off}: {e}");
                exit(1)
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let cpu = thread_cpu_s() - cpu0;
    std::hint::black_box(&buf);
    println!(
        "{{\"ops\":{},\"bytes\":{},\"elapsed_s\":{},\"iops\":{},\"cpu_s\":{}}}",
        ops.len(),
        bytes,
        secs,
        ops.len() as f64 / secs,
        cpu
    );
}
