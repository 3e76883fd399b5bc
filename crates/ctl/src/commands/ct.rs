//! The connection tracker's commands (sluice's management commands, in
//! Open vSwitch's `ovs-appctl dpctl/*` shapes): their arguments checked
//! here with the same parsers the switch uses (`conntrack::text`), so a
//! typo is reported before any connection opens, then sent as words.

use conntrack::text;

use super::{CmdError, Result};
use crate::Cmd;

/// The switch and the words to send for a conntrack command, once its
/// arguments are good; None for any other command.
pub(super) fn words(cmd: &Cmd) -> Option<Result<(String, Vec<String>)>> {
    let (switch, verb, args): (&String, &str, Vec<String>) = match cmd {
        Cmd::DumpConntrack {
            switch,
            zone,
            statistics,
        } => {
            let mut a: Vec<String> = zone.iter().cloned().collect();
            if *statistics {
                a.push("-s".into());
            }
            (switch, "dump-conntrack", a)
        }
        Cmd::FlushConntrack { switch, args } => (switch, "flush-conntrack", args.clone()),
        Cmd::CtSetLimits { switch, limits } => (switch, "ct-set-limits", limits.clone()),
        Cmd::CtGetLimits { switch, zones } => {
            (switch, "ct-get-limits", zones.iter().cloned().collect())
        }
        Cmd::CtDelLimits { switch, args } => (switch, "ct-del-limits", args.clone()),
        Cmd::CtSetMaxconns { switch, maxconns } => {
            (switch, "ct-set-maxconns", vec![maxconns.clone()])
        }
        Cmd::CtGetMaxconns { switch } => (switch, "ct-get-maxconns", vec![]),
        Cmd::CtGetNconns { switch } => (switch, "ct-get-nconns", vec![]),
        Cmd::CtSetTimeouts { switch, timeouts } => (switch, "ct-set-timeouts", timeouts.clone()),
        Cmd::CtGetTimeouts { switch } => (switch, "ct-get-timeouts", vec![]),
        _ => return None,
    };
    Some(
        check(verb, &args)
            .map_err(|e| CmdError::Usage(format!("{verb}: {e}")))
            .map(|()| {
                let words = std::iter::once(verb.to_string()).chain(args).collect();
                (switch.clone(), words)
            }),
    )
}

/// Checks what the switch would check without asking it.
fn check(verb: &str, args: &[String]) -> std::result::Result<(), String> {
    match verb {
        "dump-conntrack" => args
            .iter()
            .filter(|a| *a != "-s")
            .try_for_each(|a| text::parse_zone(a).map(drop)),
        "flush-conntrack" => text::parse_flush(args).map(drop),
        "ct-set-limits" => args.iter().try_for_each(|a| {
            if a.starts_with("default=") {
                text::parse_default_limit(a).map(drop)
            } else {
                text::parse_zone_limit(a).map(drop)
            }
        }),
        "ct-get-limits" => args.iter().try_for_each(|a| text::parse_zones(a).map(drop)),
        "ct-del-limits" => args
            .iter()
            .filter(|a| *a != "default")
            .try_for_each(|a| text::parse_zones(a).map(drop)),
        "ct-set-maxconns" => args[0]
            .parse::<u64>()
            .map(drop)
            .map_err(|_| format!("{:?} is not a number (0: no limit)", args[0])),
        "ct-set-timeouts" => args
            .iter()
            .try_for_each(|a| text::parse_timeout(a).map(drop)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn checked(line: &str) -> Result<(String, Vec<String>)> {
        let argv = std::iter::once("sluice-ctl").chain(line.split(' '));
        let cli = crate::Cli::try_parse_from(argv).expect("parses");
        words(&cli.cmd).expect("a conntrack command")
    }

    #[test]
    fn words_as_the_switch_takes_them() {
        let (sw, w) = checked("dump-conntrack br0 zone=3 -s").unwrap();
        assert_eq!(
            (sw.as_str(), w),
            (
                "br0",
                vec!["dump-conntrack".into(), "zone=3".into(), "-s".into()]
            )
        );
        let (_, w) =
            checked("flush-conntrack br0 zone=1 ct_nw_src=10.0.0.1,ct_nw_proto=6,ct_tp_dst=80")
                .unwrap();
        assert_eq!(w.len(), 3);
        let (_, w) = checked("ct-set-limits br0 default=10 zone=1,limit=5").unwrap();
        assert_eq!(w[0], "ct-set-limits");
        assert!(checked("ct-get-nconns br0").is_ok());
    }

    #[test]
    fn mistakes_are_named_before_connecting() {
        for (line, want) in [
            (
                "dump-conntrack br0 zone=x",
                "dump-conntrack: zone: \"x\" is not a zone",
            ),
            (
                "flush-conntrack br0 ct_nw_dst=300.1.1.1",
                "flush-conntrack: ct_nw_dst: \"300.1.1.1\" is not an IPv4 address",
            ),
            (
                "ct-set-limits br0 zone=1",
                "ct-set-limits: zone=1: give zone=N,limit=M",
            ),
            (
                "ct-del-limits br0 zone=a",
                "ct-del-limits: zone: \"a\" is not a zone",
            ),
            (
                "ct-set-timeouts br0 udp=0",
                "ct-set-timeouts: conntrack timeout `udp` must be at least 1 second",
            ),
            (
                "ct-set-maxconns br0 many",
                "ct-set-maxconns: \"many\" is not a number",
            ),
        ] {
            match checked(line) {
                Err(CmdError::Usage(e)) => assert!(e.starts_with(want), "{line}: {e}"),
                other => panic!("{line}: {other:?}"),
            }
        }
    }
}
