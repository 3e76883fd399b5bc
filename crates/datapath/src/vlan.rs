//! A port's VLAN settings as Open vSwitch's Port table defines them
//! (`tag`, `trunks`, `vlan_mode`; vswitch.xml, "VLAN Configuration"),
//! and what they mean to NORMAL: which frames a port admits and in which
//! VLAN ([`PortVlan::admit`]), whether NORMAL floods a frame of a VLAN
//! out of it ([`PortVlan::carries`]), and the VLAN header a frame leaves
//! it with ([`PortVlan::header_out`]).
//!
//! Every frame NORMAL switches is in one VLAN. Inside the switch it has
//! a header (TPID, VID, PCP) whose VID is its VLAN: the one it came with
//! on a trunk, the port's own on an access port (and on a native port for
//! a frame with no VID), keeping the PCP and TPID it came with. Out of a
//! port it leaves with that header, none on an access port or on a
//! native-untagged port for its native VLAN; a header of VID 0 and PCP 0
//! is no header (Open vSwitch's `priority-tags` default, `never`).
//! The settings matter to NORMAL only: a flow's own outputs ignore them,
//! as in Open vSwitch.
//!
//! The defaults follow Open vSwitch's: no `vlan_mode` is an access port
//! with a `tag`, a trunk without one; empty `trunks` is every VLAN; a
//! native port always trunks its native VLAN and, when that is not 0,
//! never VLAN 0. [`VlanConfig`] is what a user wrote, checked
//! ([`VlanConfig::check`]: contradictions Open vSwitch would ignore with
//! a warning are refused); [`PortVlan`] is what NORMAL runs.
//! 802.1ad (0x88a8) and 802.1Q (0x8100) tags are both VLAN headers; only
//! the outer one counts (an inner tag is payload, as in Open vSwitch with
//! its default `vlan-limit` of 1).

use std::collections::BTreeMap;
use std::fmt;

use pipeline::trace::VlanHeader;

/// The largest VLAN ID.
pub const MAX_VID: u16 = 4095;

/// How a port carries VLANs (Open vSwitch's `vlan_mode`; `dot1q-tunnel`
/// is not supported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VlanMode {
    /// One VLAN (`tag`), untagged on the wire; tagged frames are dropped
    /// (but priority-tagged ones, VID 0).
    Access,
    /// The VLANs of `trunks` (all if empty), tagged as they are; untagged
    /// frames are VLAN 0.
    Trunk,
    /// A trunk whose untagged frames are in the native VLAN (`tag`),
    /// which leaves tagged.
    NativeTagged,
    /// A trunk whose untagged frames are in the native VLAN (`tag`),
    /// which leaves untagged.
    NativeUntagged,
}

/// The modes a user can name.
pub const VLAN_MODES: &str = "\"access\", \"trunk\", \"native-tagged\" or \"native-untagged\"";

impl VlanMode {
    /// A mode by its name in Open vSwitch's database.
    pub fn parse(s: &str) -> Option<VlanMode> {
        Some(match s {
            "access" => VlanMode::Access,
            "trunk" => VlanMode::Trunk,
            "native-tagged" => VlanMode::NativeTagged,
            "native-untagged" => VlanMode::NativeUntagged,
            _ => return None,
        })
    }

    /// The name [`VlanMode::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            VlanMode::Access => "access",
            VlanMode::Trunk => "trunk",
            VlanMode::NativeTagged => "native-tagged",
            VlanMode::NativeUntagged => "native-untagged",
        }
    }

    fn native(self) -> bool {
        matches!(self, VlanMode::NativeTagged | VlanMode::NativeUntagged)
    }
}

/// A port's VLAN settings as its user gave them, checked: what a reload
/// compares. The default (nothing set) is a trunk of every VLAN.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VlanConfig {
    /// An access port's VLAN, a native port's native VLAN.
    pub tag: Option<u16>,
    /// The VLANs a trunk or native port carries, in order, no repeats;
    /// empty: all.
    pub trunks: Vec<u16>,
    /// None: access with a tag, trunk without.
    pub mode: Option<VlanMode>,
}

/// A field of the VLAN settings and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanError {
    /// `tag`, `trunks` or `vlan_mode`.
    pub field: &'static str,
    pub problem: String,
}

