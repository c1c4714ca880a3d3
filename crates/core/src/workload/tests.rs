//! Every flowop on real files in temporary directories: each test runs a small WML workload
//! in-process (threads) and checks both the counters and what is on disk afterwards.

use super::run::{execute, Options};
use super::Source;
use crate::result::{RunResult, WorkloadRun};
use crate::stats::StatsReport;
use std::path::Path;
use std::time::Duration;

fn run(dir: &Path, text: &str, keep: bool) -> RunResult {
    let src = Source {
        name: "test.f".into(),
        text: text.into(),
        defines: vec![("dir".into(), dir.display().to_string())],
        shared_rank: None,
    };
    let model = super::load_source(&src).unwrap_or_else(|e| panic!("{e:#}"));
    let opts = Options {
        time: None,
        ramp: None,
        ramp_bytes: None,
        keep,
        in_process: true,
        lines_to_stdout: false,
        stall_after: Duration::from_secs(2),
        progress: None,
        engine: crate::job::EngineKind::Sync,
        rate: Default::default(),
        verify: false,
        leave_for_owner: false,
        watch: Default::default(),
    };
    execute(&src, &model, &opts).unwrap_or_else(|e| panic!("{e:#}"))
}

/// A flowop's figures in the first run: its named group in the Result.
fn flowop<'a>(r: &'a RunResult, name: &str) -> &'a StatsReport {
    r.groups
        .iter()
        .find(|g| g.name == name && g.run == Some(1))
        .map(|g| &g.stats)
        .unwrap_or_else(|| panic!("no flowop {name}"))
}

fn runs(r: &RunResult) -> &[WorkloadRun] {
    &r.workload.as_ref().expect("a workload section").runs
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
    assert_eq!(runs(&r)[0].thread_ends.get("out_of_files"), Some(&2));
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
        runs(&r)[0].stop_reason.starts_with("no progress"),
        "{}",
        runs(&r)[0].stop_reason
    );
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
    assert!(runs(&r)[0].duration_s > 0.2, "{}", runs(&r)[0].duration_s);
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
        shared_rank: None,
    };
    let model = super::load_source(&src).unwrap();
    let opts = Options {
        time: None,
        ramp: None,
        ramp_bytes: None,
        keep: false,
        in_process: true,
        lines_to_stdout: false,
        stall_after: Duration::from_secs(2),
        progress: None,
        engine: crate::job::EngineKind::Sync,
        rate: Default::default(),
        verify: false,
        leave_for_owner: false,
        watch: Default::default(),
    };
    let e = execute(&src, &model, &opts).unwrap_err();
    assert!(crate::error::is_usage(&e), "{e}");
    assert_eq!(
        std::fs::read(d.path().join("mine/precious")).unwrap(),
        b"data"
    );
}

// ---- Filebench 1.5 semantics, one test per rule. Each derivation follows Filebench's source
// (flowop_library.c, fileset.c) for the tiny workload of the test.

fn exists(d: &Path, set: &str, n: usize) -> bool {
    d.join(set).join(format!("{n:08}")).exists()
}

#[test]
fn fb_openfile_and_deletefile_share_one_rotor() {
    // fileset_pick takes existing files in rotation from fs_file_exrotor[0], which openfile
    // (tid 0 without rotatefd) and deletefile share: open 1st file, delete 2nd, open 3rd,
    // delete 4th. finishoncount (target=del) stops after the 2nd deletion.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=rot,path=$dir,entries=6,size=1k,prealloc
define process name=p { thread name=t {
  flowop openfile name=o,filesetname=rot,fd=1
  flowop closefile name=c,fd=1
  flowop deletefile name=del,filesetname=rot
  flowop finishoncount name=f,value=2,target=del } }
run 20",
        true,
    );
    assert_eq!(flowop(&r, "del").ops, 2);
    let left: Vec<usize> = (1..=6).filter(|&i| exists(d.path(), "rot", i)).collect();
    assert_eq!(left, vec![1, 3, 5, 6]);
}

