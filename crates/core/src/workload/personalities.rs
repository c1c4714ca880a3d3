//! The shipped personalities: our own `.f` files (workloads/), embedded in the binary, plus
//! named variants of the shootout (a personality with some `-D` values preset).

pub struct Personality {
    pub name: &'static str,
    pub about: &'static str,
    pub text: &'static str,
}

pub struct Variant {
    pub name: &'static str,
    pub personality: &'static str,
    pub defines: &'static [(&'static str, &'static str)],
}

macro_rules! p {
    ($name:literal, $about:literal) => {
        Personality {
            name: $name,
            about: $about,
            text: include_str!(concat!("../../../../workloads/", $name, ".f")),
        }
    };
}

pub const PERSONALITIES: &[Personality] = &[
    p!(
        "createfiles",
        "create a tree of files (create, write whole file, close) until all exist"
    ),
    p!("deletefiles", "delete every file of a preallocated tree"),
    p!(
        "copyfiles",
        "copy files from one tree to another (open, read whole, create, write whole, close)"
    ),
    p!(
        "filemicro_create",
        "create a file and append iosize pieces to it, count times"
    ),
    p!(
        "filemicro_writefsync",
        "append to a file, fsync every so often"
    ),
    p!(
        "filemicro_createrand",
        "append random-size pieces to a new file"
    ),
    p!(
        "filemicro_rread",
        "random reads of iosize from one large file"
    ),
    p!(
        "filemicro_rwrite",
        "random writes of iosize to one large file"
    ),
    p!(
        "filemicro_seqread",
        "sequential reads of iosize through one large file"
    ),
    p!(
        "filemicro_seqwrite",
        "sequential writes of iosize to a new file, count times"
    ),
    p!(
        "filemicro_seqwriterand",
        "sequential writes of random sizes up to iosize"
    ),
    p!(
        "fileserver",
        "SPECsfs-like mix: create, write, append, read whole, stat, delete"
    ),
    p!(
        "varmail",
        "/var/mail server (Postmark-like): create/append/fsync, read, delete in one dir"
    ),
    p!(
        "webproxy",
        "web proxy: create/write, read x5, delete, append to a log"
    ),
    p!(
        "webserver",
        "web server: open/read whole/close x10, append to a log"
    ),
    p!(
        "oltp",
        "database: random reads by shadows, async writes by db writers, log writer"
    ),
];

pub const VARIANTS: &[Variant] = &[
    Variant {
        name: "createandalloc",
        personality: "filemicro_create",
        defines: &[("iosize", "1m"), ("count", "64"), ("sync", "0")],
    },
    Variant {
        name: "createallocsync",
        personality: "filemicro_create",
        defines: &[("iosize", "1m"), ("count", "1k"), ("sync", "1")],
    },
    Variant {
        name: "createallocfsync",
        personality: "filemicro_writefsync",
        defines: &[],
    },
    Variant {
        name: "createallocappend",
        personality: "filemicro_createrand",
        defines: &[],
    },
    Variant {
        name: "randread2k",
        personality: "filemicro_rread",
        defines: &[("iosize", "2k"), ("cached", "0")],
    },
    Variant {
        name: "randread2kcached",
        personality: "filemicro_rread",
        defines: &[("iosize", "2k"), ("cached", "1")],
    },
    Variant {
        name: "randwrite2ksync",
        personality: "filemicro_rwrite",
        defines: &[("iosize", "2k"), ("sync", "1"), ("cached", "1")],
    },
    Variant {
        name: "randwrite2ksync4thread",
        personality: "filemicro_rwrite",
        defines: &[("iosize", "2k"), ("sync", "1"), ("nthreads", "4")],
    },
    Variant {
        name: "seqread32k",
        personality: "filemicro_seqread",
        defines: &[("iosize", "32k"), ("cached", "0")],
    },
    Variant {
        name: "seqread32kcached",
        personality: "filemicro_seqread",
        defines: &[("iosize", "32k"), ("cached", "1")],
    },
    Variant {
        name: "seqwrite32k",
        personality: "filemicro_seqwrite",
        defines: &[("iosize", "32k"), ("count", "32k"), ("sync", "0")],
    },
    Variant {
        name: "seqwrite32kdsync",
        personality: "filemicro_seqwrite",
        defines: &[("iosize", "32k"), ("count", "32k"), ("sync", "1")],
    },
    Variant {
        name: "seqwriterand8k",
        personality: "filemicro_seqwriterand",
        defines: &[("iosize", "8k"), ("count", "128k")],
    },
    Variant {
        name: "large_db_oltp_2k_cached",
        personality: "oltp",
        defines: &[("iosize", "2k"), ("cached", "1"), ("directio", "0")],
    },
    Variant {
        name: "large_db_oltp_2k_uncached",
        personality: "oltp",
        defines: &[("iosize", "2k"), ("cached", "0"), ("directio", "1")],
    },
    Variant {
        name: "large_db_oltp_8k_cached",
        personality: "oltp",
        defines: &[("iosize", "8k"), ("cached", "1"), ("directio", "0")],
    },
    Variant {
        name: "large_db_oltp_8k_uncached",
        personality: "oltp",
        defines: &[("iosize", "8k"), ("cached", "0"), ("directio", "1")],
    },
];

/// Resolve a name: a personality, or a variant (personality text plus preset defines).
pub fn find(
    name: &str,
) -> Option<(
    &'static Personality,
    &'static [(&'static str, &'static str)],
)> {
    if let Some(p) = PERSONALITIES.iter().find(|p| p.name == name) {
        return Some((p, &[]));
    }
    let v = VARIANTS.iter().find(|v| v.name == name)?;
    let p = PERSONALITIES.iter().find(|p| p.name == v.personality)?;
    Some((p, v.defines))
}

/// Whether WML `text` names the variable `var` (`$var` or `${var}`, set or used).
pub fn names_variable(text: &str, var: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.contains(&format!("${{{var}}}"))
        || text
            .match_indices(&format!("${var}"))
            .any(|(i, m)| !text[i + m.len()..].starts_with(ident))
}

/// `set $name=value` lines of a personality (its defaults), for the listing.
pub fn defaults(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("set $") {
            if let Some((k, v)) = rest.split_once('=') {
                out.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
    }
    out
}