fn vid(field: &'static str, n: i64) -> Result<u16, VlanError> {
    u16::try_from(n)
        .ok()
        .filter(|&v| v <= MAX_VID)
        .ok_or_else(|| VlanError {
            field,
            problem: format!("{n} is not a VLAN ID (0 to {MAX_VID})"),
        })
}

impl VlanConfig {
    /// Checks settings as a user wrote them. Refused: a VLAN ID out of
    /// range, a mode Open vSwitch does not have (or `dot1q-tunnel`), and
    /// what Open vSwitch would accept but ignore in part: `trunks` on an
    /// access port, a `tag` on a trunk port (a native mode gives a trunk
    /// its native VLAN), an access or native mode without a `tag`.
    pub fn check(
        tag: Option<i64>,
        trunks: &[i64],
        mode: Option<&str>,
    ) -> Result<VlanConfig, VlanError> {
        let tag = tag.map(|n| vid("tag", n)).transpose()?;
        let mut t = trunks
            .iter()
            .map(|&n| vid("trunks", n))
            .collect::<Result<Vec<u16>, _>>()?;
        t.sort_unstable();
        t.dedup();
        let mode = match mode {
            None => None,
            Some("dot1q-tunnel") => {
                return Err(VlanError {
                    field: "vlan_mode",
                    problem: "dot1q-tunnel is not supported by sluice".into(),
                })
            }
            Some(m) => Some(VlanMode::parse(m).ok_or_else(|| VlanError {
                field: "vlan_mode",
                problem: format!("{m:?} is not a VLAN mode ({VLAN_MODES})"),
            })?),
        };
        let c = VlanConfig {
            tag,
            trunks: t,
            mode,
        };
        let m = c.mode();
        if m == VlanMode::Access && !c.trunks.is_empty() {
            return Err(VlanError {
                field: "trunks",
                problem: format!(
                    "an access port carries its tag's VLAN alone; trunks go with vlan_mode {}",
                    "\"trunk\", \"native-tagged\" or \"native-untagged\""
                ),
            });
        }
        if m == VlanMode::Trunk && c.tag.is_some() {
            return Err(VlanError {
                field: "tag",
                problem: "a trunk port has no tag (vlan_mode \"native-tagged\" or \"native-untagged\" gives a trunk a native VLAN)".into(),
            });
        }
        if (m == VlanMode::Access || m.native()) && c.tag.is_none() {
            return Err(VlanError {
                field: "tag",
                problem: format!("vlan_mode {:?} needs a tag (the port's VLAN)", m.name()),
            });
        }
        Ok(c)
    }

    /// Whether nothing is set (a trunk of every VLAN).
    pub fn is_default(&self) -> bool {
        self.tag.is_none() && self.trunks.is_empty() && self.mode.is_none()
    }

    /// The mode in effect: `vlan_mode`, else access with a tag and trunk
    /// without (vswitch.xml).
    pub fn mode(&self) -> VlanMode {
        self.mode.unwrap_or(if self.tag.is_some() {
            VlanMode::Access
        } else {
            VlanMode::Trunk
        })
    }

    /// How NORMAL treats the port, by Open vSwitch's rules (an access or
    /// native port without a tag is in VLAN 0; a trunk's tag and an access
    /// port's trunks are ignored; a native port trunks its native VLAN
    /// and, unless that is 0, not VLAN 0).
    pub fn port(&self) -> PortVlan {
        let mode = self.mode();
        let vlan = match mode {
            VlanMode::Trunk => 0,
            _ => self.tag.unwrap_or(0),
        };
        let given = || {
            (!self.trunks.is_empty()).then(|| {
                let mut s = VlanSet::default();
                self.trunks.iter().for_each(|&v| s.set(v, true));
                Box::new(s)
            })
        };
        let trunks = match mode {
            VlanMode::Access => None,
            VlanMode::Trunk => given(),
            _ if vlan == 0 => given(),
            _ => {
                let mut s = given().unwrap_or_else(|| Box::new(VlanSet::all()));
                s.set(vlan, true);
                s.set(0, false);
                Some(s)
            }
        };
        PortVlan { mode, vlan, trunks }
    }
}

