//! Every flowop on real files in temporary directories: each test runs a small WML workload
//! in-process (threads) and checks both the counters and what is on disk afterwards.

use super::report::{FlowopReport, WorkloadResult};
use super::run::{execute, Options};
use super::Source;
use std::path::Path;
use std::time::Duration;

fn run(dir: &Path, text: &str, keep: bool) -> WorkloadResult {
    let src = Source {
        name: "test.f".into(),
        text: text.into(),
        defines: vec![("dir".into(), dir.display().to_string())],
    };
    let model = super::load_source(&src).unwrap_or_else(|e| panic!("{e:#}"));
    let opts = Options {
        time: None,
        keep,
        in_process: true,
        lines_to_stdout: false,
        stall_after: Duration::from_secs(2),
    };
    execute(&src, &model, &opts).unwrap_or_else(|e| panic!("{e:#}"))
}

fn flowop<'a>(r: &'a WorkloadResult, name: &str) -> &'a FlowopReport {
    r.runs[0]
        .flowops
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no flowop {name}"))
}

fn files_under(p: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            let path = e.path();
            if path.is_dir() {
                out.extend(files_under(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn create_write_close_fills_the_fileset() {
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=cs,path=$dir,entries=12,dirwidth=4,size=0,prealloc=0
define process name=p { thread name=t,instances=2 {
  flowop createfile name=c,filesetname=cs,fd=1
  flowop write name=w,fd=1,iosize=4k,iters=3
  flowop closefile name=cl,fd=1 } }
run 20",
        true,
    );
    assert_eq!(flowop(&r, "c").ops, 12);
    assert_eq!(flowop(&r, "w").write_bytes, 12 * 3 * 4096);
    assert_eq!(r.runs[0].thread_ends.get("out_of_files"), Some(&2));
    let files = files_under(&d.path().join("cs"));
    assert_eq!(files.len(), 12);
    assert!(files
        .iter()
        .all(|f| std::fs::metadata(f).unwrap().len() == 12288));
    let probe = d.path().join("probe");
    std::fs::write(&probe, b"").unwrap();
    if crate::safety::mark_created(&probe) {
        assert!(
            crate::safety::is_marked(&d.path().join("cs")),
            "fileset root carries the fsbench mark"
        );
    }
}

#[test]
fn open_read_wraps_stat_readwhole_and_cleanup() {
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=rs,path=$dir,entries=20,size=8k,prealloc
define process name=p { thread name=t {
  flowop openfile name=o,filesetname=rs,fd=1
  flowop read name=r,fd=1,iosize=4k,iters=5
  flowop readwholefile name=rw,fd=1,iosize=3k
  flowop statfile name=s,filesetname=rs
  flowop statfile name=sfd,fd=1
  flowop closefile name=c,fd=1
  flowop finishoncount name=f,value=10,target=c } }
run 20",
        false,
    );
    assert_eq!(flowop(&r, "o").ops, 10);
    // Filebench's flowoplib_read on a fresh 8k file: 4k, 4k, then a read at end of file
    // returns 0 (counted as an op, offset back to 0), then 4k, 4k: 16k in 5 ops per pass.
    assert_eq!(flowop(&r, "r").read_bytes, 10 * 4 * 4096);
    assert_eq!(flowop(&r, "r").read_ops, 10 * 5);
    // readwholefile is one op per execution whatever its iosize (one flowop_endop).
    assert_eq!(flowop(&r, "rw").read_bytes, 10 * 8192);
    assert_eq!(flowop(&r, "rw").read_ops, 10);
    assert_eq!(flowop(&r, "s").ops, 10);
    assert_eq!(flowop(&r, "sfd").ops, 10);
    assert!(!d.path().join("rs").exists(), "fileset removed at the end");
}

#[test]
fn delete_empties_the_fileset() {
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=ds,path=$dir,entries=30,dirwidth=5,size=1k,prealloc=100,paralloc
define process name=p { thread name=t,instances=3 { flowop deletefile name=del,filesetname=ds } }
run 20",
        true,
    );
    assert_eq!(flowop(&r, "del").ops, 30);
    assert!(files_under(&d.path().join("ds")).is_empty());
}

#[test]
fn makedir_listdir_removedir() {
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=dirs,path=$dir,leafdirs=8,dirwidth=4,prealloc=0
define process name=p { thread name=t {
  flowop makedir name=mk,filesetname=dirs
  flowop listdir name=ls,filesetname=dirs } }
run 20",
        true,
    );
    assert_eq!(flowop(&r, "mk").ops, 8);
    assert_eq!(flowop(&r, "ls").ops, 8);
    let leaves = std::fs::read_dir(d.path().join("dirs"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_dir(e.path()).unwrap().count())
        .sum::<usize>();
    assert_eq!(leaves, 8);
    std::fs::remove_dir_all(d.path().join("dirs")).unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=dirs,path=$dir,leafdirs=8,dirwidth=4,prealloc=100
define process name=p { thread name=t { flowop removedir name=rm,filesetname=dirs } }
run 20",
        true,
    );
    assert_eq!(flowop(&r, "rm").ops, 8);
}

