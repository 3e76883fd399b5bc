//! The connection tracker's management commands, in Open vSwitch's dpctl
//! shapes (`ovs-appctl dpctl/dump-conntrack` and the rest; the text is
//! `conntrack::text`'s):
//!
//! - `dump-conntrack [zone=N] [-s]`: a line per connection, at most what
//!   one reply carries ([`DUMP_MAX`] connections, [`DUMP_BYTES`] bytes),
//!   with a last line saying how many were left out;
//! - `flush-conntrack [zone=N] [ct-orig-tuple [ct-reply-tuple]]`;
//! - `ct-set-limits [default=N] [zone=N,limit=M]...`, `ct-get-limits
//!   [zone=N1,N2...]`, `ct-del-limits [default] [zone=N1,N2...]`;
//! - `ct-set-maxconns N`, `ct-get-maxconns`, `ct-get-nconns`;
//! - `ct-set-timeouts NAME=SECS...`, `ct-get-timeouts`.
//!
//! Contract: the tracker is the bridge's one (the pipeline's, reached
//! through the published snapshot), shared with the workers; every
//! command works on it through `&Tracker`, never stops a worker, and a
//! refused command (any argument wrong) changes nothing. `now_ms` is the
//! datapath clock in milliseconds, the workers' clock for the tracker.

use conntrack::text;
use conntrack::{Filter, Tracker};

/// Connections `dump-conntrack` shows at most.
pub const DUMP_MAX: usize = 1000;
/// Bytes of lines `dump-conntrack` shows at most: what fits one OpenFlow
/// message with the last line.
pub const DUMP_BYTES: usize = 60_000;

/// Runs conntrack command `words` (the verb first) on `t`; None if the
/// verb is not one of them.
pub fn run(t: &Tracker, words: &[String], now_ms: u64) -> Option<Result<String, String>> {
    let verb = words.first()?.as_str();
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    let r = match verb {
        "dump-conntrack" => dump(t, &args, now_ms),
        "flush-conntrack" => text::parse_flush(&args).map(|f| {
            let n = t.flush(&f);
            format!("{n} connection{} flushed\n", if n == 1 { "" } else { "s" })
        }),
        "ct-set-limits" => set_limits(t, &args),
        "ct-get-limits" => get_limits(t, &args),
        "ct-del-limits" => del_limits(t, &args),
        "ct-set-maxconns" => match args[..] {
            [n] => n
                .parse::<u64>()
                .map_err(|_| format!("ct-set-maxconns: {n:?} is not a number (0: no limit)"))
                .map(|total| {
                    t.set_limits(&conntrack::Limits {
                        total,
                        ..t.limits()
                    });
                    "setting maxconns successful\n".into()
                }),
            _ => Err("ct-set-maxconns: one number, the connections tracked at most".into()),
        },
        "ct-get-maxconns" => no_args(verb, &args).map(|()| format!("{}\n", t.limits().total)),
        "ct-get-nconns" => no_args(verb, &args).map(|()| format!("{}\n", t.len())),
        "ct-set-timeouts" => set_timeouts(t, &args),
        "ct-get-timeouts" => no_args(verb, &args).map(|()| {
            t.timeouts()
                .pairs()
                .map(|(n, s)| format!("{n}={s}\n"))
                .collect()
        }),
        _ => return None,
    };
    Some(r.map_err(|e| {
        if e.starts_with(verb) {
            e
        } else {
            format!("{verb}: {e}")
        }
    }))
}

fn no_args(verb: &str, args: &[&str]) -> Result<(), String> {
    match args.first() {
        None => Ok(()),
        Some(a) => Err(format!("{verb}: takes no argument ({a:?})")),
    }
}

/// `dump-conntrack [zone=N] [-s]`, in any order.
fn dump(t: &Tracker, args: &[&str], now_ms: u64) -> Result<String, String> {
    let (mut zone, mut stats) = (None, false);
    for a in args {
        match *a {
            "-s" | "--statistics" => stats = true,
            z if z.starts_with("zone=") => zone = Some(text::parse_zone(z)?),
            other => return Err(format!("{other:?}: expected zone=N or -s")),
        }
    }
    let filter = Filter {
        zone,
        ..Filter::default()
    };
    let entries = t.dump(&filter, DUMP_MAX, now_ms);
    let mut out = String::new();
    let mut shown = 0;
    for e in &entries {
        let line = text::format_entry(e, stats);
        if out.len() + line.len() + 1 > DUMP_BYTES {
            break;
        }
        out.push_str(&line);
        out.push('\n');
        shown += 1;
    }
    let total = match zone {
        Some(z) => t.zone_usage(z).1 as u64,
        None => t.len(),
    };
    // The count may be ahead of what the dump saw (connections come and
    // go meanwhile, expired ones are counted until swept).
    if (shown as u64) < total && (shown < entries.len() || entries.len() == DUMP_MAX) {
        out.push_str(&format!(
            "... {shown} of {total} connections shown (at most {DUMP_MAX} in one reply); narrow with zone=N\n"
        ));
    }
    Ok(out)
}

