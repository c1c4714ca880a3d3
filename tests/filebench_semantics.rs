//! Filebench 1.5 semantics through the real binary: the fileserver flow (createfile then
//! writewholefile srcfd) writes each file's planned size, across real worker processes, and
//! `system "cmd"` runs (printed) or is refused with --no-system. The per-rule tests with
//! their derivations from Filebench's source are in crates/core/src/workload/tests.rs.

mod common;
use common::Sandbox;

#[test]
fn fileserver_flow_writes_planned_sizes_in_worker_processes() {
    // flowoplib_writewholefile: wss = tf_fse[srcfd]->fse_size. 5 files of 16000 bytes,
    // created one per pass by 1 thread: 5 createfiles, 5 writewholefiles of 16000 bytes.
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("fs.f"),
        "set mode quit alldone
define fileset name=big,path=$dir,entries=5,size=16000,prealloc=0
define process name=p,instances=1 { thread name=t {
  flowop createfile name=c,filesetname=big,fd=1
  flowop writewholefile name=ww,srcfd=1,fd=1,iosize=4k
  flowop closefile name=cl,fd=1 } }
run 20
",
    )
    .unwrap();
    let v = sb.run_json(&["workload", "fs.f", "--dir", sb.path().to_str().unwrap()]);
    let fl = v["groups"].as_array().unwrap();
    let ww = &fl.iter().find(|f| f["name"] == "ww").unwrap()["stats"];
    assert_eq!(ww["ops"], 5);
    assert_eq!(ww["write_bytes"], 5 * 16000);
}

#[test]
fn system_runs_and_no_system_refuses() {
    let sb = Sandbox::new();
    let marker = sb.file("marker");
    std::fs::write(
        sb.file("sys.f"),
        format!(
            "system \"touch {}\"
define fileset name=s,path=$dir,entries=2,size=1k,prealloc
define process name=p {{ thread name=t {{ flowop statfile name=st,filesetname=s }} }}
run 0.2
",
            marker.display()
        ),
    )
    .unwrap();
    let dir = sb.path().to_str().unwrap().to_string();
    let out = sb
        .cmd(&["workload", "sys.f", "--dir", &dir, "--no-system"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--no-system") && err.contains("touch"),
        "{err}"
    );
    assert!(!marker.exists(), "refused before running anything");
    let out = sb
        .cmd(&["workload", "sys.f", "--dir", &dir])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(marker.exists());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("system: touch"), "{text}");
}

#[test]
fn statfile_and_deletefile_without_an_open_fd_take_existing_files_of_their_fileset() {
    // flowoplib_statfile / flowoplib_deletefile: with no file open on fd, the next existing
    // file of the fileset in rotation. 4 files: three passes stat and delete one each.
    let sb = Sandbox::new();
    std::fs::write(
        sb.file("del.f"),
        "set mode quit alldone
define fileset name=fs,path=$dir,entries=4,size=4k,prealloc=100
define process name=p { thread name=t {
  flowop statfile name=s,filesetname=fs,fd=1
  flowop deletefile name=del,filesetname=fs,fd=2
  flowop finishoncount name=f,target=del,value=3 } }
run 5
",
    )
    .unwrap();
    let v = sb.run_json(&["workload", "del.f", "--dir", sb.path().to_str().unwrap()]);
    let ops = |name: &str| {
        v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .unwrap()["stats"]["ops"]
            .clone()
    };
    assert_eq!(ops("s"), 3);
    assert_eq!(ops("del"), 3);

    // Without a fileset there is nothing to take: the run fails naming the flowop and fd.
    for (flowop, want) in [
        (
            "statfile name=s,fd=1",
            "fd 1 is not open and no filesetname is given",
        ),
        (
            "deletefile name=d,fd=2",
            "fd 2 has no file and no filesetname is given",
        ),
    ] {
        std::fs::write(
            sb.file("bad.f"),
            format!(
                "define fileset name=fs,path=$dir,entries=4,size=4k,prealloc=100
define process name=p {{ thread name=t {{ flowop {flowop} }} }}
run 1
"
            ),
        )
        .unwrap();
        let out = sb
            .cmd(&["workload", "bad.f", "--dir", sb.path().to_str().unwrap()])
            .assert()
            .code(1)
            .get_output()
            .clone();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(text.contains(want), "{flowop}: {text}");
    }
}