impl fmt::Display for VlanConfig {
    /// As `tag=10 trunks=10,20 vlan_mode=native-tagged`, the keys set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(t) = self.tag {
            parts.push(format!("tag={t}"));
        }
        if !self.trunks.is_empty() {
            let t: Vec<String> = self.trunks.iter().map(u16::to_string).collect();
            parts.push(format!("trunks={}", t.join(",")));
        }
        if let Some(m) = self.mode {
            parts.push(format!("vlan_mode={}", m.name()));
        }
        if parts.is_empty() {
            parts.push("trunk of every VLAN".into());
        }
        write!(f, "{}", parts.join(" "))
    }
}

/// A set of VLAN IDs, one bit each.
#[derive(Clone, PartialEq, Eq)]
pub struct VlanSet([u64; 64]);

impl Default for VlanSet {
    fn default() -> Self {
        VlanSet([0; 64])
    }
}

impl fmt::Debug for VlanSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl VlanSet {
    fn all() -> VlanSet {
        VlanSet([u64::MAX; 64])
    }

    fn set(&mut self, v: u16, on: bool) {
        let (w, b) = ((v as usize >> 6) & 63, v & 63);
        if on {
            self.0[w] |= 1 << b;
        } else {
            self.0[w] &= !(1 << b);
        }
    }

    #[inline]
    pub fn has(&self, v: u16) -> bool {
        self.0[(v as usize >> 6) & 63] & (1 << (v & 63)) != 0
    }

    fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        (0..=MAX_VID).filter(|&v| self.has(v))
    }
}

/// Why a port does not admit a frame (Open vSwitch's words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// A tagged frame (VID not 0) on an access port.
    TaggedOnAccess { vid: u16, vlan: u16 },
    /// A VLAN the port does not trunk (VLAN 0: untagged or
    /// priority-tagged).
    NotTrunked { vid: u16 },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::TaggedOnAccess { vid, vlan } => write!(
                f,
                "a VLAN {vid} tagged frame on an access port of VLAN {vlan}"
            ),
            Refused::NotTrunked { vid } => {
                write!(
                    f,
                    "a VLAN {vid} frame on a port that does not trunk VLAN {vid}"
                )
            }
        }
    }
}

/// A port as NORMAL treats it: its mode, VLAN and trunks in effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortVlan {
    pub mode: VlanMode,
    /// Access: the port's VLAN; native modes: the native VLAN; trunk: 0.
    pub vlan: u16,
    /// The VLANs a trunk or native port carries (None: all); None on an
    /// access port.
    trunks: Option<Box<VlanSet>>,
}

/// A port with no VLAN settings: a trunk of every VLAN.
pub static TRUNK_ALL: PortVlan = PortVlan {
    mode: VlanMode::Trunk,
    vlan: 0,
    trunks: None,
};

impl PortVlan {
    /// Whether a trunk or native port carries VLAN `v`.
    #[inline]
    fn trunks(&self, v: u16) -> bool {
        self.mode != VlanMode::Access && self.trunks.as_ref().is_none_or(|s| s.has(v))
    }

    /// Whether NORMAL floods a frame of VLAN `v` out of this port.
    #[inline]
    pub fn carries(&self, v: u16) -> bool {
        match self.mode {
            VlanMode::Access => v == self.vlan,
            _ => self.trunks(v),
        }
    }

    /// A frame that came in with outer header `came`: its header inside
    /// the switch (whose VID is its VLAN; TPID 0: the frame had none),
    /// or why the port does not admit it.
    #[inline]
    pub fn admit(&self, came: Option<VlanHeader>) -> Result<VlanHeader, Refused> {
        let c = came.unwrap_or_default();
        let own = || VlanHeader {
            tpid: if c.tpid == 0 { 0x8100 } else { c.tpid },
            vid: self.vlan,
            pcp: c.pcp,
        };
        match self.mode {
            VlanMode::Access if c.vid != 0 => Err(Refused::TaggedOnAccess {
                vid: c.vid,
                vlan: self.vlan,
            }),
            VlanMode::Access => Ok(own()),
            VlanMode::NativeTagged | VlanMode::NativeUntagged if c.vid == 0 => Ok(own()),
            _ if !self.trunks(c.vid) => Err(Refused::NotTrunked { vid: c.vid }),
            _ => Ok(c),
        }
    }

