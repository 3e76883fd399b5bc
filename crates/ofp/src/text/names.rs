//! Ports and tables by name, as ovs-ofctl reads and prints them: reserved
//! port names, `--names`' map of port and table names ([`Names`]), and
//! the quoting of a name that is not a plain word.

use super::value::parse_num;
use super::TextError;
use crate::port::port_no;

/// Parses a port: a number or a reserved name (`in_port`, `controller`, ...).
pub fn parse_port(s: &str) -> Result<u32, TextError> {
    port_no::from_name(s).map_or_else(|| parse_num(s, "a port number or reserved port name"), Ok)
}

/// Port and table names to print instead of numbers (ovs-ofctl's
/// `--names`); the empty map prints numbers. Reserved ports always print
/// by their name. As in ovs-ofctl, a name two ports (or two tables) share
/// is not used, and a name that is not a letter followed by letters and
/// digits is printed quoted (`"vm-1"`, as a JSON string).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    ports: std::collections::BTreeMap<u32, String>,
    tables: std::collections::BTreeMap<u8, String>,
}

/// `name` as ovs-ofctl prints a port or table name: as it is when it is
/// a letter followed by letters and digits, else quoted as a JSON string.
pub fn quote_name(name: &str) -> String {
    let mut chars = name.chars();
    let plain = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric());
    if plain {
        return name.to_string();
    }
    let mut s = String::with_capacity(name.len() + 2);
    s.push('"');
    for c in name.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\u{8}' => s.push_str("\\b"),
            '\u{c}' => s.push_str("\\f"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => s.push_str(&format!("\\u{:04x}", c as u32)),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

impl Names {
    /// No names: every port and table prints as its number.
    pub fn new() -> Names {
        Names::default()
    }

    /// Prints port `no` as `name`.
    pub fn insert_port(&mut self, no: u32, name: impl Into<String>) {
        self.ports.insert(no, name.into());
    }

    /// Prints table `id` as `name`.
    pub fn insert_table(&mut self, id: u8, name: impl Into<String>) {
        self.tables.insert(id, name.into());
    }

    /// Port `p` by name when it has one (quoted where ovs-ofctl quotes
    /// it), else as [`format_port`] writes it.
    pub fn port(&self, p: u32) -> String {
        match self.ports.get(&p) {
            Some(n)
                if port_no::name(p).is_none()
                    && self.ports.iter().filter(|(_, m)| *m == n).count() == 1 =>
            {
                quote_name(n)
            }
            _ => format_port(p),
        }
    }

    /// Table `t`'s name as printed (quoted where ovs-ofctl quotes it), if
    /// it has one that no other table has.
    pub fn table_name(&self, t: u8) -> Option<String> {
        let n = self.tables.get(&t)?;
        (self.tables.values().filter(|m| *m == n).count() == 1).then(|| quote_name(n))
    }

    /// Table `t` by name when it has one, else its number.
    pub fn table(&self, t: u8) -> String {
        self.table_name(t).unwrap_or_else(|| t.to_string())
    }
}

/// Writes a port: reserved ports by name in upper case (`LOCAL`,
/// `CONTROLLER`, `IN_PORT`, ...), as ovs-ofctl prints them; others as
/// numbers. [`parse_port`] reads either case.
pub fn format_port(p: u32) -> String {
    port_no::name(p).map_or_else(|| p.to_string(), str::to_ascii_uppercase)
}
