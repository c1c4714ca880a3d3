//! fio's job file format, read into sections of `key[=value]` options: `[global]` and job
//! sections, `;` and `#` comments, `${VAR}` environment expansion, `include FILE` (relative to
//! the including file, bounded depth), and fio's command-line form (`--name=x --rw=read`,
//! where each `--name` starts a job and options before the first one are global). Values
//! stay strings here; [`super::map`] reads them with fio's unit rules.
//!
//! Every size read from input is bounded: file length, line count, sections, options per
//! section, value length after expansion and include depth.

use crate::error::UsageError;
use crate::usage;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest job file read (fio job files are a few kilobytes).
pub(crate) const MAX_FILE_BYTES: u64 = 1 << 20;
/// Most job sections in one run (each becomes a Job and a Result).
pub(crate) const MAX_JOBS: usize = 256;
/// Most options one section (with what it inherits) may hold.
pub(crate) const MAX_OPTIONS: usize = 512;
/// Longest option value after `${VAR}` expansion.
pub(crate) const MAX_VALUE: usize = 64 << 10;
/// How deep `include` may nest.
pub(crate) const MAX_INCLUDE_DEPTH: usize = 8;
/// Most files read through `include`, in all.
const MAX_INCLUDES: usize = 64;

/// One `key` or `key=value` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Opt {
    pub key: String,
    pub value: Option<String>,
}

/// A job section: its name and its options, the global ones it inherits first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    pub name: String,
    pub options: Vec<Opt>,
}

impl Section {
    /// The last value given for `key` (later options override earlier ones, as in fio).
    pub(crate) fn last(&self, key: &str) -> Option<&Opt> {
        self.options.iter().rev().find(|o| o.key == key)
    }
}

/// Reading state: the global options so far and the jobs defined.
struct Reader<'e> {
    env: &'e dyn Fn(&str) -> Option<String>,
    global: Vec<Opt>,
    jobs: Vec<Section>,
    /// The section lines currently go to: None before any section header.
    current: Option<Current>,
    includes: usize,
}

enum Current {
    Global,
    Job(usize),
}