#[test]
fn fb_finishoncount_counts_the_whole_process() {
    // Without target, finishoncount compares controlstats.fs_count (every file-system op of
    // the process, all threads) with value: 4 threads stop together once 100 statfiles are
    // done in total; each thread may do one more statfile before its own check: 100..=103.
    // finishoncount's own executions are ops of its own (one per pass, the last included).
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=st,path=$dir,entries=10,size=1k,prealloc
define process name=p { thread name=t,instances=4 {
  flowop statfile name=s,filesetname=st
  flowop finishoncount name=f,value=100 } }
run 20",
        false,
    );
    let s = flowop(&r, "s").ops;
    assert!((100..=103).contains(&s), "{s}");
    assert_eq!(flowop(&r, "f").ops, s);
    assert_eq!(r.status, crate::runner::RunStatus::Complete);
}

#[test]
fn fb_open_is_not_exclusive_and_delete_skips_open_files() {
    // fileset_openfile unbusies the entry right after open (fse_open_cnt + 1): the single
    // file opens on fd 1 and fd 2 at once. deletefile picks it but fse_open_cnt is 2 > 0, so
    // it unbusies it and returns without ending an op (not counted). 3 passes.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=one,path=$dir,entries=1,size=1k,prealloc
define process name=p { thread name=t {
  flowop openfile name=o1,filesetname=one,fd=1
  flowop openfile name=o2,filesetname=one,fd=2
  flowop deletefile name=del,filesetname=one
  flowop deletefile name=delfd,fd=1
  flowop closefile name=c1,fd=1
  flowop closefile name=c2,fd=2
  flowop finishoncount name=f,value=3,target=c2 } }
run 20",
        true,
    );
    assert_eq!(flowop(&r, "o1").ops, 3);
    assert_eq!(flowop(&r, "o2").ops, 3);
    assert_eq!(flowop(&r, "del").ops, 0);
    // deletefile fd=1 with the file also open on fd 2: open count 2 > 1, skipped too.
    assert_eq!(flowop(&r, "delfd").ops, 0);
    assert!(exists(d.path(), "one", 1));
}

#[test]
fn fb_default_fd_zero_and_implicit_open() {
    // read and fsync without fd both use descriptor 0 (flowoplib_fdnum). read's first pass
    // opens a file there (flowoplib_filesetup -> openfile_common: one op, 0 bytes, counted
    // as a read op) and reads 1k; sequential reads of the 4k file: 1k, 1k, 1k, 1k, then 0 at
    // end of file. write with fd=2 opens its own file on fd 2 the same way. finishoncount
    // (target=r, ops >= 6) stops after pass 5: r = 6 ops, 4096 bytes; s = 5; w = 5 + 1 ops.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=f,path=$dir,entries=1,size=4k,prealloc
define fileset name=lg,path=$dir,entries=1,size=0,prealloc
define process name=p { thread name=t {
  flowop read name=r,filesetname=f,iosize=1k
  flowop fsync name=s
  flowop write name=w,filesetname=lg,iosize=100,fd=2
  flowop finishoncount name=fin,value=6,target=r } }
run 20",
        false,
    );
    let rd = flowop(&r, "r");
    assert_eq!((rd.ops, rd.read_ops, rd.read_bytes), (6, 6, 4096));
    assert_eq!(flowop(&r, "s").ops, 5);
    let w = flowop(&r, "w");
    assert_eq!((w.ops, w.write_bytes), (6, 500));
}

#[test]
fn fb_semaphore_highwater_is_a_starting_credit() {
    // flowoplib_semblock_init posts highwater (10) to the instance's hw semaphore; a
    // blocking sempost takes 1 from it per post; each semblock gives value (30) back and
    // then takes 30 posts. So 30 > highwater is no deadlock (stock oltp.f: 3200 vs 1000).
    // When the 3rd semblock completes, at most 10 + 3 * 30 posts were possible.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit firstdone
define process name=p {
  thread name=b {
    flowop semblock name=blk,value=30,highwater=10
    flowop finishoncount name=f,value=3,target=blk }
  thread name=q { flowop sempost name=post,target=blk,value=1,blocking } }
run 20",
        false,
    );
    assert_eq!(flowop(&r, "blk").ops, 3);
    let posts = flowop(&r, "post").ops;
    assert!((90..=100).contains(&posts), "{posts}");
    assert_eq!(r.status, crate::runner::RunStatus::Complete);
}

