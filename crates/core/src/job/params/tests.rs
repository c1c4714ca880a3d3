use super::*;
use proptest::prelude::*;

/// A value each parameter accepts that differs from the default Job's.
fn sample(p: &Param) -> &'static str {
    match p.name {
        "rw" => "randrw",
        "bs" | "size" | "extsize" | "reserve" | "truncup" | "rate_bytes" | "ramp_bytes" => "65536",
        "cache" => "discovered=131072",
        "engine" => "uring",
        "qd" => "16",
        "threads" => "3",
        "count" | "rate_iops" | "verify_backlog" | "fsync_every" | "fdatasync_every"
        | "random_run" => "77",
        "journal" => "j.fsj",
        "time" => "2.5",
        "ramp" => "1.5",
        "steady_state" => "bw:2.5%:slope:40s",
        "steady_state_max" => "90",
        "cpus" => "0",
        "nice" => "5",
        "think" => "2ms:4",
        "nrep" => "4",
        "rwmix" => "70",
        "seed" => "12345",
        "processes" => "per-thread",
        "advise" => "noreuse,seq",
        "space_flags" => "align,trim",
        "rate_scope" => "total",
        "rate_process" => "poisson",
        "rate_min" => "65536",
        "rate_iops_min" => "77",
        "rate_cycle" => "250ms",
        "name" => "some name",
        "invalidate" => "false",
        "distribution" => "zipf:1.2",
        "bssplit" => "4k/50:8k/50,64k/100",
        "block_sizes" => "4096,65536",
        "bsrange" => "4k-16k",
        "block_align" | "skip" => "65536",
        "buffer_compress" => "50",
        "dedupe" => "30",
        "dedupe_mode" => "working-set",
        "dedupe_working_set" => "10",
        "buffer_pattern" => "0xdeadbeef",
        _ if p.kind == Kind::Bool => "true",
        other => panic!("no sample value for {other}"),
    }
}

/// The sample as vxbench writes it: a bare size is KB there.
fn vx_sample(p: &Param) -> &'static str {
    match (p.kind, sample(p)) {
        (Kind::Size, "65536") => "64",
        (Kind::Cache, "discovered=131072") => "discovered=128",
        (_, v) => v,
    }
}

/// The value at a dotted key of a TOML table.
fn at<'a>(v: &'a toml::Value, key: &str) -> Option<&'a toml::Value> {
    key.split('.').try_fold(v, |v, k| v.get(k))
}

/// Walk the table: every parameter is reachable by each front end it claims, and the
/// same value gives the same Job field whichever way it came in.
#[test]
fn every_front_end_sets_the_same_field() {
    let mut names = std::collections::HashSet::new();
    for p in PARAMS {
        assert!(names.insert(p.name), "{} twice", p.name);
        for a in p.aliases {
            assert!(names.insert(a), "alias {a} twice");
        }
        let v = sample(p);
        let base = Job::default();
        let mut by_flag = base.clone();
        p.set(&mut by_flag, v, Front::Flag).unwrap();
        assert_ne!(
            (p.show)(&by_flag),
            (p.show)(&base),
            "{}: sample is the default",
            p.name
        );
        // Round trip: what `show` prints is accepted and means the same.
        let mut again = base.clone();
        p.set(&mut again, &(p.show)(&by_flag), Front::Flag).unwrap();
        assert_eq!(again, by_flag, "{}: show/set round trip", p.name);
        if p.axis {
            let canon = crate::sweep::axis::canonical(p.name).unwrap();
            assert_eq!(canon, p.name);
            for a in p.aliases {
                assert_eq!(crate::sweep::axis::canonical(a).unwrap(), p.name);
            }
            let mut pj = crate::sweep::axis::PointJob::default();
            crate::sweep::axis::apply(&mut pj, &canon, v).unwrap();
            assert_eq!(pj.job, by_flag, "{}: axis differs from flag", p.name);
        } else {
            assert!(crate::sweep::axis::canonical(p.name).is_err(), "{}", p.name);
        }
        for spelling in p.vx {
            let mut by_vx = base.clone();
            p.set(&mut by_vx, vx_sample(p), Front::Vx(spelling))
                .unwrap();
            assert_eq!(
                (p.show)(&by_vx),
                (p.show)(&by_flag),
                "{}: vx {spelling} differs from flag",
                p.name
            );
        }
        // TOML: the key holds the field; a file with just that key gives the same field.
        let doc = toml::Value::try_from(&by_flag).unwrap();
        let val = at(&doc, p.toml)
            .unwrap_or_else(|| panic!("{}: no TOML key {}", p.name, p.toml))
            .clone();
        let mut table = toml::Value::Table(Default::default());
        let keys: Vec<&str> = p.toml.split('.').collect();
        let mut cur = &mut table;
        for k in &keys[..keys.len() - 1] {
            cur = cur
                .as_table_mut()
                .unwrap()
                .entry(k.to_string())
                .or_insert(toml::Value::Table(Default::default()));
        }
        cur.as_table_mut()
            .unwrap()
            .insert(keys[keys.len() - 1].to_string(), val);
        let text = toml::to_string(&table).unwrap();
        let from_toml = Job::from_toml(&text, "t.toml").unwrap();
        assert_eq!(from_toml, by_flag, "{}: TOML {} differs", p.name, p.toml);
    }
    // The vx and flag front ends read bare sizes differently, as vxbench and fio do.
    let mut kb = Job::default();
    get("bs").set(&mut kb, "8", Front::Vx("iosize")).unwrap();
    assert_eq!(kb.block_size, 8192);
    get("bs").set(&mut kb, "8", Front::Flag).unwrap();
    assert_eq!(kb.block_size, 8);
}