    /// The outer header a frame with header `inside` (from
    /// [`PortVlan::admit`]) leaves this port with; None: untagged.
    #[inline]
    pub fn header_out(&self, inside: VlanHeader) -> Option<VlanHeader> {
        let strip = match self.mode {
            VlanMode::Access => true,
            VlanMode::NativeUntagged => inside.vid == self.vlan,
            VlanMode::Trunk | VlanMode::NativeTagged => false,
        };
        if strip || (inside.vid == 0 && inside.pcp == 0) {
            return None;
        }
        Some(VlanHeader {
            tpid: if inside.tpid == 0 {
                0x8100
            } else {
                inside.tpid
            },
            ..inside
        })
    }
}

impl fmt::Display for PortVlan {
    /// As trace says it: `access port of VLAN 10`, `trunk of VLANs
    /// 10,20`, `native-untagged port of VLAN 20, trunk of every VLAN but 0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let trunks = || match &self.trunks {
            None => "every VLAN".to_string(),
            Some(s) => {
                let n = s.iter().count();
                if n > 2048 {
                    let but: Vec<String> = (0..=MAX_VID)
                        .filter(|&v| !s.has(v))
                        .map(|v| v.to_string())
                        .collect();
                    format!("every VLAN but {}", but.join(","))
                } else {
                    let v: Vec<String> = s.iter().map(|v| v.to_string()).collect();
                    format!("VLAN{} {}", if n == 1 { "" } else { "s" }, v.join(","))
                }
            }
        };
        match self.mode {
            VlanMode::Access => write!(f, "access port of VLAN {}", self.vlan),
            VlanMode::Trunk => write!(f, "trunk of {}", trunks()),
            m => write!(
                f,
                "{} port of VLAN {}, trunk of {}",
                m.name(),
                self.vlan,
                trunks()
            ),
        }
    }
}

/// Every port's VLAN settings as a bridge's workers and `trace` read
/// them (published whole at each change, [`crate::Bridge::set_port_vlan`]).
/// A port without settings is a trunk of every VLAN.
#[derive(Debug, Clone, Default)]
pub struct PortVlans {
    /// By number, below [`PortVlans::DENSE`].
    dense: Vec<Option<PortVlan>>,
    rest: BTreeMap<u32, PortVlan>,
}

impl PortVlans {
    /// Numbers below this are found with one load.
    const DENSE: u32 = 1024;

    /// Whether no port has settings: every port a trunk of every VLAN
    /// (NORMAL's plain path).
    #[inline]
    pub fn is_plain(&self) -> bool {
        self.dense.is_empty() && self.rest.is_empty()
    }

    /// Port `port_no`'s settings in effect.
    #[inline]
    pub fn get(&self, port_no: u32) -> &PortVlan {
        let p = if port_no < Self::DENSE {
            self.dense.get(port_no as usize).and_then(Option::as_ref)
        } else {
            self.rest.get(&port_no)
        };
        p.unwrap_or(&TRUNK_ALL)
    }

