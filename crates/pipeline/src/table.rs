//! One OpenFlow flow table: its rules, the classifier over them, and the
//! indexes flow-mods need (exact match+priority for ADD and strict
//! commands).
//!
//! The indexes use the Fx hash: keys are rule ids and 272-byte masked keys
//! chosen by the controller, hashed once per flow-mod, where SipHash's
//! cost showed in the million-flow ingest profile and its flooding
//! resistance buys nothing (a controller that wants to slow the switch can
//! simply send more flow-mods).

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use crate::classifier::{Classifier, RuleId};
use crate::matchkey::MaskedKey;
use crate::rule::Rule;

/// A flow table (control-plane copy; its classifier is what workers see).
#[derive(Clone, Debug)]
pub struct FlowTable {
    pub id: u8,
    /// Rules beyond this are refused with OFPFMFC_TABLE_FULL.
    pub max_entries: usize,
    pub(crate) cls: Classifier<Arc<Rule>>,
    pub(crate) rules: HashMap<RuleId, Arc<Rule>>,
    pub(crate) exact: HashMap<(MaskedKey, u16), RuleId>,
    /// Rules with an idle or hard timeout: expiry looks at these only, so
    /// a large table of permanent flows costs nothing to age.
    pub(crate) timed: BTreeSet<RuleId>,
}

impl FlowTable {
    pub fn new(id: u8, max_entries: usize) -> FlowTable {
        FlowTable {
            id,
            max_entries,
            cls: Classifier::new(),
            rules: HashMap::default(),
            exact: HashMap::default(),
            timed: BTreeSet::new(),
        }
    }

    /// Number of installed rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rule with exactly this match and priority.
    pub fn get_exact(&self, key: &MaskedKey, priority: u16) -> Option<&Arc<Rule>> {
        self.exact
            .get(&(*key, priority))
            .and_then(|id| self.rules.get(id))
    }

    /// Every rule, in no particular order.
    pub fn rules(&self) -> impl Iterator<Item = &Arc<Rule>> {
        self.rules.values()
    }

    /// The rules that have a timeout.
    pub fn timed_rules(&self) -> impl Iterator<Item = &Arc<Rule>> {
        self.timed.iter().filter_map(|id| self.rules.get(id))
    }

    /// The classifier workers use.
    pub fn classifier(&self) -> &Classifier<Arc<Rule>> {
        &self.cls
    }

    pub(crate) fn insert(&mut self, rule: Arc<Rule>) {
        self.cls
            .insert_with(rule.id, &rule.key, rule.priority, rule.clone());
        self.exact.insert((rule.key, rule.priority), rule.id);
        if rule.idle_timeout != 0 || rule.hard_timeout != 0 {
            self.timed.insert(rule.id);
        }
        self.rules.insert(rule.id, rule);
    }

    pub(crate) fn remove(&mut self, id: RuleId) -> Option<Arc<Rule>> {
        let rule = self.rules.remove(&id)?;
        self.cls.remove(id, &rule.key, rule.priority);
        self.exact.remove(&(rule.key, rule.priority));
        self.timed.remove(&id);
        Some(rule)
    }

    /// Replaces a rule by a new version with the same id, match and priority.
    pub(crate) fn replace(&mut self, rule: Arc<Rule>) {
        self.remove(rule.id);
        self.insert(rule);
    }
}
