//! The loader's tests: what it accepts, what it refuses and where it says the mistake is.

use super::*;
use crate::workload::parser::parse;

fn load_str(s: &str) -> R<Model> {
    load(&parse(s).unwrap(), &HashMap::new())
}

#[test]
fn overrides_win_and_undefined_vars_are_reported() {
    let src = "set $n=10\ndefine fileset name=fs,path=/tmp/x,entries=$n,size=1k\ndefine process name=p { thread name=t { flowop statfile name=s,filesetname=fs } }\nrun 1";
    let m = load_str(src).unwrap();
    assert_eq!(m.filesets[0].entries, 10);
    let mut o = HashMap::new();
    o.insert("n".to_string(), define_value("3k"));
    let m = load(&parse(src).unwrap(), &o).unwrap();
    assert_eq!(m.filesets[0].entries, 3072);
    let e = load_str("define fileset name=fs,path=$dir,entries=1").unwrap_err();
    assert_eq!(e.pos, Pos { line: 1, col: 24 });
    assert!(e.msg.contains("$dir is not set"));
}

#[test]
fn semblock_without_post_is_refused() {
    let e = load_str(
        "define process name=p { thread name=t { flowop semblock name=wait,value=1 } }\nrun 1",
    )
    .unwrap_err();
    assert!(e.msg.contains("can never proceed"), "{}", e.msg);
    let e = load_str(
        "define process name=p { thread name=t { flowop sempost name=post,target=nosuch } }",
    )
    .unwrap_err();
    assert!(e.msg.contains("no semblock"), "{}", e.msg);
    let ok = load_str("define process name=p { thread name=t { flowop semblock name=wait,value=1\nflowop sempost name=post,target=wait,value=1 } }\nrun 1").unwrap();
    assert_eq!(ok.sems.len(), 1);
}

#[test]
fn negative_or_non_finite_amounts_are_refused() {
    for (attr, v) in [
        ("entries", "-1"),
        ("size", "-5"),
        ("dirwidth", "-2"),
        ("leafdirs", "-1"),
    ] {
        let src = format!("define fileset name=fs,path=/tmp/x,{attr}={v}");
        let e = load_str(&src).unwrap_err();
        assert!(
            e.msg.contains("finite number of 0 or more"),
            "{attr}={v}: {}",
            e.msg
        );
    }
    for v in ["nan", "1e400", "-inf", "-7"] {
        let mut o = HashMap::new();
        o.insert("n".to_string(), define_value(v));
        let src = "define fileset name=fs,path=/tmp/x,entries=$n";
        assert!(load(&parse(src).unwrap(), &o).is_err(), "-D n={v}");
    }
    for t in [
        "define process name=p,instances=-1 { thread name=t { flowop hog name=h,value=1 } }",
        "define process name=p { thread name=t,instances=-3 { flowop hog name=h,value=1 } }",
        "define process name=p { thread name=t { flowop hog name=h,value=-1 } }",
        "define process name=p { thread name=t { flowop hog name=h,value=1,iters=-1 } }",
        "sleep -1",
    ] {
        let e = load_str(t).unwrap_err();
        assert!(e.msg.contains("0 or more"), "{t}: {}", e.msg);
    }
}

#[test]
fn semantic_errors_name_the_place() {
    let e = load_str("define process name=p {\n thread name=t {\n  flowop frob name=x\n }\n}")
        .unwrap_err();
    assert_eq!(e.pos, Pos { line: 3, col: 10 });
    let e = load_str("define file name=f,path=/tmp,readonly\ndefine process name=p { thread name=t { flowop write name=w,filename=f,iosize=4k } }").unwrap_err();
    assert!(e.msg.contains("readonly"));
    let e = load_str("define fileset name=f,path=/tmp,entries=2,bogus=1").unwrap_err();
    assert!(e.msg.contains("unknown fileset attribute 'bogus'"));
}