    /// These settings with port `port_no`'s replaced by `c` (default
    /// settings: the port has none).
    pub fn with(&self, port_no: u32, c: &VlanConfig) -> PortVlans {
        let mut n = self.clone();
        let v = (!c.is_default()).then(|| c.port());
        if port_no < Self::DENSE {
            let i = port_no as usize;
            if v.is_some() && n.dense.len() <= i {
                n.dense.resize(i + 1, None);
            }
            if let Some(slot) = n.dense.get_mut(i) {
                *slot = v;
            }
            while n.dense.last().is_some_and(Option::is_none) {
                n.dense.pop();
            }
        } else {
            match v {
                Some(v) => n.rest.insert(port_no, v),
                None => n.rest.remove(&port_no),
            };
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(tag: Option<i64>, trunks: &[i64], mode: Option<&str>) -> PortVlan {
        VlanConfig::check(tag, trunks, mode).unwrap().port()
    }

    fn h(tpid: u16, vid: u16, pcp: u8) -> Option<VlanHeader> {
        Some(VlanHeader { tpid, vid, pcp })
    }

    const Q: u16 = 0x8100;
    const AD: u16 = 0x88a8;

    #[test]
    fn defaults_follow_open_vswitch() {
        assert_eq!(cfg(None, &[], None), TRUNK_ALL);
        let a = cfg(Some(10), &[], None);
        assert_eq!((a.mode, a.vlan), (VlanMode::Access, 10));
        let t = cfg(None, &[20, 10, 10], None);
        assert_eq!(t.mode, VlanMode::Trunk);
        assert!(t.carries(10) && t.carries(20) && !t.carries(0) && !t.carries(30));
        // A native port trunks its native VLAN, and not VLAN 0.
        let n = cfg(Some(20), &[10], Some("native-untagged"));
        assert!(n.carries(10) && n.carries(20) && !n.carries(0) && !n.carries(30));
        let n = cfg(Some(20), &[], Some("native-tagged"));
        assert!(n.carries(20) && n.carries(4095) && !n.carries(0));
        let n = cfg(Some(20), &[0, 20], Some("native-tagged"));
        assert!(n.carries(20) && !n.carries(0) && !n.carries(1));
        // Native VLAN 0: the trunks as given.
        let n = cfg(Some(0), &[5], Some("native-tagged"));
        assert!(n.carries(5) && !n.carries(0));
        assert_eq!(
            VlanConfig::check(None, &[], Some("trunk")).unwrap().port(),
            TRUNK_ALL
        );
    }

    #[test]
    fn refusals_name_the_field() {
        for (tag, trunks, mode, field, said) in [
            (
                Some(4096),
                &[][..],
                None,
                "tag",
                "4096 is not a VLAN ID (0 to 4095)",
            ),
            (Some(-1), &[], None, "tag", "-1 is not a VLAN ID"),
            (None, &[10, 5000], None, "trunks", "5000 is not a VLAN ID"),
            (
                None,
                &[],
                Some("hybrid"),
                "vlan_mode",
                "\"hybrid\" is not a VLAN mode",
            ),
            (
                Some(5),
                &[],
                Some("dot1q-tunnel"),
                "vlan_mode",
                "dot1q-tunnel is not supported",
            ),
            (Some(10), &[20], None, "trunks", "an access port carries"),
            (
                Some(10),
                &[20],
                Some("access"),
                "trunks",
                "an access port carries",
            ),
            (
                Some(10),
                &[],
                Some("trunk"),
                "tag",
                "a trunk port has no tag",
            ),
            (
                None,
                &[],
                Some("access"),
                "tag",
                "vlan_mode \"access\" needs a tag",
            ),
            (
                None,
                &[],
                Some("native-untagged"),
                "tag",
                "vlan_mode \"native-untagged\" needs a tag",
            ),
        ] {
            let e = VlanConfig::check(tag, trunks, mode).unwrap_err();
            assert_eq!(e.field, field, "{tag:?} {trunks:?} {mode:?}");
            assert!(e.problem.starts_with(said), "{}", e.problem);
        }
    }

    /// Ingress, each mode: the VLAN a frame is in, or the refusal.
    #[test]
    fn ingress_table() {
        let access = cfg(Some(10), &[], None);
        let trunk = cfg(None, &[0, 10, 20], None);
        let trunk_no0 = cfg(None, &[10, 20], None);
        let nt = cfg(Some(20), &[10], Some("native-tagged"));
        let nu = cfg(Some(20), &[10], Some("native-untagged"));
        let vlan = |p: &PortVlan, came| p.admit(came).map(|x| (x.tpid, x.vid, x.pcp));
        // Access: untagged and priority-tagged frames join the port's
        // VLAN (keeping their PCP and TPID); tagged ones are dropped,
        // even with the port's own VID.
        assert_eq!(vlan(&access, None), Ok((Q, 10, 0)));
        assert_eq!(vlan(&access, h(Q, 0, 3)), Ok((Q, 10, 3)));
        assert_eq!(vlan(&access, h(AD, 0, 0)), Ok((AD, 10, 0)));
        assert_eq!(
            vlan(&access, h(Q, 10, 0)),
            Err(Refused::TaggedOnAccess { vid: 10, vlan: 10 })
        );
        // Trunk: the tag's VLAN (0 untagged), if trunked.
        assert_eq!(vlan(&trunk, None), Ok((0, 0, 0)));
        assert_eq!(vlan(&trunk, h(Q, 20, 5)), Ok((Q, 20, 5)));
        assert_eq!(vlan(&trunk, h(AD, 10, 0)), Ok((AD, 10, 0)));
        assert_eq!(
            vlan(&trunk, h(Q, 30, 0)),
            Err(Refused::NotTrunked { vid: 30 })
        );
        assert_eq!(vlan(&trunk_no0, None), Err(Refused::NotTrunked { vid: 0 }));
        assert_eq!(
            vlan(&trunk_no0, h(Q, 0, 2)),
            Err(Refused::NotTrunked { vid: 0 })
        );
        assert_eq!(vlan(&TRUNK_ALL, h(Q, 4095, 0)), Ok((Q, 4095, 0)));
        // Native: untagged and priority-tagged frames join the native
        // VLAN; tagged ones their own, if trunked.
        for p in [&nt, &nu] {
            assert_eq!(vlan(p, None), Ok((Q, 20, 0)));
            assert_eq!(vlan(p, h(AD, 0, 4)), Ok((AD, 20, 4)));
            assert_eq!(vlan(p, h(Q, 10, 1)), Ok((Q, 10, 1)));
            assert_eq!(vlan(p, h(Q, 20, 0)), Ok((Q, 20, 0)));
            assert_eq!(vlan(p, h(Q, 30, 0)), Err(Refused::NotTrunked { vid: 30 }));
        }
    }

    /// Egress, each mode: whether NORMAL floods a VLAN out of the port,
    /// and the header the frame leaves with.
    #[test]
    fn egress_table() {
        let access = cfg(Some(10), &[], None);
        let trunk = cfg(None, &[10, 20], None);
        let nt = cfg(Some(20), &[10], Some("native-tagged"));
        let nu = cfg(Some(20), &[10], Some("native-untagged"));
        let inside = |vid, pcp| VlanHeader { tpid: Q, vid, pcp };
        // Access: its VLAN alone, untagged.
        assert!(access.carries(10) && !access.carries(20) && !access.carries(0));
        assert_eq!(access.header_out(inside(10, 3)), None);
        // Trunk and native-tagged: tagged as inside.
        for p in [&trunk, &nt] {
            assert!(p.carries(10) && p.carries(20) && !p.carries(0) && !p.carries(30));
            assert_eq!(p.header_out(inside(10, 3)), h(Q, 10, 3));
            assert_eq!(p.header_out(inside(20, 0)), h(Q, 20, 0));
        }
        // Native-untagged: its native VLAN untagged, the others tagged.
        assert_eq!(nu.header_out(inside(20, 5)), None);
        assert_eq!(nu.header_out(inside(10, 0)), h(Q, 10, 0));
        // VLAN 0: a header only for a PCP (priority-tags "never"); a
        // header that came with none gets 802.1Q.
        assert_eq!(TRUNK_ALL.header_out(VlanHeader::default()), None);
        assert_eq!(TRUNK_ALL.header_out(inside(0, 0)), None);
        assert_eq!(TRUNK_ALL.header_out(inside(0, 2)), h(Q, 0, 2));
        let ad = VlanHeader {
            tpid: AD,
            vid: 7,
            pcp: 0,
        };
        assert_eq!(TRUNK_ALL.header_out(ad), Some(ad));
    }

    #[test]
    fn a_table_of_ports_publishes_changes() {
        let t = PortVlans::default();
        assert!(t.is_plain());
        let c = VlanConfig::check(Some(10), &[], None).unwrap();
        let t = t.with(3, &c).with(70000, &c);
        assert!(!t.is_plain());
        assert_eq!(t.get(3).vlan, 10);
        assert_eq!(t.get(70000).mode, VlanMode::Access);
        assert_eq!(t.get(2), &TRUNK_ALL);
        assert_eq!(t.get(5000), &TRUNK_ALL);
        let t = t
            .with(3, &VlanConfig::default())
            .with(70000, &VlanConfig::default());
        assert!(t.is_plain(), "{t:?}");
    }

    #[test]
    fn described_as_trace_says_it() {
        assert_eq!(
            cfg(Some(10), &[], None).to_string(),
            "access port of VLAN 10"
        );
        assert_eq!(
            cfg(None, &[20, 10], None).to_string(),
            "trunk of VLANs 10,20"
        );
        assert_eq!(TRUNK_ALL.to_string(), "trunk of every VLAN");
        assert_eq!(
            cfg(Some(20), &[], Some("native-untagged")).to_string(),
            "native-untagged port of VLAN 20, trunk of every VLAN but 0"
        );
        assert_eq!(
            VlanConfig::check(Some(20), &[10], Some("native-tagged"))
                .unwrap()
                .to_string(),
            "tag=20 trunks=10 vlan_mode=native-tagged"
        );
    }
}