impl<'a> Reader<'a> {
    /// A reader with no section read yet.
    fn new(env: &'a dyn Fn(&str) -> Option<String>) -> Reader<'a> {
        Reader {
            env,
            global: Vec::new(),
            jobs: Vec::new(),
            current: None,
            includes: 0,
        }
    }
}

/// Read a job file (and what it includes) into job sections.
pub(crate) fn parse_file(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Section>, UsageError> {
    let mut r = Reader::new(env);
    r.file(path, 0)?;
    r.finish()
}

/// Read job file text (no includes relative to a file: `include` names are taken relative
/// to the current directory).
#[cfg(test)]
pub(crate) fn parse_text(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Section>, UsageError> {
    let mut r = Reader::new(env);
    r.text(text, "<text>", Path::new("."), 0)?;
    r.finish()
}

/// Read at most [`MAX_FILE_BYTES`] of a regular file.
fn read_bounded(path: &Path) -> Result<String, UsageError> {
    let f = std::fs::File::open(path)
        .map_err(|e| usage!("cannot read fio job file {}: {e}", path.display()))?;
    let meta = f
        .metadata()
        .map_err(|e| usage!("cannot read fio job file {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(usage!(
            "fio job file {} is not a regular file",
            path.display()
        ));
    }
    let mut buf = Vec::new();
    f.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| usage!("cannot read fio job file {}: {e}", path.display()))?;
    if buf.len() as u64 > MAX_FILE_BYTES {
        return Err(usage!(
            "fio job file {} is larger than {} KiB: not a job file",
            path.display(),
            MAX_FILE_BYTES >> 10
        ));
    }
    String::from_utf8(buf).map_err(|_| {
        usage!(
            "fio job file {} is not UTF-8 text: not a job file",
            path.display()
        )
    })
}

impl Reader<'_> {
    fn file(&mut self, path: &Path, depth: usize) -> Result<(), UsageError> {
        let text = read_bounded(path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        self.text(&text, &path.display().to_string(), dir, depth)
    }

    fn text(
        &mut self,
        text: &str,
        origin: &str,
        dir: &Path,
        depth: usize,
    ) -> Result<(), UsageError> {
        for (n, raw) in text.lines().enumerate() {
            let at = || format!("{origin}:{}", n + 1);
            let line = strip_comment(raw).trim();
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                let name = rest
                    .strip_suffix(']')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| {
                        usage!("{}: bad section header '{line}': expected [name]", at())
                    })?;
                self.section(name, &at())?;
                continue;
            }
            if let Some(file) = include_target(line) {
                if depth >= MAX_INCLUDE_DEPTH || self.includes >= MAX_INCLUDES {
                    return Err(usage!(
                        "{}: include {file}: includes nest deeper than {MAX_INCLUDE_DEPTH} or exceed {MAX_INCLUDES} files (an include loop?)",
                        at()
                    ));
                }
                self.includes += 1;
                let file = self.expand(file, &at())?;
                let p = PathBuf::from(&file);
                let p = if p.is_absolute() { p } else { dir.join(p) };
                self.file(&p, depth + 1)?;
                continue;
            }
            let opt = self.option(line, &at())?;
            self.push(opt, &at())?;
        }
        Ok(())
    }

    fn section(&mut self, name: &str, at: &str) -> Result<(), UsageError> {
        if name == "global" {
            self.current = Some(Current::Global);
            return Ok(());
        }
        if self.jobs.len() >= MAX_JOBS {
            return Err(usage!("{at}: more than {MAX_JOBS} job sections"));
        }
        self.jobs.push(Section {
            name: name.to_string(),
            options: self.global.clone(),
        });
        self.current = Some(Current::Job(self.jobs.len() - 1));
        Ok(())
    }

    fn option(&self, line: &str, at: &str) -> Result<Opt, UsageError> {
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(self.expand(v.trim(), at)?)),
            None => (line, None),
        };
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(usage!(
                "{at}: bad option '{line}': expected name=value or name"
            ));
        }
        Ok(Opt {
            key: key.to_string(),
            value,
        })
    }

    fn push(&mut self, opt: Opt, at: &str) -> Result<(), UsageError> {
        let list = match self.current {
            None => {
                return Err(usage!(
                    "{at}: option '{}' before any section: start with [global] or [jobname]",
                    opt.key
                ))
            }
            Some(Current::Global) => &mut self.global,
            Some(Current::Job(i)) => &mut self.jobs[i].options,
        };
        if list.len() >= MAX_OPTIONS {
            return Err(usage!("{at}: more than {MAX_OPTIONS} options in a section"));
        }
        list.push(opt);
        Ok(())
    }

    /// `${VAR}` replaced by the environment's value; an unset variable is an error (a
    /// silent empty value would run a different job).
    fn expand(&self, v: &str, at: &str) -> Result<String, UsageError> {
        let mut out = String::new();
        let mut rest = v;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| usage!("{at}: unterminated ${{ in '{v}'"))?;
            let name = &after[..end];
            let value = (self.env)(name).ok_or_else(|| {
                usage!("{at}: environment variable {name} is not set (used as ${{{name}}})")
            })?;
            out.push_str(&value);
            if out.len() > MAX_VALUE {
                return Err(usage!("{at}: value longer than {MAX_VALUE} bytes"));
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        if out.len() > MAX_VALUE {
            return Err(usage!("{at}: value longer than {MAX_VALUE} bytes"));
        }
        Ok(out)
    }

    fn finish(self) -> Result<Vec<Section>, UsageError> {
        if self.jobs.is_empty() {
            return Err(usage!(
                "no job sections: an fio job file needs at least one [jobname] section besides [global]"
            ));
        }
        Ok(self.jobs)
    }
}

/// The line without a comment: whole-line `;`/`#`, or one that follows whitespace.
fn strip_comment(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with(';') || t.starts_with('#') {
        return "";
    }
    let b = line.as_bytes();
    for i in 1..b.len() {
        if (b[i] == b';' || b[i] == b'#') && b[i - 1].is_ascii_whitespace() {
            return &line[..i];
        }
    }
    line
}

/// `include FILE` lines.
fn include_target(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("include")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let f = rest.trim();
    (!f.is_empty()).then_some(f)
}