#[test]
fn fb_sempost_posts_to_every_instance() {
    // flowoplib_sempost posts to every flowop found by the target name: both instances of
    // thread b get each of the 50 posts, so each completes 10 semblocks of value 5.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define process name=p {
  thread name=b,instances=2 {
    flowop semblock name=sb,value=5
    flowop finishoncount name=f,value=10,target=sb }
  thread name=q {
    flowop sempost name=post,target=sb,value=1
    flowop finishoncount name=g,value=50,target=post } }
run 20",
        false,
    );
    assert_eq!(flowop(&r, "post").ops, 50);
    assert_eq!(flowop(&r, "sb").ops, 20);
    assert_eq!(r.status, crate::runner::RunStatus::Complete);
}

#[test]
fn fb_writewholefile_after_createfile_writes_the_planned_size() {
    // fileserver: createfile fd=1, writewholefile srcfd=1,fd=1: wss = tf_fse[srcfd]->fse_size,
    // the entry's planned size (10000), not the new file's size (0). One op per execution.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=ws,path=$dir,entries=3,size=10000,prealloc=0
define process name=p { thread name=t {
  flowop createfile name=c,filesetname=ws,fd=1
  flowop writewholefile name=ww,srcfd=1,fd=1,iosize=4k
  flowop closefile name=cl,fd=1 } }
run 20",
        true,
    );
    let ww = flowop(&r, "ww");
    assert_eq!((ww.ops, ww.write_ops, ww.write_bytes), (3, 3, 30000));
    for i in 1..=3 {
        let p = d.path().join("ws").join(format!("{i:08}"));
        assert_eq!(std::fs::metadata(p).unwrap().len(), 10000);
    }
}

#[test]
fn fb_indexed_randvar_is_sampled_per_pick() {
    // flowoplib_pickfile evaluates indexed= on every pick; the table variable gives 0 or 4
    // (rand_table_get with min 0 = the table's min: values of the table itself), and
    // FILESET_PICKBYINDEX takes the first existing entry at or after it. Two deletions hit
    // entries among 0, 1, 4, 5 -- never entry 2, which a fixed index (the mean, 2) hits.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define randvar name=$ix, type=tabular, min=0, randtable={{50, 0, 0}, {50, 4, 4}}
define fileset name=ix,path=$dir,entries=8,size=1k,prealloc
define process name=p { thread name=t {
  flowop deletefile name=del,filesetname=ix,indexed=$ix
  flowop finishoncount name=f,value=2,target=del } }
run 20",
        true,
    );
    assert_eq!(flowop(&r, "del").ops, 2);
    let gone: Vec<usize> = (1..=8).filter(|&i| !exists(d.path(), "ix", i)).collect();
    assert_eq!(gone.len(), 2);
    assert!(gone.iter().all(|g| [1, 2, 5, 6].contains(g)), "{gone:?}");
}

#[test]
fn fb_indexed_takes_the_next_entry_in_the_right_state() {
    // indexed=1 on 4 files: fileset_find_entry returns entry 1, then (1 gone) entry 2, then
    // 3, then wraps to 0: all 4 deleted, then out of files.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=ix,path=$dir,entries=4,size=1k,prealloc
define process name=p { thread name=t { flowop deletefile name=del,filesetname=ix,indexed=1 } }
run 20",
        true,
    );
    assert_eq!(flowop(&r, "del").ops, 4);
    assert!(files_under(&d.path().join("ix")).is_empty());
}

#[test]
fn fb_listdir_counts_dirent_bytes() {
    // flowoplib_listdir adds strlen(d_name) + sizeof(struct dirent) - 1 (280 - 1 on glibc)
    // per entry: ".", ".." and 3 files of 8-character names in the one directory:
    // (1 + 279) + (2 + 279) + 3 * (8 + 279) = 1422 bytes per listing.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=ld,path=$dir,entries=3,size=1k,prealloc
define process name=p { thread name=t {
  flowop listdir name=ls,filesetname=ld
  flowop finishoncount name=f,value=2,target=ls } }
run 20",
        false,
    );
    let ls = flowop(&r, "ls");
    assert_eq!((ls.ops, ls.read_bytes, ls.read_ops), (2, 2 * 1422, 0));
}