/// The script commands in file order, notes for what is ignored, nothing after `quit`.
#[test]
fn script_commands_in_order_and_quit_ends_the_file() {
    let m = load_str("set $t=3\neventgen rate=5\nenable lathist\nenable multi\ncreate files\ncreate processes\nrun $t\npsrun -2 4\npsrun\nsleep 1\necho \"t=$t\"\nsystem \"true $t\"\nversion\ndefine process name=p { thread name=t { flowop hog name=h,value=1 } }\nquit\nrun 9\n").unwrap();
    assert_eq!(
        m.script,
        vec![
            Cmd::Eventgen(5.0),
            Cmd::CreateFiles,
            Cmd::Run {
                secs: Some(3.0),
                psrun: None
            },
            Cmd::Run {
                secs: Some(4.0),
                psrun: Some((2.0, true))
            },
            Cmd::Run {
                secs: None,
                psrun: Some((10.0, false))
            },
            Cmd::Sleep(1.0),
            Cmd::Echo("t=3".into()),
            Cmd::System("true 3".into()),
        ]
    );
    assert!(m.lathist);
    assert_eq!(
        m.notes,
        vec![
            "'enable multi' (multi-client sync) is ignored".to_string(),
            "line 13: 'version' is accepted and ignored".to_string(),
        ]
    );
    assert_eq!(m.vars, vec![("t".to_string(), "3".to_string())]);
    assert_eq!(m.processes.len(), 1);
}

/// Loader mistakes of the statements and flowops: message and place.
#[test]
fn statement_and_flowop_mistakes_name_the_place() {
    let p = "define process name=p { thread name=t { flowop hog name=h,value=1 } }\n";
    let cases: Vec<(String, (u32, u32), &str)> = vec![
        ("eventgen".into(), (1, 1), "eventgen needs rate=N (events per second)"),
        ("eventgen rate=1,burst=2".into(), (1, 17), "unknown eventgen attribute 'burst': expected rate"),
        ("enable foo".into(), (1, 1), "cannot enable 'foo': expected lathist"),
        (format!("{p}psrun 0"), (2, 1), "psrun period must be more than 0 seconds"),
        (format!("{p}run -1"), (2, 1), "run time must be a finite number of 0 or more, found -1"),
        ("sleep 1\nrun 1".into(), (1, 1), "the workload defines no process: add `define process name=p { thread name=t { flowop ... } }`"),
        ("define file name=f,path=/tmp\ndefine file name=f,path=/tmp".into(), (2, 1), "fileset 'f' is defined twice"),
        ("define flowop name=a { flowop a name=x }\ndefine process name=p { thread name=t { flowop a name=y } }".into(), (1, 31), "composite flowops nest too deep (more than 8 levels)"),
        ("define process name=p { thread name=t { flowop hog value=1 } }".into(), (1, 48), "flowop hog needs name=..."),
        ("define process name=p { thread name=t { flowop read name=r,filename=nof } }".into(), (1, 60), "no fileset or file named 'nof' is defined (define it before the process)"),
        ("define process name=p { thread name=t { flowop hog name=h,fd=2000 } }".into(), (1, 59), "fd must be a whole number from 0 to 1024"),
        ("define process name=p { thread name=t { flowop hog name=h,colour=2 } }".into(), (1, 59), "unknown flowop attribute 'colour': expected one of name, filesetname, filename, fd, srcfd, iosize, random, workingset, dsync, directio, noreadahead, opennext, indexed, iters, value, target, blocking, highwater, rotatefd"),
    ];
    for (src, (line, col), msg) in cases {
        let e = load_str(&src).unwrap_err();
        assert_eq!((e.pos, e.msg.as_str()), (Pos { line, col }, msg), "{src}");
    }
}

/// A composite's attributes apply to its uses unless a use gives its own.
#[test]
fn composite_definition_attributes_are_defaults() {
    let m = load_str("define flowop name=c, iters=4 { flowop hog name=h,value=1 }\ndefine process name=p { thread name=t { flowop c name=u\nflowop c name=v,iters=2 } }").unwrap();
    let f = &m.processes[0].threads[0].flowops;
    assert_eq!(
        (f[0].kind, f[0].iters, f[0].inner.len()),
        (Kind::Composite, 4, 1)
    );
    assert_eq!((f[1].name.as_str(), f[1].iters), ("v", 2));
    assert_eq!(f[1].inner[0].stat, 3);
}