/// fio's command-line form: `--name=a --rw=read --name=b ...`. Options before the first
/// `--name` are global; each `--name` starts a job that inherits them. Values are given
/// `--key=value` (or `--key value` when the next word does not start with `--`); a bare
/// `--key` is a switch.
pub(crate) fn parse_args(args: &[String]) -> Result<Vec<Section>, UsageError> {
    let no_env = |_: &str| None;
    let mut r = Reader {
        env: &no_env,
        global: Vec::new(),
        jobs: Vec::new(),
        current: Some(Current::Global),
        includes: 0,
    };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let body = a.strip_prefix("--").ok_or_else(|| {
            usage!("unexpected argument '{a}': fio options are written --name=value")
        })?;
        let (key, value) = match body.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => match args.get(i + 1).filter(|n| !n.starts_with("--")) {
                Some(n) => {
                    i += 1;
                    (body.to_string(), Some(n.clone()))
                }
                None => (body.to_string(), None),
            },
        };
        if value.as_ref().is_some_and(|v| v.len() > MAX_VALUE) {
            return Err(usage!("--{key}: value longer than {MAX_VALUE} bytes"));
        }
        let at = format!("--{key}");
        if key == "name" {
            let name = value
                .clone()
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| usage!("--name needs a job name: --name=NAME"))?;
            r.section(name.trim(), &at)?;
        }
        let opt = r.option(
            &match &value {
                Some(v) => format!("{key}={v}"),
                None => key.clone(),
            },
            &at,
        )?;
        r.push(opt, &at)?;
        i += 1;
    }
    if r.jobs.is_empty() {
        return Err(usage!(
            "no job: give a job file, or fio options with at least one --name=NAME"
        ));
    }
    Ok(r.jobs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn env(name: &str) -> Option<String> {
        (name == "SIZE").then(|| "64k".to_string())
    }

    fn val<'a>(s: &'a Section, k: &str) -> Option<&'a str> {
        s.last(k).and_then(|o| o.value.as_deref())
    }

    #[test]
    fn global_inheritance_comments_and_env() {
        let text = "; comment\n# another\n[global]\nbs=4k ; trailing\nsize=${SIZE}\n\n[a]\nrw=read\n[b]\nbs=8k\ndirect\n[global]\nrw=write\n[c]\n";
        let s = parse_text(text, &env).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(val(&s[0], "bs"), Some("4k"));
        assert_eq!(val(&s[0], "size"), Some("64k"));
        assert_eq!(val(&s[1], "bs"), Some("8k"));
        assert_eq!(s[1].last("direct").unwrap().value, None);
        // A later [global] affects only the jobs after it.
        assert_eq!(val(&s[1], "rw"), None);
        assert_eq!(val(&s[2], "rw"), Some("write"));
    }

    #[test]
    fn errors_are_one_clear_line() {
        for (text, want) in [
            ("bs=4k\n[a]\n", "before any section"),
            ("[a\n", "bad section header"),
            ("[a]\nsize=${NOPE}\n", "NOPE is not set"),
            ("[a]\nsize=${SIZE\n", "unterminated"),
            ("[global]\nbs=4k\n", "no job sections"),
            ("[a]\nb s=1\n", "bad option"),
        ] {
            let e = parse_text(text, &env).unwrap_err().0;
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn includes_are_relative_and_bounded() {
        let d = std::env::temp_dir().join(format!("fsbench-fio-inc-{}", std::process::id()));
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(
            d.join("main.fio"),
            "[global]\ninclude sub/common.fio\n[a]\n",
        )
        .unwrap();
        std::fs::write(d.join("sub/common.fio"), "bs=16k\n").unwrap();
        std::fs::write(d.join("loop.fio"), "include loop.fio\n").unwrap();
        let s = parse_file(&d.join("main.fio"), &env).unwrap();
        assert_eq!(val(&s[0], "bs"), Some("16k"));
        let e = parse_file(&d.join("loop.fio"), &env).unwrap_err().0;
        assert!(e.contains("nest deeper"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn command_line_form() {
        let a: Vec<String> = "--bs=4k --name=a --rw=randread --name b --size 1m --direct"
            .split_whitespace()
            .map(String::from)
            .collect();
        let s = parse_args(&a).unwrap();
        assert_eq!((s[0].name.as_str(), s[1].name.as_str()), ("a", "b"));
        assert_eq!(val(&s[0], "bs"), Some("4k"));
        assert_eq!(val(&s[0], "rw"), Some("randread"));
        assert_eq!(val(&s[1], "rw"), None);
        assert_eq!(val(&s[1], "size"), Some("1m"));
        assert!(parse_args(&["--bs=4k".into()]).is_err());
        assert!(parse_args(&["x".into()]).is_err());
    }

    proptest! {
        #[test]
        fn parser_never_panics(text in "\\PC{0,200}") {
            let _ = parse_text(&text, &env);
        }

        #[test]
        fn structured_text_never_panics(lines in prop::collection::vec(
            "(\\[[a-z]{0,4}\\]?|[a-z_]{1,6}(=[-0-9a-zA-Z:,${}]{0,8})?|; x|include [a-z]{0,3})", 0..12)) {
            let _ = parse_text(&lines.join("\n"), &env);
        }

        #[test]
        fn args_never_panic(args in prop::collection::vec("(--)?[a-z_=0-9,:]{0,10}", 0..8)) {
            let _ = parse_args(&args);
        }
    }
}