#[test]
fn appends_fsyncs_writewhole_and_aio() {
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=ws,path=$dir,entries=4,size=10000,prealloc=0
define file name=log,path=$dir,size=0,prealloc
define file name=big,path=$dir,size=1m,prealloc
define process name=p { thread name=t {
  flowop createfile name=c,filesetname=ws,fd=1
  flowop writewholefile name=ww,fd=1,iosize=4k
  flowop appendfile name=ap,fd=1,iosize=1000
  flowop appendfilerand name=apr,filename=log,iosize=512,fd=2
  flowop fsync name=fs,fd=1
  flowop fsyncset name=fss,filesetname=log
  flowop aiowrite name=aw,filename=big,iosize=4k,random,iters=8,fd=3
  flowop aiowait name=awt
  flowop closefile name=cl,fd=1 } }
run 20",
        true,
    );
    assert_eq!(flowop(&r, "c").ops, 4);
    assert_eq!(flowop(&r, "ww").write_bytes, 40000);
    // One op per writewholefile execution (Filebench ends one op around the whole loop).
    assert_eq!(flowop(&r, "ww").write_ops, 4);
    assert_eq!(flowop(&r, "aw").write_bytes, 4 * 8 * 4096);
    // fd 3 is opened by aiowrite itself on its first execution: one more (empty) op.
    assert_eq!(flowop(&r, "aw").ops, 4 * 8 + 1);
    assert_eq!(flowop(&r, "awt").ops, 4);
    for f in files_under(&d.path().join("ws")) {
        assert_eq!(std::fs::metadata(&f).unwrap().len(), 11000, "{f:?}");
    }
    let log = std::fs::metadata(d.path().join("log/log")).unwrap().len();
    assert_eq!(log, flowop(&r, "apr").write_bytes);
    // Filebench's appendfilerand appends 0 to iosize - 1 bytes.
    assert!(log <= 4 * 511, "{log}");
    assert_eq!(
        std::fs::metadata(d.path().join("big/big")).unwrap().len(),
        1 << 20
    );
    assert_eq!(flowop(&r, "fs").ops, 4);
    assert_eq!(flowop(&r, "fss").ops, 4);
}

#[test]
fn semaphores_block_and_wakeup_pair_up() {
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit firstdone
define process name=p {
  thread name=a {
    flowop semblock name=sb,value=2
    flowop wakeup name=wk,target=blk
    flowop finishoncount name=f,value=20,target=sb }
  thread name=b {
    flowop sempost name=sp,target=sb,value=1
    flowop sempost name=sp2,target=sb,value=1
    flowop block name=blk } }
run 20",
        false,
    );
    let sb = flowop(&r, "sb").ops;
    assert!(sb >= 20, "{sb}");
    // Each semblock takes 2 posts; each block needs one wakeup.
    let posts = flowop(&r, "sp").ops + flowop(&r, "sp2").ops;
    assert!(
        posts >= 2 * sb && posts <= 2 * sb + 2,
        "posts {posts} sb {sb}"
    );
    assert!(flowop(&r, "blk").ops + 1 >= flowop(&r, "wk").ops);
    assert_eq!(r.status, crate::runner::RunStatus::Complete);
}

