//! `vlog/set` and `vlog/list`: Open vSwitch's log settings mapped onto
//! sluice's one log filter (a `tracing` filter, the `RUST_LOG` syntax,
//! which `sluice-ctl vlog` sets too).
//!
//! The mapping:
//! * Modules are sluice's crates (`agent`, `datapath`, ...: the targets
//!   its log lines carry); a few Open vSwitch module names stand for the
//!   crate doing that job ([`ALIASES`]: `vswitchd` and `bridge` are
//!   `sluice`, `ofproto` is `agent`, `dpif_netdev` is `datapath`...).
//!   `ANY`, or no module, means every module (and every library's logs).
//! * Levels: `emer` and `err` are `error`, `warn`, `info`, `dbg` is
//!   `debug`, `off`; no level means `dbg`, as in Open vSwitch. `tracing`'s
//!   `trace` level has no Open vSwitch name and lists as `DBG`.
//! * Destinations (`console`, `syslog`, `file`, `ANY`) are checked and then
//!   all mean the one stream sluice logs to (stderr, the journal under
//!   systemd): setting any of them sets it, and `vlog/list` shows the same
//!   level in all three columns. Patterns (`PATTERN:...`) and facilities
//!   are not supported and say so.
//!
//! Setting one module keeps every other directive of the running filter
//! (also ones `sluice-ctl vlog` or `RUST_LOG` set); setting every module
//! replaces the whole filter with the level, as `vlog/set dbg` sets every
//! module in Open vSwitch.

/// sluice's log modules: the targets of its crates' log lines.
pub const MODULES: &[&str] = &[
    "agent",
    "conntrack",
    "datapath",
    "fastpath",
    "jsonrpc",
    "netdev",
    "ofp",
    "ovsdb",
    "pipeline",
    "sluice",
    "tls",
];

/// Open vSwitch module names taken for the sluice module doing that job.
pub const ALIASES: &[(&str, &str)] = &[
    ("bridge", "sluice"),
    ("vswitchd", "sluice"),
    ("unixctl", "sluice"),
    ("ofproto", "agent"),
    ("ofproto_dpif", "agent"),
    ("connmgr", "agent"),
    ("rconn", "agent"),
    ("vconn", "agent"),
    ("dpif", "datapath"),
    ("dpif_netdev", "datapath"),
    ("netdev_linux", "netdev"),
    ("netdev_afxdp", "netdev"),
    ("ofp_actions", "ofp"),
    ("ofp_msgs", "ofp"),
    ("stream_ssl", "tls"),
];

/// A level as `tracing` filters spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Off,
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl Level {
    fn directive(self) -> &'static str {
        match self {
            Level::Off => "off",
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        }
    }

    /// As `vlog/list` shows it.
    pub fn ovs_name(self) -> &'static str {
        match self {
            Level::Off => "OFF",
            Level::Error => "ERR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug | Level::Trace => "DBG",
        }
    }
}

/// One `vlog/set` word list, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// None: every module.
    pub module: Option<&'static str>,
    pub level: Level,
}

fn ovs_level(w: &str) -> Option<Level> {
    Some(match w {
        "off" => Level::Off,
        "emer" | "err" => Level::Error,
        "warn" => Level::Warn,
        "info" => Level::Info,
        "dbg" => Level::Debug,
        _ => return None,
    })
}

fn module(w: &str) -> Option<&'static str> {
    MODULES
        .iter()
        .copied()
        .find(|m| *m == w)
        .or_else(|| ALIASES.iter().find(|(a, _)| *a == w).map(|(_, m)| *m))
}

/// Reads one spec: words separated by `:`, `,` or spaces, at most one
/// module, destination and level each (case does not matter).
pub fn parse(spec: &str) -> Result<Setting, String> {
    let lower = spec.to_ascii_lowercase();
    if lower.starts_with("pattern") || lower.starts_with("facility") {
        return Err(format!(
            "{spec:?}: sluice does not support log patterns or syslog facilities"
        ));
    }
    let (mut m, mut dest, mut level) = (None, None, None);
    for w in lower.split([':', ',', ' ']).filter(|w| !w.is_empty()) {
        let slot = if matches!(w, "console" | "syslog" | "file") {
            dest.replace(w).map(|_| "destination")
        } else if let Some(l) = ovs_level(w) {
            level.replace(l).map(|_| "level")
        } else if w == "any" {
            // ANY fills the module, then the destination.
            if m.is_none() {
                m.replace(None).map(|_| "module")
            } else {
                dest.replace(w).map(|_| "destination")
            }
        } else if let Some(md) = module(w) {
            m.replace(Some(md)).map(|_| "module")
        } else {
            return Err(format!("no destination, level, or module \"{w}\""));
        };
        if let Some(what) = slot {
            return Err(format!("{spec:?}: more than one {what}"));
        }
    }
    Ok(Setting {
        module: m.flatten(),
        level: level.unwrap_or(Level::Debug),
    })
}

