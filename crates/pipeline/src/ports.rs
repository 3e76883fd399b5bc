//! The bridge's ports as one published version sees them: one dense
//! table, in port-number order, with the sets FLOOD and ALL send to
//! worked out once when the ports change (not per packet; a publication
//! copies the table, a cost that grows with the ports, not the flows).
//!
//! Every reader of port state goes through it: the interpreter
//! (`output:FLOOD`, `output:ALL`, a port down or `no_fwd`), the worker's
//! receive side (`no_recv`) and NORMAL's flood, the XDP compiler and
//! `trace`, so they cannot disagree on which port floods where.
//!
//! Contract: a port appears once; FLOOD from a port is every usable port
//! (link up, not `no_fwd`) without `no_flood` but the ingress port, ALL
//! the same with `no_flood` ones included. A lookup by number is one load
//! for the small numbers ports usually have (below [`PortTable::DENSE`]:
//! a byte of flags per number), a binary search for the rest (LOCAL).

/// A port as the pipeline sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortState {
    pub port_no: u32,
    /// Link up and not administratively down.
    pub live: bool,
    /// OFPPC_NO_FLOOD: left out of FLOOD.
    pub no_flood: bool,
    /// OFPPC_NO_FWD: nothing is sent out of it.
    pub no_fwd: bool,
    /// OFPPC_NO_RECV: whatever it receives is dropped (the datapath checks
    /// this once per received batch).
    pub no_recv: bool,
}

impl PortState {
    /// A live port with no OFPPC_* bit set.
    pub fn up(port_no: u32) -> PortState {
        PortState {
            port_no,
            live: true,
            no_flood: false,
            no_fwd: false,
            no_recv: false,
        }
    }
}

/// The published port table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortTable {
    /// By port number.
    ports: Vec<PortState>,
    /// Usable ports without `no_flood`, by number.
    flood: Vec<u32>,
    /// Usable ports, by number.
    all: Vec<u32>,
    /// Flags ([`PRESENT`], [`USABLE`], [`NO_RECV`]) by port number, for
    /// numbers below [`PortTable::DENSE`] (as long as the largest one).
    dense: Vec<u8>,
}

const PRESENT: u8 = 1;
const USABLE: u8 = 2;
const NO_RECV: u8 = 4;

/// Whether frames may be sent out of `p`.
fn usable(p: &PortState) -> bool {
    p.live && !p.no_fwd
}

impl PortTable {
    /// The table of `ports` (one entry per number: the last wins).
    pub fn new(mut ports: Vec<PortState>) -> PortTable {
        ports.reverse();
        ports.sort_by_key(|p| p.port_no);
        ports.dedup_by_key(|p| p.port_no);
        let all: Vec<u32> = ports
            .iter()
            .filter(|p| usable(p))
            .map(|p| p.port_no)
            .collect();
        let flood = ports
            .iter()
            .filter(|p| usable(p) && !p.no_flood)
            .map(|p| p.port_no)
            .collect();
        let mut dense = Vec::new();
        for p in ports.iter().filter(|p| p.port_no < Self::DENSE) {
            let i = p.port_no as usize;
            if dense.len() <= i {
                dense.resize(i + 1, 0);
            }
            dense[i] =
                PRESENT | if usable(p) { USABLE } else { 0 } | if p.no_recv { NO_RECV } else { 0 };
        }
        PortTable {
            ports,
            flood,
            all,
            dense,
        }
    }

    /// Port numbers below this are found with one load.
    pub const DENSE: u32 = 1024;

    /// The flags of `port_no`, if it is a port.
    #[inline]
    fn flags(&self, port_no: u32) -> Option<u8> {
        if port_no < Self::DENSE {
            return self
                .dense
                .get(port_no as usize)
                .copied()
                .filter(|f| f & PRESENT != 0);
        }
        self.get(port_no).map(|p| {
            PRESENT | if usable(p) { USABLE } else { 0 } | if p.no_recv { NO_RECV } else { 0 }
        })
    }

    /// Every port, by number.
    pub fn as_slice(&self) -> &[PortState] {
        &self.ports
    }

    /// Every port, by number.
    pub fn iter(&self) -> std::slice::Iter<'_, PortState> {
        self.ports.iter()
    }

    pub fn len(&self) -> usize {
        self.ports.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }

    /// Port `port_no`'s state.
    pub fn get(&self, port_no: u32) -> Option<&PortState> {
        self.ports
            .binary_search_by_key(&port_no, |p| p.port_no)
            .ok()
            .map(|i| &self.ports[i])
    }

    /// Whether frames may be sent out of `port_no` (None: no such port).
    #[inline]
    pub fn usable(&self, port_no: u32) -> Option<bool> {
        self.flags(port_no).map(|f| f & USABLE != 0)
    }

    /// Whether `port_no` drops what it receives (OFPPC_NO_RECV).
    #[inline]
    pub fn no_recv(&self, port_no: u32) -> bool {
        self.flags(port_no).is_some_and(|f| f & NO_RECV != 0)
    }

    /// Where FLOOD sends a packet that came in on `in_port`.
    pub fn flood_from(&self, in_port: u32) -> impl Iterator<Item = u32> + '_ {
        self.flood.iter().copied().filter(move |&p| p != in_port)
    }

    /// Where ALL sends a packet that came in on `in_port`.
    pub fn all_from(&self, in_port: u32) -> impl Iterator<Item = u32> + '_ {
        self.all.iter().copied().filter(move |&p| p != in_port)
    }

    /// Every usable port (what ALL sends to, the ingress port included).
    pub fn usable_ports(&self) -> &[u32] {
        &self.all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flood_and_all_leave_out_what_they_must() {
        let mut down = PortState::up(2);
        down.live = false;
        let mut nf = PortState::up(3);
        nf.no_flood = true;
        let mut nfwd = PortState::up(4);
        nfwd.no_fwd = true;
        let mut nr = PortState::up(5);
        nr.no_recv = true;
        let t = PortTable::new(vec![nr, nfwd, nf, down, PortState::up(1)]);
        assert_eq!(
            t.iter().map(|p| p.port_no).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
        assert_eq!(t.flood_from(1).collect::<Vec<_>>(), [5]);
        assert_eq!(t.flood_from(9).collect::<Vec<_>>(), [1, 5]);
        assert_eq!(t.all_from(1).collect::<Vec<_>>(), [3, 5]);
        assert_eq!(t.usable(2), Some(false));
        assert_eq!(t.usable(4), Some(false));
        assert_eq!(t.usable(3), Some(true));
        assert_eq!(t.usable(6), None);
        assert!(t.no_recv(5) && !t.no_recv(1) && !t.no_recv(6));
        // Past the dense numbers: the same answers.
        let mut local = PortState::up(ofp::port::port_no::LOCAL);
        local.no_recv = true;
        let t = PortTable::new(vec![local, PortState::up(2000), PortState::up(3)]);
        assert_eq!(t.usable(ofp::port::port_no::LOCAL), Some(true));
        assert!(t.no_recv(ofp::port::port_no::LOCAL));
        assert_eq!(t.usable(2000), Some(true));
        assert_eq!(t.usable(2001), None);
        assert_eq!(t.usable(1023), None);
        assert_eq!(
            t.flood_from(3).collect::<Vec<_>>(),
            [2000, ofp::port::port_no::LOCAL]
        );
    }

    #[test]
    fn one_entry_per_number_the_last_given() {
        let mut again = PortState::up(1);
        again.live = false;
        let t = PortTable::new(vec![PortState::up(1), again]);
        assert_eq!(t.len(), 1);
        assert_eq!(t.usable(1), Some(false));
    }
}