#[test]
fn a_workload_that_cannot_progress_is_reported() {
    let d = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    // b posts once and then waits for a wakeup that only comes after a got two posts.
    let r = run(
        d.path(),
        "define process name=p {
  thread name=a {
    flowop semblock name=sb,value=2
    flowop wakeup name=wk,target=blk }
  thread name=b {
    flowop sempost name=sp,target=sb,value=1
    flowop block name=blk } }
run 60",
        false,
    );
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(r.status, crate::runner::RunStatus::Failed);
    assert!(
        r.runs[0].stop_reason.starts_with("no progress"),
        "{}",
        r.runs[0].stop_reason
    );
    assert_eq!(r.exit_code(), 1);
}

#[test]
fn delay_hog_and_rate_limits() {
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define file name=f,path=$dir,size=64k,prealloc
eventgen rate=200
define process name=p { thread name=t {
  flowop delay name=dl,value=0.02
  flowop hog name=hg,value=100000
  flowop read name=rd,filename=f,iosize=4k,random
  flowop eventlimit name=ev
  flowop iopslimit name=il
  flowop opslimit name=ol
  flowop bwlimit name=bw
  flowop finishonbytes name=fb,value=40k,target=rd } }
run 20",
        false,
    );
    // finishonbytes stops when more than 40k were read (Filebench: bytes > value): after
    // the 11th 4k read; read's first execution also opened the file (one empty op).
    assert_eq!(flowop(&r, "rd").read_bytes, 11 * 4096);
    assert_eq!(flowop(&r, "rd").ops, 12);
    assert!(flowop(&r, "dl").lat_ns.min >= 20_000_000);
    assert!(flowop(&r, "hg").cpu_us_per_op > 0.0);
    assert!(r.runs[0].duration_s > 0.2, "{}", r.runs[0].duration_s);
    assert_eq!(flowop(&r, "ev").ops, 11);
    // The limits' first pass only records where the counters are (not an op); each later
    // pass is one op: passes 2 to 11.
    for l in ["il", "ol", "bw"] {
        assert_eq!(flowop(&r, l).ops, 10, "{l}");
    }
    assert_eq!(flowop(&r, "fb").ops, 11);
}

#[test]
fn directio_random_read_with_workingset_and_opennext() {
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=fs,path=$dir,entries=5,size=256k,prealloc,cached=0
define process name=p { thread name=t {
  flowop read name=rd,filesetname=fs,iosize=4k,random,workingset=64k,directio,noreadahead,opennext
  flowop finishoncount name=f,value=50,target=rd } }
run 20",
        false,
    );
    // opennext: each execution takes the next of 128 descriptors, so each of the first 128
    // executions opens a file there first (an empty op) and then reads: 2 ops each, and
    // finishoncount (target rd, ops >= 50) stops after 25 reads.
    assert_eq!(flowop(&r, "rd").read_bytes, 25 * 4096);
    assert_eq!(flowop(&r, "rd").ops, 50);
}

#[test]
fn refuses_a_directory_it_did_not_create() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("mine")).unwrap();
    std::fs::write(d.path().join("mine/precious"), b"data").unwrap();
    let src = Source {
        name: "t.f".into(),
        text: "define fileset name=mine,path=$dir,entries=2,size=1k,prealloc\ndefine process name=p { thread name=t { flowop deletefile name=d,filesetname=mine } }\nrun 1".into(),
        defines: vec![("dir".into(), d.path().display().to_string())],
    };
    let model = super::load_source(&src).unwrap();
    let opts = Options {
        time: None,
        keep: false,
        in_process: true,
        lines_to_stdout: false,
        stall_after: Duration::from_secs(2),
    };
    let e = execute(&src, &model, &opts).unwrap_err();
    assert!(crate::error::is_usage(&e), "{e}");
    assert_eq!(
        std::fs::read(d.path().join("mine/precious")).unwrap(),
        b"data"
    );
}
