//! Table names, and a TABLE_FEATURES request that sets the tables'
//! features (a request with a body), judged as Open vSwitch 3.1 judges one
//! (`handle_table_features_change` in its ofproto/ofproto.c).
//!
//! Names come from two places, as in Open vSwitch: the configuration file
//! (Open vSwitch's database) and OpenFlow. A configured name wins: a
//! controller cannot change it, and a reload that drops it leaves the table
//! without a name. A name set by a controller stays until a controller or
//! the configuration changes it (not across a restart).
//!
//! A request that sets features must, as in Open vSwitch:
//! * be decodable strictly (every property known, every instruction and
//!   field known, the eight required properties present, none twice);
//! * name each table once (`NXTFFC_DUP_TABLE`) and every table of the
//!   switch, no more (OpenFlow 1.5's `OFPTFFC_TOO_MANY`, which OpenFlow 1.3
//!   has no code for: `NXBRC_UNENCODABLE_ERROR`, as Open vSwitch sends it)
//!   and none left out (`OFPTFFC_EPERM`);
//! * keep each table's `max_entries` (`OFPTFFC_EPERM`);
//! * keep every configured name: the same name, an empty one, or the
//!   start of it (Open vSwitch compares only the new name's length) leave
//!   it as it is, anything else is `OFPTFFC_EPERM`;
//! * ask for no feature the table lacks (instructions, next tables,
//!   actions, fields to match, mask, wildcard and set, metadata bits;
//!   `OFPTFFC_EPERM`): a switch may offer more than asked, and sluice's
//!   tables cannot change.
//!
//! It then changes the names (those of the configuration excepted) and
//! nothing else, all at once: a refused request changes nothing.

use std::collections::{BTreeMap, BTreeSet};

use ofp::error::{
    BadInstructionCode, BadMatchCode, TableFeaturesFailedCode, NXBRC_UNENCODABLE_ERROR,
    NXTFFC_DUP_TABLE, OFPBPC_BAD_EXPERIMENTER, OFPBPC_BAD_EXP_TYPE,
};
use ofp::msg::table_features::{prop_type as t, OxmId, TableFeatureProp as P, TableFeatures};

use super::*;

/// Open vSwitch's last table, hidden from OpenFlow.
const HIDDEN_TABLE: u8 = 254;

/// The longest table name: `OFP_MAX_TABLE_NAME_LEN` (32) less its NUL.
pub const MAX_TABLE_NAME: usize = 31;

/// Who named a table. A higher level wins, as Open vSwitch's database
/// (level 2) wins over OpenFlow (level 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    #[default]
    Unset,
    OpenFlow,
    Config,
}

/// Each table's name and who gave it.
#[derive(Debug, Clone)]
pub(crate) struct TableNames {
    tables: Vec<(Option<Vec<u8>>, Level)>,
}

impl TableNames {
    pub(crate) fn new(n_tables: u8) -> TableNames {
        TableNames {
            tables: vec![(None, Level::Unset); n_tables as usize],
        }
    }

    /// Table `id`'s name, if it has one.
    pub(crate) fn get(&self, id: u8) -> Option<&[u8]> {
        self.tables.get(id as usize)?.0.as_deref()
    }

    /// Gives table `id` the name `name` at `level` (None: takes back the
    /// name this level gave, if it did), unless a higher level named it
    /// (Open vSwitch's `oftable_set_name`). An empty name unsets it.
    fn set(&mut self, id: u8, name: Option<&[u8]>, level: Level) {
        let Some(t) = self.tables.get_mut(id as usize) else {
            return;
        };
        if level < t.1 {
            return;
        }
        match name {
            Some(n) => {
                let n = &n[..n.len().min(MAX_TABLE_NAME)];
                t.0 = (!n.is_empty()).then(|| n.to_vec());
                t.1 = level;
            }
            None if t.1 == level => *t = (None, Level::Unset),
            None => {}
        }
    }