#[test]
fn fb_bwlimit_bucket_carries_over() {
    // flowoplib_bwlimit: the bucket loses the bytes done since the last pass and, when below
    // 0, takes (deficit / 1 MiB) + 1 events, adding 1 MiB each. With 256k per pass that is
    // one event per 4 passes: 40 passes (finishonbytes > 39 * 256k) take 10 events, 0.5 s
    // at 20 events/s. Charging an event per pass would take 39 events, about 2 s.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
eventgen rate=20
define file name=f,path=$dir,size=1m,prealloc
define process name=p { thread name=t {
  flowop read name=rd,filename=f,iosize=256k,random,fd=1
  flowop bwlimit name=bw
  flowop finishonbytes name=fb,value=10223616,target=rd } }
run 20",
        false,
    );
    assert_eq!(flowop(&r, "rd").read_bytes, 40 * 262144);
    let t = runs(&r)[0].duration_s;
    assert!(t > 0.35 && t < 1.3, "{t}");
}

#[test]
fn fb_iopslimit_counts_flowop_executions() {
    // flowoplib_iopslimit counts controlstats' read + write ops: one per readwholefile
    // execution (one flowop_endop), not one per read(2). 25 passes take 24 events: about
    // 0.5 s at 50/s; counting the 16 reads of each pass would need about 8 s.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
eventgen rate=50
define file name=f,path=$dir,size=64k,prealloc
define process name=p { thread name=t {
  flowop openfile name=o,filename=f,fd=1
  flowop readwholefile name=rw,fd=1,iosize=4k
  flowop closefile name=c,fd=1
  flowop iopslimit name=il
  flowop finishoncount name=fin,value=25,target=rw } }
run 20",
        false,
    );
    assert_eq!(flowop(&r, "rw").ops, 25);
    let t = runs(&r)[0].duration_s;
    assert!(t > 0.3 && t < 2.0, "{t}");
}

#[test]
fn fb_opennext_keeps_up_to_128_files_open() {
    // flowoplib_fdnum with rotatefd: descriptors 127 down to 0, then 127 again. Each of the
    // first 128 executions opens a file on its descriptor (one more op); later ones reuse
    // the open descriptor. 130 executions: 130 + 128 ops, 130 reads.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=on,path=$dir,entries=5,size=64k,prealloc
define process name=p { thread name=t {
  flowop read name=rd,filesetname=on,iosize=4k,random,opennext
  flowop finishoncount name=f,value=258,target=rd } }
run 20",
        false,
    );
    let rd = flowop(&r, "rd");
    assert_eq!((rd.ops, rd.read_bytes), (258, 130 * 4096));
}

#[test]
fn fb_deletefile_with_fd_and_no_fileset() {
    // networkfs: deletefile fd=1 deletes the file last opened on fd 1 (tf_fse[1] is kept
    // after closefile). Openfile takes files 1, 2, 3 in rotation; each is deleted; then out
    // of files.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=df,path=$dir,entries=3,size=1k,prealloc
define process name=p { thread name=t {
  flowop openfile name=o,filesetname=df,fd=1
  flowop closefile name=c,fd=1
  flowop deletefile name=del,fd=1 } }
run 20",
        true,
    );
    assert_eq!(flowop(&r, "o").ops, 3);
    assert_eq!(flowop(&r, "del").ops, 3);
    assert!(files_under(&d.path().join("df")).is_empty());
}

