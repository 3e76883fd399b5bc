//! The Prometheus text exposition format (version 0.0.4), the part of it
//! the endpoint writes: one `# HELP` and `# TYPE` line per family, then its
//! samples, `name{label="value",...} number`. Label values are escaped
//! (backslash, double quote, newline), help texts too (backslash,
//! newline); names are the program's own and must be valid (checked in
//! debug builds).

use std::fmt::{Display, Write as _};

/// A family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// A sample's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(u64),
    Float(f64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Int(v)
    }
}

impl From<usize> for Value {
    fn from(v: usize) -> Value {
        Value::Int(v as u64)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Int(u64::from(v))
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}

impl Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) if v.is_nan() => f.write_str("NaN"),
            Value::Float(v) if v == f64::INFINITY => f.write_str("+Inf"),
            Value::Float(v) if v == f64::NEG_INFINITY => f.write_str("-Inf"),
            Value::Float(v) => write!(f, "{v:e}"),
        }
    }
}

/// A label: name and value (any `Display`, escaped when written).
pub type Label<'a> = (&'a str, &'a dyn Display);

/// The text of one scrape, built a family at a time.
#[derive(Default)]
pub struct Expo {
    out: String,
    /// Scratch space for formatting a label value before escaping it.
    scratch: String,
}

impl Expo {
    /// Starts family `name`: its HELP and TYPE lines. Its samples follow
    /// (for a histogram: `name_bucket`, `name_sum`, `name_count`).
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        debug_assert!(valid_name(name), "{name}");
        let _ = write!(self.out, "# HELP {name} ");
        for c in help.chars() {
            match c {
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                c => self.out.push(c),
            }
        }
        let _ = writeln!(self.out, "\n# TYPE {name} {}", kind.as_str());
    }

    /// One sample.
    pub fn sample(&mut self, name: &str, labels: &[Label], value: impl Into<Value>) {
        debug_assert!(valid_name(name), "{name}");
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                debug_assert!(valid_name(k) && !k.contains(':'), "{k}");
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(k);
                self.out.push_str("=\"");
                self.scratch.clear();
                let _ = write!(self.scratch, "{v}");
                escape_label(&self.scratch, &mut self.out);
                self.out.push('"');
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", value.into());
    }

    /// The text.
    pub fn finish(self) -> String {
        self.out
    }
}

/// Appends label value `v` to `out`, escaped.
pub fn escape_label(v: &str, out: &mut String) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A metric or label name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
fn valid_name(n: &str) -> bool {
    let mut cs = n.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_and_help_are_escaped() {
        let mut e = Expo::default();
        e.family("x_total", Kind::Counter, "a \\ b\nc \"q\"");
        e.sample("x_total", &[("a", &"p\\1\"2\"\n3"), ("b", &7u32)], 5u64);
        e.sample("x_total", &[], 0u64);
        assert_eq!(
            e.finish(),
            "# HELP x_total a \\\\ b\\nc \"q\"\n# TYPE x_total counter\n\
             x_total{a=\"p\\\\1\\\"2\\\"\\n3\",b=\"7\"} 5\nx_total 0\n"
        );
    }

    #[test]
    fn values() {
        let s = |v: Value| v.to_string();
        assert_eq!(s(Value::Int(u64::MAX)), "18446744073709551615");
        assert_eq!(s(true.into()), "1");
        assert_eq!(s(0.25.into()), "2.5e-1");
        assert_eq!(s(0.0.into()), "0e0");
        assert_eq!(s(f64::INFINITY.into()), "+Inf");
        assert_eq!(s(f64::NEG_INFINITY.into()), "-Inf");
        assert_eq!(s(f64::NAN.into()), "NaN");
        for v in [0.25, 1e-7, 123456.789, 0.0] {
            assert_eq!(s(v.into()).parse::<f64>().unwrap(), v);
        }
    }

    #[test]
    fn names() {
        assert!(valid_name("sluice_port_up"));
        assert!(valid_name("a:b_1"));
        assert!(!valid_name("1a"));
        assert!(!valid_name(""));
        assert!(!valid_name("a-b"));
    }
}