/// `ct-set-limits [default=N] [zone=N,limit=M]...`: all checked, then set.
fn set_limits(t: &Tracker, args: &[&str]) -> Result<String, String> {
    if args.is_empty() {
        return Err("give default=N and/or zone=N,limit=M (0: no limit)".into());
    }
    let mut default = None;
    let mut zones = Vec::new();
    for a in args {
        if a.starts_with("default=") {
            default = Some(text::parse_default_limit(a)?);
        } else {
            zones.push(text::parse_zone_limit(a)?);
        }
    }
    if let Some(d) = default {
        t.set_limits(&conntrack::Limits {
            zone_default: d,
            ..t.limits()
        });
    }
    for (z, l) in zones {
        t.set_zone_limit(z, Some(l));
    }
    Ok(String::new())
}

/// `ct-get-limits [zone=N1,N2...]`: the default, then the zones asked for
/// (their limit, their own or the default, and count), else every zone
/// with a limit of its own.
fn get_limits(t: &Tracker, args: &[&str]) -> Result<String, String> {
    let zones: Vec<u16> = match args {
        [] => t.zone_limits().into_iter().map(|(z, _)| z).collect(),
        [z] => text::parse_zones(z)?,
        _ => return Err("at most one zone=N1[,N2]...".into()),
    };
    let rows: Vec<(u16, u32, u32)> = zones
        .into_iter()
        .map(|z| {
            let (limit, count) = t.zone_usage(z);
            (z, limit, count)
        })
        .collect();
    Ok(text::format_zone_limits(t.limits().zone_default, &rows))
}

