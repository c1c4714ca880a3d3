//! `fsbench ior` on one host through the binary: IOR's -b/-t/-s move exactly b x s bytes each
//! way in transfers of t, -F and -z keep that amount, -i N gives a Result per phase and
//! iteration and IOR's summary over them, -k keeps the file (else it is removed), and bad
//! flags are one-line refusals with exit status 2.

mod common;
use common::{file_len, u, words, Sandbox};
use serde_json::Value;

/// `fsbench ior LINE --output r.json`: every Result, in order (write, read per iteration).
fn ior(sb: &Sandbox, line: &str) -> Vec<Value> {
    let mut args = vec!["ior"];
    args.extend(words(line));
    match sb.run_json(&args) {
        Value::Array(v) => v,
        one => vec![one],
    }
}

const MIB: u64 = 1 << 20;

#[test]
fn write_and_read_move_b_times_s_each_way_in_transfers_of_t() {
    let sb = Sandbox::new();
    let r = ior(&sb, "-w -r -b 4m -t 64k -s 2 -o f");
    assert_eq!(r.len(), 2);
    let (w, rd) = (&r[0]["total"], &r[1]["total"]);
    assert_eq!((u(&w["write_bytes"]), u(&w["read_bytes"])), (8 * MIB, 0));
    assert_eq!(u(&w["write_ops"]), 8 * MIB / 65536);
    assert_eq!((u(&rd["read_bytes"]), u(&rd["write_bytes"])), (8 * MIB, 0));
    assert_eq!(u(&rd["read_ops"]), 128);
    assert_eq!(r[0]["job"]["block_size"], 65536);
    // Without -k the file is gone afterwards.
    assert!(!sb.file("f").exists(), "{:?}", sb.listing());
}

#[test]
fn neither_w_nor_r_does_both_and_k_keeps_the_file() {
    let sb = Sandbox::new();
    let r = ior(&sb, "-b 1m -t 256k -s 3 -k -o f");
    assert_eq!(r.len(), 2);
    assert_eq!(u(&r[0]["total"]["write_bytes"]), 3 * MIB);
    assert_eq!(u(&r[1]["total"]["read_bytes"]), 3 * MIB);
    assert_eq!(file_len(&sb.file("f")), 3 * MIB);
}

#[test]
fn file_per_process_random_fsync_and_check_write_map_onto_the_job() {
    let sb = Sandbox::new();
    let r = ior(&sb, "-w -F -z -e -W -b 1m -t 64k -s 2 -o f");
    assert_eq!(r.len(), 1);
    let j = &r[0]["job"];
    assert_eq!(j["access"], "randwrite");
    assert_eq!(
        (j["random_map"].as_bool(), j["fsync"].as_bool()),
        (Some(true), Some(true))
    );
    // Random offsets, each transfer once: still exactly b x s.
    assert_eq!(u(&r[0]["total"]["write_bytes"]), 2 * MIB);
    assert_eq!(u(&r[0]["total"]["write_ops"]), 32);
    // -W: the written blocks were read back and checked.
    let v = &r[0]["verify"];
    assert!(v.is_object(), "{v}");
    assert_eq!(r[0]["status"], "complete");
}

#[test]
fn iterations_give_a_result_each_and_iors_summary() {
    let sb = Sandbox::new();
    let r = ior(&sb, "-w -r -b 256k -t 64k -i 3 -o f");
    assert_eq!(r.len(), 6);
    let names: Vec<&str> = r.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names[0], "ior write 1/3");
    assert_eq!(names[5], "ior read 3/3");
    let out = sb
        .cmd(&words("ior -w -r -b 256k -t 64k -i 3 -o g"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    let tail = text.split("Summary of all tests:").nth(1).expect("summary");
    let rows: Vec<Vec<&str>> = tail
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.first().is_some_and(|w| *w == "write" || *w == "read"))
        .collect();
    assert_eq!(rows.len(), 2, "{tail}");
    for row in rows {
        // Max >= Mean >= Min MiB/s, over 3 iterations (the last column).
        let n = |i: usize| row[i].parse::<f64>().unwrap();
        assert!(n(1) >= n(3) && n(3) >= n(2) && n(2) > 0.0, "{row:?}");
        assert_eq!(row.last(), Some(&"3"), "{row:?}");
    }
    assert!(!sb.file("g").exists());
}

#[test]
fn bad_flags_are_refused_in_one_line_with_status_2() {
    let sb = Sandbox::new();
    for (line, want) in [
        ("-b 1m -t 3k", "must divide -b"),
        ("-R", "-R"),
        ("-c", "-c"),
        ("-a MPIIO", "-a MPIIO"),
        ("-Q 3 -C", "-Q 3"),
        ("-r -W", "add -w"),
        ("-b", "-b needs a value"),
        ("-i 0", "-i 0"),
        ("--posix.odirect", "long options"),
        ("stray", "unexpected argument"),
    ] {
        let mut args = vec!["ior", "-o", "f"];
        args.extend(words(line));
        let o = sb.cmd(&args).assert().code(2).get_output().clone();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{line}: {err}");
        assert!(err.contains(want), "{line}: {err}");
    }
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

/// -Y syncs after every write, the last one too, as IOR does: four writes, four fsyncs.
#[test]
fn y_syncs_after_every_write_the_last_one_too() {
    let sb = Sandbox::new();
    let r = ior(&sb, "-w -Y -b 64k -t 16k -s 1 -o f");
    let t = &r[0]["total"];
    assert_eq!(u(&t["write_ops"]), 4);
    assert_eq!(u(&t["syscalls"]["fsync"]), 4, "{}", t["syscalls"]);
}
