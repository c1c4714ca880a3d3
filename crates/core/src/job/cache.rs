//! Cache policies: how each I/O meets the page cache, and the direct-I/O alignment rule,
//! decided here once for every front end and engine.

use serde::{Deserialize, Serialize};

/// VxFS's default `discovered_direct_iosz`: I/Os of this size or larger go direct.
pub(crate) const DEFAULT_DISCOVERED_THRESHOLD: u64 = 256 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(tag = "policy", rename_all = "snake_case")]
pub enum CachePolicy {
    /// Through the page cache.
    #[default]
    Buffered,
    /// O_DIRECT for every I/O.
    Direct,
    /// Through the page cache, opened O_DSYNC: each write is on stable storage when it returns.
    Dsync,
    /// VxFS "discovered direct I/O": I/Os larger than `threshold` bytes (VxFS's
    /// `discovered_direct_iosz`) go direct; I/Os of the threshold or smaller go through the
    /// page cache.
    Discovered { threshold: u64 },
    /// The Quick I/O idea: the file is fully preallocated and written before timing, opened
    /// O_DIRECT and never extended, so concurrent writers do not serialise on allocation.
    Concurrent,
    /// A block device opened O_DIRECT.
    Raw,
}

/// Which descriptor of a file an I/O uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Route {
    Buffered = 0,
    Direct = 1,
    /// A direct I/O that is not aligned: done as data-synchronous buffered I/O, the white
    /// paper's rule for misaligned direct requests.
    Fallback = 2,
}

impl CachePolicy {
    pub fn name(&self) -> String {
        match self {
            CachePolicy::Buffered => "buffered".into(),
            CachePolicy::Direct => "direct".into(),
            CachePolicy::Dsync => "dsync".into(),
            CachePolicy::Discovered { threshold } => {
                format!("discovered={}", crate::units::format_size_exact(*threshold))
            }
            CachePolicy::Concurrent => "concurrent".into(),
            CachePolicy::Raw => "raw".into(),
        }
    }

    /// Parse `buffered`, `direct`, `dsync`, `discovered[=SIZE]`, `concurrent`, `raw`.
    pub fn parse(s: &str) -> Result<Self, crate::error::UsageError> {
        Self::parse_as(s, crate::units::BareUnit::Bytes)
    }

    /// [`CachePolicy::parse`] with a bare discovered threshold read as `bare` (vx: KB).
    pub fn parse_as(
        s: &str,
        bare: crate::units::BareUnit,
    ) -> Result<Self, crate::error::UsageError> {
        let (name, arg) = match s.split_once('=') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let p = match (name, arg) {
            ("buffered", None) => CachePolicy::Buffered,
            ("direct", None) => CachePolicy::Direct,
            ("dsync", None) => CachePolicy::Dsync,
            ("concurrent", None) => CachePolicy::Concurrent,
            ("raw", None) => CachePolicy::Raw,
            ("discovered", None) => CachePolicy::Discovered {
                threshold: DEFAULT_DISCOVERED_THRESHOLD,
            },
            ("discovered", Some(a)) => {
                let threshold =
                    crate::units::parse_size_as(a, bare, "discovered threshold")?;
                if threshold == 0 {
                    return Err(crate::usage!(
                        "bad discovered threshold '0': give a size such as 256k"
                    ));
                }
                CachePolicy::Discovered { threshold }
            }
            _ => {
                return Err(crate::usage!(
                    "unknown cache policy '{s}': expected buffered, direct, dsync, discovered[=SIZE], concurrent or raw"
                ))
            }
        };
        Ok(p)
    }

    /// Does this policy ever open the file O_DIRECT?
    pub fn uses_direct(&self) -> bool {
        !matches!(self, CachePolicy::Buffered | CachePolicy::Dsync)
    }

    /// Does the buffered descriptor need O_DSYNC?
    pub fn buffered_dsync(&self) -> bool {
        matches!(self, CachePolicy::Dsync)
    }

    /// Route one I/O. `align` is the direct-I/O alignment of the target (logical block size).
    #[inline]
    pub fn route(&self, offset: u64, len: u64, align: u64) -> Route {
        let aligned = offset.is_multiple_of(align) && len.is_multiple_of(align);
        match self {
            CachePolicy::Buffered | CachePolicy::Dsync => Route::Buffered,
            CachePolicy::Direct | CachePolicy::Concurrent | CachePolicy::Raw => {
                if aligned {
                    Route::Direct
                } else {
                    Route::Fallback
                }
            }
            CachePolicy::Discovered { threshold } => {
                if len > *threshold && aligned {
                    Route::Direct
                } else {
                    Route::Buffered
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_policies() {
        assert_eq!(CachePolicy::parse("direct").unwrap(), CachePolicy::Direct);
        assert_eq!(
            CachePolicy::parse("discovered").unwrap(),
            CachePolicy::Discovered {
                threshold: 256 * 1024
            }
        );
        assert_eq!(
            CachePolicy::parse("discovered=64k").unwrap(),
            CachePolicy::Discovered { threshold: 65536 }
        );
        assert!(CachePolicy::parse("discovered=0").is_err());
        assert!(CachePolicy::parse("direct=1").is_err());
        assert!(CachePolicy::parse("quick").is_err());
        for p in [
            "buffered",
            "direct",
            "dsync",
            "discovered=128k",
            "concurrent",
            "raw",
        ] {
            let parsed = CachePolicy::parse(p).unwrap();
            assert_eq!(CachePolicy::parse(&parsed.name()).unwrap(), parsed);
        }
    }

    #[test]
    fn routing() {
        let d = CachePolicy::Discovered {
            threshold: 256 * 1024,
        };
        assert_eq!(d.route(0, 64 * 1024, 512), Route::Buffered);
        assert_eq!(d.route(0, 256 * 1024, 512), Route::Buffered);
        assert_eq!(d.route(0, 256 * 1024 + 512, 512), Route::Direct);
        assert_eq!(d.route(100, 512 * 1024, 512), Route::Buffered);
        assert_eq!(CachePolicy::Direct.route(0, 2048, 512), Route::Direct);
        assert_eq!(CachePolicy::Direct.route(0, 1000, 512), Route::Fallback);
        assert_eq!(CachePolicy::Buffered.route(1, 1, 512), Route::Buffered);
    }
}