#[test]
fn one_access_parser_for_every_spelling() {
    for (a, b) in [
        ("randread", "rand_read"),
        ("randwrite", "rand_write"),
        ("randrw", "rand_mixed"),
        ("read", "seq_read"),
        ("write", "seq_write"),
        ("mmapread", "mmap_read"),
        ("mmapwrite", "mmap_write"),
        ("rw", "readwrite"),
    ] {
        assert_eq!(parse_access(a, "x").unwrap(), parse_access(b, "x").unwrap());
    }
    assert_eq!(
        parse_access("mmap_write", "x").unwrap(),
        (Access::Write, Some(EngineKind::Mmap))
    );
    let e = parse_access("frob", "--rw").unwrap_err().0;
    assert!(e.starts_with("unknown --rw 'frob': expected read,"), "{e}");
}

#[test]
fn ranges_are_checked_when_set() {
    let mut j = Job::default();
    let e = get("threads").set(&mut j, "0", Front::Flag).unwrap_err().0;
    assert_eq!(e, "bad --threads '0': must be 1 to 4096");
    let e = get("rwmix")
        .set(&mut j, "101", Front::Vx("rdpct"))
        .unwrap_err()
        .0;
    assert_eq!(e, "bad rdpct '101': must be 0 to 100");
    let e = get("qd").set(&mut j, "5000", Front::Axis).unwrap_err().0;
    assert_eq!(e, "bad queue depth '5000': must be 1 to 4096");
    assert!(get("dsync").set(&mut j, "maybe", Front::Axis).is_err());
}

/// The range a table entry states is the range its setter enforces.
#[test]
fn stated_ranges_are_enforced() {
    for p in PARAMS {
        if let Kind::Ranged { min, max } = p.kind {
            let mut j = Job::default();
            p.set(&mut j, &min.to_string(), Front::Flag).unwrap();
            p.set(&mut j, &max.to_string(), Front::Flag).unwrap();
            assert!(
                p.set(&mut j, &(max + 1).to_string(), Front::Flag).is_err(),
                "{}",
                p.name
            );
            if min > 0 {
                assert!(
                    p.set(&mut j, &(min - 1).to_string(), Front::Flag).is_err(),
                    "{}",
                    p.name
                );
            }
        }
    }
}

proptest! {
    // Whatever string reaches a setter, it returns a value or a usage error, never panics.
    #[test]
    fn setters_never_panic(i in 0..PARAMS.len(), v in "\\PC{0,24}") {
        let p = &PARAMS[i];
        for front in [Front::Flag, Front::Axis, Front::Vx("x")] {
            let mut j = Job::default();
            let _ = p.set(&mut j, &v, front);
        }
    }

    // A canonical size or count survives show -> set unchanged.
    #[test]
    fn canonical_values_round_trip(n in 1u64..(1 << 40), i in 0..PARAMS.len()) {
        let p = &PARAMS[i];
        if matches!(p.kind, Kind::Size | Kind::Bytes | Kind::Count) {
            let mut j = Job::default();
            p.set(&mut j, &n.to_string(), Front::Flag).unwrap();
            let mut k = Job::default();
            p.set(&mut k, &(p.show)(&j), Front::Flag).unwrap();
            prop_assert_eq!(j, k);
        }
    }
}
