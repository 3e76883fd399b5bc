//! The errors of RFC 7047 section 4.1.3: a tag ("constraint violation",
//! "referential integrity violation", ...) and details, sent to a client as
//! `{"error": TAG, "details": DETAILS}` in a transaction's results.

use serde_json::{json, Value};

/// An OVSDB error.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub tag: &'static str,
    pub details: String,
}

impl Error {
    pub fn new(tag: &'static str, details: impl Into<String>) -> Error {
        Error {
            tag,
            details: details.into(),
        }
    }

    /// A malformed request ("syntax error").
    pub fn syntax(details: impl Into<String>) -> Error {
        Error::new("syntax error", details)
    }

    pub fn constraint(details: impl Into<String>) -> Error {
        Error::new("constraint violation", details)
    }

    pub fn to_json(&self) -> Value {
        json!({"error": self.tag, "details": self.details})
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.tag, self.details)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