    /// Whether [`TableNames::set`] of `name` at `level` would leave no
    /// name of a higher level changed (Open vSwitch's
    /// `oftable_may_set_name`: the same name, an empty one, or the start
    /// of the name there is, are no change).
    fn may_set(&self, id: u8, name: &[u8], level: Level) -> bool {
        match self.tables.get(id as usize) {
            Some((Some(cur), l)) if level < *l => cur.starts_with(name),
            _ => true,
        }
    }
}

impl<D: Datapath> Agent<D> {
    /// The configuration's table names (a reload's too): each table named
    /// there gets that name, whatever a controller set; a table the
    /// configuration named before and names no more loses its name; the
    /// names controllers gave other tables stay. Names longer than
    /// [`MAX_TABLE_NAME`] bytes are cut (the configuration refuses them),
    /// tables past the pipeline's ignored.
    pub fn set_table_names(&mut self, names: &BTreeMap<u8, String>) {
        for id in 0..self.pipeline.config.n_tables {
            let name = names.get(&id).map(|n| n.as_bytes());
            self.table_names.set(id, name, Level::Config);
        }
    }

    /// Table `id`'s name as TABLE_FEATURES reports it ("" for none).
    pub fn table_name(&self, id: u8) -> String {
        String::from_utf8_lossy(self.table_names.get(id).unwrap_or_default()).into_owned()
    }

    /// A TABLE_FEATURES request that sets features: `parts` are its
    /// messages' tables, in order. Ok: the names changed (or nothing was
    /// asked); Err: the error and which part it concerns.
    pub(crate) fn set_table_features(
        &mut self,
        parts: &[&[TableFeatures]],
    ) -> Result<(), (ErrorCode, usize)> {
        let mut asked: BTreeMap<u8, (&TableFeatures, Offer)> = BTreeMap::new();
        for (i, tables) in parts.iter().enumerate() {
            for tf in tables.iter() {
                let offer = Offer::of(tf).map_err(|c| (c, i))?;
                if asked.insert(tf.table_id, (tf, offer)).is_some() {
                    return Err((NXTFFC_DUP_TABLE, i));
                }
            }
        }
        if asked.is_empty() {
            return Ok(());
        }
        let last = parts.len() - 1;
        let eperm = (
            ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::Eperm),
            last,
        );
        // Table 254 is Open vSwitch's hidden table, which no request may
        // name; a sluice without a table 254 answers as Open vSwitch does.
        let n = self.pipeline.config.n_tables;
        if n <= HIDDEN_TABLE && asked.contains_key(&HIDDEN_TABLE) {
            return Err(eperm);
        }
        // Every table, each once, no more: Open vSwitch cannot add,
        // remove or disable tables, nor can sluice.
        let seen = (0..=HIDDEN_TABLE)
            .find(|i| !asked.contains_key(i))
            .unwrap_or(255);
        let skipped = asked.keys().any(|&k| k > seen);
        if seen != n || skipped {
            return Err(if seen > n {
                // OFPTFFC_TOO_MANY: OpenFlow 1.5's, none in 1.3.
                (NXBRC_UNENCODABLE_ERROR, last)
            } else {
                eperm
            });
        }
        let own = stats::table_features(n, self.pipeline.config.max_entries, &self.table_names);
        for (old, (new, _)) in own.iter().zip(asked.values()) {
            if old.max_entries != new.max_entries {
                return Err(eperm);
            }
        }
        for (id, (new, _)) in &asked {
            if !self
                .table_names
                .may_set(*id, name_bytes(new), Level::OpenFlow)
            {
                return Err(eperm);
            }
        }
        for (old, (new, offer)) in own.iter().zip(asked.values()) {
            let mine = Offer::of(old).expect("the switch's own features decode");
            if old.metadata_match & new.metadata_match != new.metadata_match
                || old.metadata_write & new.metadata_write != new.metadata_write
                || !mine.covers(offer)
            {
                return Err(eperm);
            }
        }
        for (id, (new, _)) in &asked {
            self.table_names
                .set(*id, Some(name_bytes(new)), Level::OpenFlow);
        }
        Ok(())
    }
}

