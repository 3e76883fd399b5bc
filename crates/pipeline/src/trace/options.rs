//! How a trace is asked for: Open vSwitch's `ofproto/trace` options that
//! change what the trace does (`-generate`, `--ct-next`), and the
//! connection state syntax `--ct-next` takes.

/// How to trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `-generate`: the trace's side effects are wanted. The pipeline has
    /// none of its own (it never changes its tables): the caller adds
    /// [`super::Trace::learned`].
    pub generate: bool,
    /// `--ct-next STATE`, in order: the `ct_state` each recirculation
    /// after a `ct(table=N)` resumes with, in Open vSwitch's order (the
    /// first pass's recirculations, then those each of them queued), in
    /// place of the tracker's answer. When none is left, `trk|new`, as
    /// Open vSwitch's trace assumes.
    pub ct_next: Vec<u32>,
    /// The packet's TCI where its frame cannot say it: Open vSwitch's
    /// `vlan_tci=20` (VID, no CFI) is neither tagged nor untagged
    /// ([`crate::flow_packet::tci_without_cfi`]). The key's `vlan_vid`
    /// (present bit clear) and `vlan_pcp` start so, and stay so until an
    /// action changes the packet's headers.
    pub tci: Option<(u16, u8)>,
}

/// Reads a `--ct-next` state as Open vSwitch does: flag names
/// (`new est rel rpl inv trk snat dnat`) separated by commas or spaces,
/// checked against the rules of ovs-fields(7) (`trk` with any other,
/// `inv` with `trk` only, `new` with neither `est` nor `rpl`). The error
/// is Open vSwitch's text.
pub fn parse_ct_state(s: &str) -> Result<u32, String> {
    use ofp::ct::state::NAMES;
    let mut st = 0u32;
    for w in s.split([',', ' ']).filter(|w| !w.is_empty()) {
        let Some(bit) = NAMES.iter().position(|n| *n == w) else {
            return Err(format!("{w}: unknown connection tracking state flag"));
        };
        st |= 1 << bit;
    }
    let bit = |n: &str| 1u32 << NAMES.iter().position(|x| *x == n).unwrap_or(0);
    let (new, est, rpl, inv, trk) = (bit("new"), bit("est"), bit("rpl"), bit("inv"), bit("trk"));
    let text = names(st);
    let bad = |why: &str| Err(format!("{text}: invalid connection state: {why}"));
    if st != 0 && st & trk == 0 {
        return bad("If \"trk\" is unset, no other flags are set");
    }
    if st & inv != 0 && st & !(trk | inv) != 0 {
        return bad("when \"inv\" is set, only \"trk\" may also be set");
    }
    if st & new != 0 && st & est != 0 {
        return bad("\"new\" and \"est\" are mutually exclusive");
    }
    if st & new != 0 && st & rpl != 0 {
        return bad("\"new\" and \"rpl\" are mutually exclusive");
    }
    Ok(st)
}

/// A `ct_state` as Open vSwitch's trace writes it: `new|trk`, bit 0 first.
pub fn names(st: u32) -> String {
    let names: Vec<&str> = ofp::ct::state::NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| st & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect();
    names.join("|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ct_states_as_open_vswitch_reads_them() {
        assert_eq!(parse_ct_state("trk,est"), Ok(0x22));
        assert_eq!(parse_ct_state("trk new"), Ok(0x21));
        assert_eq!(names(0x21), "new|trk");
        assert_eq!(
            parse_ct_state("trk,bogus").unwrap_err(),
            "bogus: unknown connection tracking state flag"
        );
        assert_eq!(
            parse_ct_state("est").unwrap_err(),
            "est: invalid connection state: If \"trk\" is unset, no other flags are set"
        );
        assert!(parse_ct_state("trk,new,est").is_err());
        assert!(parse_ct_state("trk,inv,est").is_err());
    }
}