/// `ct-del-limits [default] [zone=N1,N2...]`: the zones back to the
/// default limit, the default back to none.
fn del_limits(t: &Tracker, args: &[&str]) -> Result<String, String> {
    let (default, rest) = match args {
        ["default", rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    let zones = match rest {
        [] if default => Vec::new(),
        [z] => text::parse_zones(z)?,
        [] => return Err("give default and/or zone=N1[,N2]...".into()),
        _ => return Err("at most [default] [zone=N1[,N2]...]".into()),
    };
    if default {
        t.set_limits(&conntrack::Limits {
            zone_default: 0,
            ..t.limits()
        });
    }
    for z in zones {
        t.set_zone_limit(z, None);
    }
    Ok(String::new())
}

/// `ct-set-timeouts NAME=SECS...`: all checked, then set together.
fn set_timeouts(t: &Tracker, args: &[&str]) -> Result<String, String> {
    if args.is_empty() {
        return Err(format!(
            "give NAME=SECONDS (NAME: {})",
            conntrack::TIMEOUT_NAMES.join(", ")
        ));
    }
    let mut now = t.timeouts();
    for a in args {
        let (name, secs) = text::parse_timeout(a)?;
        now.set(name, secs)?;
    }
    t.set_timeouts(&now);
    Ok(String::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use conntrack::build::{self, Ip};
    use conntrack::Request;

    const A: Ip = Ip::V4([10, 1, 1, 1]);
    const B: Ip = Ip::V4([10, 1, 1, 2]);

    fn cmd(t: &Tracker, line: &str) -> Result<String, String> {
        let words: Vec<String> = line.split(' ').map(String::from).collect();
        run(t, &words, 1000).expect("a conntrack command")
    }

    /// A tracker with `n` UDP connections in zone 0 and one in zone 2.
    fn filled(n: u16) -> Tracker {
        let t = Tracker::default();
        let commit = Request {
            commit: true,
            ..Request::default()
        };
        for i in 0..n {
            let mut p = build::udp(A, B, 10_000 + i, 53, 0);
            t.track(&mut p, false, &commit, 0);
        }
        let mut p = build::udp(A, B, 9, 53, 0);
        t.track(&mut p, false, &Request { zone: 2, ..commit }, 0);
        t
    }

    #[test]
    fn dump_and_flush() {
        let t = filled(2);
        assert_eq!(
            cmd(&t, "dump-conntrack zone=2 -s").unwrap(),
            "udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=9,dport=53),reply=(src=10.1.1.2,dst=10.1.1.1,sport=53,dport=9),zone=2,timeout=29\n"
        );
        assert_eq!(cmd(&t, "dump-conntrack").unwrap().lines().count(), 3);
        assert_eq!(cmd(&t, "ct-get-nconns").unwrap(), "3\n");
        assert_eq!(
            cmd(&t, "flush-conntrack ct_nw_proto=17,ct_tp_src=10001").unwrap(),
            "1 connection flushed\n"
        );
        assert_eq!(
            cmd(&t, "flush-conntrack zone=9").unwrap(),
            "0 connections flushed\n"
        );
        assert_eq!(
            cmd(&t, "flush-conntrack").unwrap(),
            "2 connections flushed\n"
        );
        assert_eq!(cmd(&t, "dump-conntrack").unwrap(), "");
        let e = cmd(&t, "flush-conntrack ct_nw_src=1.2.3").unwrap_err();
        assert_eq!(
            e,
            "flush-conntrack: ct_nw_src: \"1.2.3\" is not an IPv4 address"
        );
        assert!(cmd(&t, "dump-conntrack zone=x")
            .unwrap_err()
            .starts_with("dump-conntrack: zone: "));
    }

    #[test]
    fn a_large_dump_is_cut_and_says_so() {
        let t = filled(DUMP_MAX as u16 + 50);
        let out = cmd(&t, "dump-conntrack -s").unwrap();
        assert!(out.len() < 65_000, "{}", out.len());
        let last = out.lines().last().unwrap();
        assert!(
            last.starts_with("... ")
                && last.contains(&format!(" of {} connections shown", DUMP_MAX + 51)),
            "{last}"
        );
    }

    #[test]
    fn limits_as_dpctl_has_them() {
        let t = filled(2);
        assert_eq!(cmd(&t, "ct-get-limits").unwrap(), "default limit=0\n");
        assert_eq!(
            cmd(
                &t,
                "ct-set-limits default=10 zone=1,limit=5 zone=2,limit=3 zone=3,limit=0"
            ),
            Ok(String::new())
        );
        assert_eq!(
            cmd(&t, "ct-get-limits").unwrap(),
            "default limit=10\nzone=1,limit=5,count=0\nzone=2,limit=3,count=1\nzone=3,limit=0,count=0\n"
        );
        assert_eq!(cmd(&t, "ct-del-limits zone=2,3"), Ok(String::new()));
        assert_eq!(
            cmd(&t, "ct-get-limits zone=0,2").unwrap(),
            "default limit=10\nzone=0,limit=10,count=2\nzone=2,limit=10,count=1\n"
        );
        assert_eq!(cmd(&t, "ct-del-limits default"), Ok(String::new()));
        assert_eq!(t.limits().zone_default, 0);
        // A bad one among good ones: nothing changes.
        assert!(cmd(&t, "ct-set-limits zone=4,limit=1 zone=5")
            .unwrap_err()
            .contains("zone=5: give zone=N,limit=M"));
        assert_eq!(t.zone_limits(), vec![(1, 5)]);
        assert_eq!(
            cmd(&t, "ct-set-maxconns 7").unwrap(),
            "setting maxconns successful\n"
        );
        assert_eq!(cmd(&t, "ct-get-maxconns").unwrap(), "7\n");
        assert!(cmd(&t, "ct-set-maxconns x").is_err());
    }

    #[test]
    fn timeouts_by_name() {
        let t = Tracker::default();
        assert_eq!(cmd(&t, "ct-set-timeouts udp=40 icmp=5"), Ok(String::new()));
        let out = cmd(&t, "ct-get-timeouts").unwrap();
        assert!(
            out.contains("\nudp=40\n") && out.contains("\nicmp=5\n"),
            "{out}"
        );
        assert_eq!(out.lines().count(), conntrack::TIMEOUT_NAMES.len());
        let e = cmd(&t, "ct-set-timeouts udp=50 tcp=3").unwrap_err();
        assert!(
            e.starts_with("ct-set-timeouts: unknown conntrack timeout `tcp`"),
            "{e}"
        );
        assert_eq!(t.timeouts().udp, 40, "a refused command changes nothing");
        assert!(run(&t, &["fdb-show".to_string()], 0).is_none());
    }
}