/// A request's name: the bytes before the first NUL, at most 31 (Open
/// vSwitch reads 31 of a name that fills its 32 bytes).
fn name_bytes(tf: &TableFeatures) -> &[u8] {
    let n = &tf.name.0[..MAX_TABLE_NAME];
    &n[..n.iter().position(|&b| b == 0).unwrap_or(MAX_TABLE_NAME)]
}

/// What one set of instructions offers (a table's, or its table-miss
/// flow's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Instructions {
    instructions: BTreeSet<u16>,
    next: BTreeSet<u8>,
    write: BTreeSet<u16>,
    apply: BTreeSet<u16>,
    write_set: BTreeSet<OxmField>,
    apply_set: BTreeSet<OxmField>,
}

impl Instructions {
    fn covers(&self, o: &Instructions) -> bool {
        self.instructions.is_superset(&o.instructions)
            && self.next.is_superset(&o.next)
            && self.write.is_superset(&o.write)
            && self.apply.is_superset(&o.apply)
            && self.write_set.is_superset(&o.write_set)
            && self.apply_set.is_superset(&o.apply_set)
    }
}

/// One table's features as sets, read as Open vSwitch reads a request
/// (`ofputil_decode_table_features` without its loose mode).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Offer {
    /// Flows, then the table-miss flow.
    flows: [Instructions; 2],
    matching: BTreeSet<OxmField>,
    masked: BTreeSet<OxmField>,
    wildcards: BTreeSet<OxmField>,
}

/// The properties OpenFlow 1.3 requires in every table's features.
const REQUIRED: [u16; 8] = [
    t::INSTRUCTIONS,
    t::NEXT_TABLES,
    t::WRITE_ACTIONS,
    t::APPLY_ACTIONS,
    t::MATCH,
    t::WILDCARDS,
    t::WRITE_SETFIELD,
    t::APPLY_SETFIELD,
];