/// The filter after `s`, from the running one (`current`, as `tracing`
/// prints it: directives separated by commas).
pub fn apply(current: &str, s: &Setting) -> String {
    let Some(m) = s.module else {
        return s.level.directive().to_string();
    };
    // Directives of other targets stay (a span directive, with its
    // brackets, is kept whole).
    let mut kept: Vec<String> = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in current.chars() {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                kept.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    kept.push(cur);
    let target_of = |d: &str| d.split(['=', '[']).next().unwrap_or("").trim().to_string();
    kept.retain(|d| {
        let d = d.trim();
        let t = target_of(d);
        !d.is_empty() && t != m && !t.starts_with(&format!("{m}::"))
    });
    kept.push(format!("{m}={}", s.level.directive()));
    kept.join(",")
}

/// `vlog/list`: every module's level (as `level_of` says) in Open
/// vSwitch's table, the same in each destination column.
pub fn list(level_of: &dyn Fn(&str) -> Level) -> String {
    let mut s = String::from(
        "                 console    syslog    file\n                 -------    ------    ------\n",
    );
    for m in MODULES {
        let l = level_of(m).ovs_name();
        s.push_str(&format!("{m:<16}  {l:>4}       {l:>4}       {l:>4}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_as_open_vswitch_takes_them() {
        let p = |s: &str| parse(s).unwrap();
        assert_eq!(
            p("dbg"),
            Setting {
                module: None,
                level: Level::Debug
            }
        );
        assert_eq!(p("ANY:any:info").level, Level::Info);
        assert_eq!(p("ANY:any:info").module, None);
        assert_eq!(
            p("datapath:file:warn"),
            Setting {
                module: Some("datapath"),
                level: Level::Warn
            }
        );
        assert_eq!(p("console:off").level, Level::Off);
        assert_eq!(p("vswitchd").module, Some("sluice"));
        assert_eq!(p("vswitchd").level, Level::Debug, "no level is dbg");
        assert_eq!(p("EMER").level, Level::Error);
        assert_eq!(
            parse("bogus").unwrap_err(),
            "no destination, level, or module \"bogus\""
        );
        assert!(parse("dbg:info")
            .unwrap_err()
            .contains("more than one level"));
        assert!(parse("PATTERN:console:%m")
            .unwrap_err()
            .contains("patterns"));
    }

    #[test]
    fn a_module_setting_keeps_the_other_directives() {
        let s = |m, level| Setting { module: m, level };
        assert_eq!(apply("info", &s(None, Level::Debug)), "debug");
        assert_eq!(
            apply("sluice=debug,info", &s(None, Level::Warn)),
            "warn",
            "every module: the whole filter"
        );
        assert_eq!(
            apply(
                "info,datapath=trace,datapath::rx=debug",
                &s(Some("datapath"), Level::Warn)
            ),
            "info,datapath=warn"
        );
        assert_eq!(
            apply(
                "info,sluice[conn{id=1}]=debug",
                &s(Some("agent"), Level::Off)
            ),
            "info,sluice[conn{id=1}]=debug,agent=off"
        );
        assert_eq!(apply("", &s(Some("ofp"), Level::Info)), "ofp=info");
    }

    #[test]
    fn the_list_has_open_vswitchs_columns() {
        let text = list(&|m| {
            if m == "datapath" {
                Level::Debug
            } else {
                Level::Info
            }
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "                 console    syslog    file");
        assert_eq!(lines[1], "                 -------    ------    ------");
        assert!(lines.contains(&"datapath           DBG        DBG        DBG"));
        assert!(lines.contains(&"agent             INFO       INFO       INFO"));
        assert_eq!(lines.len(), 2 + MODULES.len());
    }
}