#[test]
fn fb_set_randvar_syntax_and_system() {
    // Filebench 1.5's `set $x = randvar(...)` is `define randvar name=$x, ...`; `system`
    // runs its command through the shell at that point of the script.
    let d = tempfile::tempdir().unwrap();
    let marker = d.path().join("ran");
    let r = run(
        d.path(),
        &format!(
            "set mode quit alldone
set $sz = randvar(type=tabular, min=1k, randtable={{{{50, 1k, 1k}}, {{50, 3k, 3k}}}})
system \"touch {}\"
define fileset name=rv,path=$dir,entries=4,size=0,prealloc=0
define process name=p {{ thread name=t {{
  flowop createfile name=c,filesetname=rv,fd=1
  flowop write name=w,fd=1,iosize=$sz
  flowop closefile name=cl,fd=1 }} }}
run 20",
            marker.display()
        ),
        false,
    );
    assert!(marker.exists(), "system command ran");
    let w = flowop(&r, "w");
    assert_eq!(w.ops, 4);
    // rand_table_get maps the table onto [min, mean]: with min = the table's minimum, draws
    // are 1k or 3k (not min + value: 2k or 4k).
    for b in [
        4 * 1024,
        2 * 1024 + 2 * 3072,
        1024 + 3 * 3072,
        4 * 3072,
        3 * 1024 + 3072,
    ] {
        if w.write_bytes == b {
            return;
        }
    }
    panic!("write bytes {} are not 4 draws of 1k or 3k", w.write_bytes);
}

#[test]
fn fb_composite_local_variables() {
    // Filebench's comp_lvar_def: `define flowop name=X, $v { ... $v ... }` declares a local
    // variable that each use binds (`flowop X name=..., $v=value`). Two uses on two filesets
    // of 2 files: each creates its own 2 files, then both are out of files.
    let d = tempfile::tempdir().unwrap();
    let r = run(
        d.path(),
        "set mode quit alldone
define fileset name=a,path=$dir,entries=2,size=1k,prealloc=0
define fileset name=b,path=$dir,entries=2,size=1k,prealloc=0
define flowop name=mk, $fs, $n=1
{
  flowop createfile name=c,filesetname=$fs,fd=1
  flowop write name=w,fd=1,iosize=1k,iters=$n
  flowop closefile name=cl,fd=1
}
define process name=p {
  thread name=t1 { flowop mk name=m1, $fs=a }
  thread name=t2 { flowop mk name=m2, $fs=b, $n=3 } }
run 20",
        true,
    );
    let w: u64 = r
        .groups
        .iter()
        .filter(|g| g.name == "w")
        .map(|g| g.stats.write_bytes)
        .sum();
    // a: 2 files x 1 write; b: 2 files x 3 writes.
    assert_eq!(w, (2 + 6) * 1024);
    assert_eq!(files_under(&d.path().join("a")).len(), 2);
    assert_eq!(files_under(&d.path().join("b")).len(), 2);
}

/// Loading errors quote user text (strings, `-D` values, the file name) with its control
/// characters escaped, so the usage error stays the one line it promises (the
/// `parse_fuzz::mutated_stock_files_are_usage_errors` proptest found `found '<newline>'`).
#[test]
fn user_text_with_control_characters_stays_one_line() {
    let cases = [
        (
            "t.f",
            "define fileset name=fs,path=/tmp/x,entries=$n\n",
            vec![("n".into(), "\n".into())],
            r"found '\n'",
        ),
        (
            "t.f",
            "set $x=\"a\u{1}b\"\ndefine fileset name=fs,path=/tmp/x,entries=$x\n",
            vec![],
            r"found 'a\u{1}b'",
        ),
        (
            "t.f",
            "define process name=p { thread name=t { flowop statfile name=s,filesetname=\"a\\tb\" } }\n",
            vec![],
            r"named 'a\tb'",
        ),
        (
            "t.f",
            "set $s=cvar(type=cvar-gamma,parameters=\"mean:1\u{2};gamma:1\")\n",
            vec![],
            r"1\u{2}",
        ),
        (
            "t.f",
            "set $s=cvar(type=\"cvar-\u{7}\",parameters=mean:1)\n",
            vec![],
            r"cvar-\u{7}",
        ),
        ("a\nb.f", "frob\n", vec![], r"a\nb.f:1:1"),
    ];
    for (name, text, defines, shown) in cases {
        let src = Source {
            name: name.into(),
            text: text.into(),
            defines,
            shared_rank: None,
        };
        let e = super::load_source(&src).expect_err(text);
        assert!(crate::error::is_usage(&e), "{e:#}");
        let msg = e.to_string();
        assert!(!msg.chars().any(char::is_control), "{msg:?}");
        assert!(msg.contains(shown), "{msg:?} lacks {shown}");
    }
}