impl Offer {
    fn of(tf: &TableFeatures) -> Result<Offer, ErrorCode> {
        if tf.table_id == ofp::port::TABLE_ALL {
            return Err(ErrorCode::TableFeaturesFailed(
                TableFeaturesFailedCode::BadTable,
            ));
        }
        let mut o = Offer::default();
        let mut seen = 0u32;
        for p in &tf.properties {
            let ty = match p {
                P::Instructions { ty, .. }
                | P::NextTables { ty, .. }
                | P::Actions { ty, .. }
                | P::Oxms { ty, .. } => *ty,
                // Open vSwitch reads only EXPERIMENTER_MISS as an
                // experimenter's property (EXPERIMENTER is an unknown
                // type to it); it knows none.
                P::Experimenter {
                    ty, experimenter, ..
                } => {
                    return Err(match (*ty, *experimenter) {
                        (t::EXPERIMENTER, _) => {
                            ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::BadType)
                        }
                        (_, 0) => OFPBPC_BAD_EXPERIMENTER,
                        _ => OFPBPC_BAD_EXP_TYPE,
                    })
                }
            };
            if ty < 32 {
                if seen & (1 << ty) != 0 {
                    // OFPTFFC_BAD_FEATURES: OpenFlow 1.5's, none in 1.3.
                    return Err(NXBRC_UNENCODABLE_ERROR);
                }
                seen |= 1 << ty;
            }
            let miss = usize::from(ty & 1 == 1);
            let f = &mut o.flows[miss];
            match p {
                P::Instructions { ids, .. } => {
                    for id in ids {
                        // goto_table .. meter: the instructions Open vSwitch
                        // knows (an experimenter's it does not).
                        if !(1..=6).contains(&id.ty) {
                            return Err(ErrorCode::BadInstruction(BadInstructionCode::UnknownInst));
                        }
                        f.instructions.insert(id.ty);
                    }
                }
                P::NextTables { tables, .. } => {
                    for &n in tables {
                        if n == ofp::port::TABLE_ALL {
                            // OFPBPC_BAD_VALUE, OpenFlow 1.3's BAD_ARGUMENT.
                            return Err(ErrorCode::TableFeaturesFailed(
                                TableFeaturesFailedCode::BadArgument,
                            ));
                        }
                        f.next.insert(n);
                    }
                }
                P::Actions { ids, .. } => {
                    // Types past 31 and unknown ones are left out, as
                    // Open vSwitch's bitmap leaves them.
                    let known = |ty: u16| {
                        ty < 32
                            && ofp::action::ActionType::KNOWN
                                .iter()
                                .any(|a| a.value() == ty)
                    };
                    let set = if matches!(ty, t::WRITE_ACTIONS | t::WRITE_ACTIONS_MISS) {
                        &mut f.write
                    } else {
                        &mut f.apply
                    };
                    set.extend(ids.iter().map(|i| i.ty).filter(|&ty| known(ty)));
                }
                P::Oxms { ids, .. } => {
                    for id in ids {
                        let (field, mask) = oxm_field(id)?;
                        match ty {
                            t::MATCH => {
                                o.matching.insert(field);
                                if mask {
                                    o.masked.insert(field);
                                }
                                continue;
                            }
                            _ if mask => return Err(ErrorCode::BadMatch(BadMatchCode::BadMask)),
                            t::WILDCARDS => o.wildcards.insert(field),
                            t::WRITE_SETFIELD | t::WRITE_SETFIELD_MISS => {
                                o.flows[miss].write_set.insert(field)
                            }
                            _ => o.flows[miss].apply_set.insert(field),
                        };
                    }
                }
                P::Experimenter { .. } => unreachable!("refused above"),
            }
        }
        if REQUIRED.iter().any(|&r| seen & (1 << r) == 0) {
            // OFPTFFC_BAD_FEATURES, as above.
            return Err(NXBRC_UNENCODABLE_ERROR);
        }
        // A table-miss property left out is the same as the other's.
        let [flows, miss] = &mut o.flows;
        if seen & (1 << t::INSTRUCTIONS_MISS) == 0 {
            miss.instructions = flows.instructions.clone();
        }
        if seen & (1 << t::NEXT_TABLES_MISS) == 0 {
            miss.next = flows.next.clone();
        }
        if seen & (1 << t::WRITE_ACTIONS_MISS) == 0 {
            miss.write = flows.write.clone();
        }
        if seen & (1 << t::APPLY_ACTIONS_MISS) == 0 {
            miss.apply = flows.apply.clone();
        }
        if seen & (1 << t::WRITE_SETFIELD_MISS) == 0 {
            miss.write_set = flows.write_set.clone();
        }
        if seen & (1 << t::APPLY_SETFIELD_MISS) == 0 {
            miss.apply_set = flows.apply_set.clone();
        }
        // A maskable field can be matched and wildcarded; only a field
        // that can be matched can be wildcarded.
        o.matching.extend(o.masked.iter().copied());
        o.wildcards.extend(o.masked.iter().copied());
        o.wildcards.retain(|f| o.matching.contains(f));
        Ok(o)
    }

    /// Whether this offer includes everything `o` asks for.
    fn covers(&self, o: &Offer) -> bool {
        self.flows[0].covers(&o.flows[0])
            && self.flows[1].covers(&o.flows[1])
            && self.matching.is_superset(&o.matching)
            && self.masked.is_superset(&o.masked)
            && self.wildcards.is_superset(&o.wildcards)
    }
}

