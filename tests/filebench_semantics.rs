//! Filebench 1.5 semantics through the real binary: the fileserver flow (createfile then
//! writewholefile srcfd) writes each file's planned size, across real worker processes, and
//! `system "cmd"` runs (printed) or is refused with --no-system. The per-rule tests with
//! their derivations from Filebench's source are in src/workload/tests.rs.

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
