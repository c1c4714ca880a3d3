//! The white paper's tables that came last to the whitepaper suite, run through the binary at
//! a small scale: the tuned-buffered multiple-application reads, the "GB/sec barrier" run (30
//! processes, one file, I/Os of a sixth of a stripe) and the aged study's reads after online
//! reorganisation.

mod common;
use common::{cannot, records, MountedFs, Sandbox};

fn suite(sb: &Sandbox, dir: &str, out: &str, studies: &[&str], scale: &str) -> String {
    let mut args = vec!["suite", "whitepaper", "--scale", scale, "--dir", dir];
    args.extend(["--output", out, "--progress", "never"]);
    for s in studies {
        args.extend(["--study", s]);
    }
    let o = sb.cmd(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn tuned_reads_and_the_gb_barrier_run_print_their_tables() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("t")).unwrap();
    let text = suite(
        &sb,
        "t",
        "res",
        &["tuned-multi-app-reads", "gb-barrier"],
        "0.01",
    );
    assert!(
        text.contains("Tuned Buffered") && text.contains("Discovered Direct"),
        "{text}"
    );
    assert!(
        text.contains("buffered throughput") && text.contains("discovered throughput"),
        "{text}"
    );
    assert!(text.contains("Passing the GB/sec Barrier"), "{text}");
    let barrier: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("GB/sec Barrier"))
        .collect();
    assert!(barrier.iter().any(|l| l.starts_with("read ")), "{text}");
    assert!(barrier.iter().any(|l| l.starts_with("write ")), "{text}");

    let recs = records(&sb.file("res"), "tuned-multi-app-reads-");
    assert_eq!(recs.len(), 50, "5 file counts x 5 I/O sizes x 2 policies");
    for (name, r) in &recs {
        let job = &r["job"];
        let buffered = job["cache"]["policy"] == "buffered";
        assert_eq!(buffered, name.contains("cache-buffered"), "{name}");
        if buffered {
            // Tuned: sequential read-ahead advice and the whole file reserved in one go.
            assert_eq!(job["advice"], serde_json::json!(["seq"]), "{name}");
            assert_eq!(job["space"]["reservation"], job["file_size"], "{name}");
        } else {
            assert_eq!(job["advice"], serde_json::json!([]), "{name}");
            assert!(job["space"]["reservation"].is_null(), "{name}");
        }
        assert_eq!(r["status"], "complete", "{name}");
    }

    let recs = records(&sb.file("res"), "gb-barrier-");
    assert_eq!(recs.len(), 2);
    for (name, r) in &recs {
        let job = &r["job"];
        assert_eq!(job["threads"], 30, "{name}");
        assert_eq!(job["workers"], "process_per_thread", "{name}");
        // 12 MB scaled with the 2 GB file: 30 of them fit in it.
        let bs = job["block_size"].as_u64().unwrap();
        assert_eq!(bs, (12u64 << 20) / 100 / 4096 * 4096, "{name}");
        assert!(job["file_size"].as_u64().unwrap() >= 30 * bs, "{name}");
        assert_eq!(job["cache"]["policy"], "discovered", "{name}");
        let bytes = r["total"]["bytes"].as_u64().unwrap();
        assert!(bytes >= 30 * bs, "every process did its I/O: {name}");
        assert_eq!(r["status"], "complete", "{name}");
    }
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4"
)]
fn aged_study_reads_again_after_online_reorganisation() {
    let sb = Sandbox::new();
    let Some(fs) = MountedFs::new(sb.path(), "ext4", 128) else {
        cannot("an ext4 loop file system could not be made");
    };
    let dir = fs.path().to_str().unwrap();
    let text = suite(&sb, dir, "res", &["aged"], "0.02");
    assert!(
        text.contains("Buffered Aged File System Reads after online reorganisation"),
        "{text}"
    );
    let before = records(&sb.file("res"), "aged-0");
    let after = records(&sb.file("res"), "aged-reorganised-");
    // The same reads: 1+2+3+4 file combinations at 3 I/O sizes.
    assert_eq!(after.len(), 30);
    assert_eq!(
        before.iter().filter(|(n, _)| n.contains("_read-")).count(),
        30
    );
    let mut moved = 0;
    for (name, r) in &after {
        assert_eq!(r["status"], "complete", "{name}");
        let files = r["probes"]["reorganisation"]["files"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: {}", r["probes"]));
        for f in files {
            assert_eq!(f["method"], "EXT4_IOC_MOVE_EXT", "{name}");
            assert!(f["error"].is_null(), "{name}: {f}");
            let (b, a) = (
                f["extents_before"].as_u64().unwrap(),
                f["extents_after"].as_u64().unwrap(),
            );
            assert!(a <= b, "{name}: {f}");
            moved += usize::from(a < b);
        }
        // The extents the reads saw are those after reorganisation.
        let per_file = r["probes"]["extents_per_file"].as_f64().unwrap();
        let most = files
            .iter()
            .map(|f| f["extents_after"].as_u64().unwrap())
            .max()
            .unwrap();
        assert!(per_file <= most as f64, "{name}: {per_file} > {most}");
    }
    eprintln!("{moved} reorganisations reduced a file's extents");
    // Nothing is left behind on the file system but lost+found.
    let left: Vec<_> = std::fs::read_dir(fs.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["lost+found"]);
}