/// The field an OXM id names and its hasmask bit, as Open vSwitch's
/// `nx_pull_header` reads one: a field sluice does not know, or a length
/// that is not the field's (halved, with hasmask), is `OFPBMC_BAD_FIELD`;
/// an experimenter header too short for its experimenter id
/// `OFPBMC_BAD_LEN`.
fn oxm_field(id: &OxmId) -> Result<(OxmField, bool), ErrorCode> {
    let h = id.header;
    let mask = h & 0x100 != 0;
    let experimenter = (h >> 16) as u16 == ofp::oxm::OXM_CLASS_EXPERIMENTER;
    let len = h & 0xff;
    let exp_len = if experimenter { 4 } else { 0 };
    if len < exp_len {
        return Err(ErrorCode::BadMatch(BadMatchCode::BadLen));
    }
    let width = if mask {
        (len - exp_len) / 2
    } else {
        len - exp_len
    };
    let field = if experimenter {
        let tcp_flags = OxmField::TcpFlags.header(false);
        ((h ^ tcp_flags) & !0x1ff == 0 && id.experimenter == Some(ofp::error::ONF_EXPERIMENTER))
            .then_some(OxmField::TcpFlags)
    } else {
        OxmField::from_nxm_header_any_len(h)
    };
    field
        .filter(|f| f.info().is_some_and(|i| u32::from(i.width) == width))
        .map(|f| (f, mask))
        .ok_or(ErrorCode::BadMatch(BadMatchCode::BadField))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: u8) -> TableNames {
        TableNames::new(n)
    }

    #[test]
    fn the_configuration_wins_over_openflow() {
        let mut t = names(4);
        t.set(1, Some(b"Config"), Level::Config);
        // A controller may repeat it, leave it empty, or give its start;
        // nothing changes.
        for ok in [&b"Config"[..], b"", b"Con"] {
            assert!(t.may_set(1, ok, Level::OpenFlow));
            t.set(1, Some(ok), Level::OpenFlow);
            assert_eq!(t.get(1), Some(&b"Config"[..]));
        }
        assert!(!t.may_set(1, b"Other", Level::OpenFlow));
        assert!(!t.may_set(1, b"Configx", Level::OpenFlow));
        // Other tables take OpenFlow names, and lose them to empty ones.
        t.set(2, Some(b"Of"), Level::OpenFlow);
        assert_eq!(t.get(2), Some(&b"Of"[..]));
        assert!(t.may_set(2, b"Other", Level::OpenFlow));
        t.set(2, Some(b""), Level::OpenFlow);
        assert_eq!(t.get(2), None);
    }

    #[test]
    fn a_configuration_that_drops_a_name_unsets_it_and_keeps_openflows() {
        let mut t = names(4);
        t.set(0, Some(b"A"), Level::Config);
        t.set(1, Some(b"B"), Level::OpenFlow);
        // The next configuration names neither.
        t.set(0, None, Level::Config);
        t.set(1, None, Level::Config);
        assert_eq!(t.get(0), None);
        assert_eq!(t.get(1), Some(&b"B"[..]));
        // Now OpenFlow may name table 0; a configured name replaces an
        // OpenFlow one.
        assert!(t.may_set(0, b"C", Level::OpenFlow));
        t.set(1, Some(b"D"), Level::Config);
        assert_eq!(t.get(1), Some(&b"D"[..]));
    }

    #[test]
    fn names_are_cut_to_31_bytes() {
        let mut t = names(1);
        t.set(0, Some(&[b'x'; 40]), Level::OpenFlow);
        assert_eq!(t.get(0).map(<[u8]>::len), Some(MAX_TABLE_NAME));
        let mut tf = stats::table_features(1, 10, &t).remove(0);
        tf.name = FixedStr([b'y'; 32]);
        assert_eq!(name_bytes(&tf), &[b'y'; 31][..]);
    }

    #[test]
    fn the_switch_offers_what_it_offers_and_not_more() {
        let own = stats::table_features(3, 100, &names(3));
        let offers: Vec<Offer> = own.iter().map(|t| Offer::of(t).unwrap()).collect();
        for o in &offers {
            assert!(o.covers(o));
            assert!(!o.matching.is_empty() && !o.flows[0].apply.is_empty());
        }
        // Table 0 may go to 1 and 2, table 2 nowhere.
        assert!(offers[0].covers(&offers[2]));
        assert!(!offers[2].covers(&offers[0]));
    }
}
