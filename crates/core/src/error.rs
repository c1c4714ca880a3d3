//! Error kinds that decide the exit status: bad usage (2) versus a run that failed (1).

use std::fmt;

/// A mistake in what the user typed or wrote in a file. Printed as one line, exit status 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Build a usage error from a format string: `usage!("bad size '{s}': use 512, 4k, 1m, 2g")`.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => { $crate::error::UsageError(format!($($arg)*)) };
}

/// Shorthand: return early with a usage error.
#[macro_export]
macro_rules! bail_usage {
    ($($arg:tt)*) => { return Err($crate::error::UsageError(format!($($arg)*)).into()) };
}

/// Deserialize a TOML document; a mistake becomes one usage line `ORIGIN:LINE: message`.
pub fn parse_toml<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
) -> Result<T, UsageError> {
    toml::from_str::<T>(text).map_err(|e| {
        let msg = e.message().replace('\n', " ");
        match e.span() {
            Some(span) => {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                UsageError(format!("{origin}:{line}: {msg}"))
            }
            None => UsageError(format!("{origin}: {msg}")),
        }
    })
}

/// True when an error chain holds a [`UsageError`].
pub fn is_usage(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|e| e.downcast_ref::<UsageError>().is_some())
}
