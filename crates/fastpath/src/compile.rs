//! From a pipeline [`Snapshot`] to one XDP program per ingress port.
//!
//! Each program: checks that it is the current generation (else every
//! packet goes up, so a flow-mod takes effect at once, before the new
//! program is built), parses the frame into a flow key ([`crate::parse`]),
//! finds table 0's best rule by tuple-space search over the rules' masks,
//! as `pipeline::lookup::classifier` does, then runs the rule's [`Final`] plan.
//!
//! Matching: subtables (one per mask) are visited from the highest score
//! down and skipped once the best match so far outranks them. A subtable
//! with few rules for this port is compiled inline (compare, jump); a
//! larger one is a BPF hash map from masked key words to the rule's score,
//! action and counter, shared by the ports' programs. A score is
//! `priority << 32 | !rule_id`, so ties go to the lower rule id as in the
//! user-space classifier.
//!
//! Counters (one per-CPU array of {packets, bytes}): one per rule, then per
//! program: missed, dropped by a rule, sent back (IN_PORT), sent up, one
//! per egress port redirected to, and flooded. [`Compiled::fold`] turns
//! them into rule, port and table counts.
//!
//! The verifier: the best score, action and counter are constants along
//! each inline path; they are made opaque (xor twice with a value the
//! verifier cannot know) where paths join, so its states merge and the
//! work stays linear in the program's size.
//!
//! One job in one file: the code generator, from a snapshot to a
//! program (the parser, plan and assembler it uses live apart).

use std::collections::HashMap;
use std::sync::Arc;

use ofp::port::port_no;
use packet::FlowKey;
use pipeline::{Rule, Snapshot};

use crate::asm::{
    Alu, Asm, AsmError, Assembled, Cond, Helper, Label, Size, FP, R0, R1, R2, R3, R4, R5, R6, R7,
    R8, R9,
};
use crate::parse::{self, key_off};
use crate::plan::{checks, plan, specialise, Check, Edit, Final, Plan, Ports, Up};

/// Map numbers in [`Assembled::map_refs`].
pub const MAP_CTL: u32 = 0;
pub const MAP_COUNTERS: u32 = 1;
pub const MAP_DEV: u32 = 2;
/// The ingress port's own XSKMAP (its AF_XDP sockets).
pub const MAP_XSK: u32 = 3;
/// The flood DEVMAP: the ports of [`Compiled::flood`].
pub const MAP_FLOOD: u32 = 4;
/// Hash table `i` of [`Compiled::tables`] is map `MAP_TABLE0 + i`.
pub const MAP_TABLE0: u32 = 5;

/// The control map's value: the current generation, and a word that is
/// always zero (the verifier cannot know it: see the module docs).
pub const CTL_VALUE_SIZE: u32 = 16;
/// A counter: packets, bytes (u64 each).
pub const COUNTER_SIZE: u32 = 16;
/// A hash table value: score (u64), action (u32), counter (u32).
pub const TABLE_VALUE_SIZE: u32 = 16;

const XDP_DROP: i32 = 1;
const XDP_PASS: i32 = 2;
const XDP_TX: i32 = 3;
const XDP_REDIRECT: i32 = 4;
/// bpf_redirect_map flags: to every entry of the map, but the ingress.
const BPF_F_BROADCAST: u32 = 1 << 3;
const BPF_F_EXCLUDE_INGRESS: u32 = 1 << 4;

/// Per-program counter kinds, after the rules' counters.
const K_MISS: u32 = 0;
const K_DROP: u32 = 1;
const K_BACK: u32 = 2;
const K_UP: u32 = 3;
const K_REDIRECT: u32 = 4;

/// Stack: the key at the top, a hash key below it, then scratch.
const HASH_KEY: i16 = key_off(0) - 8 * packet::PACKET_WORDS as i16;
const SCRATCH: i16 = HASH_KEY - 8;
const OPAQUE: i16 = SCRATCH - 8;
/// A word the edits keep across a helper call (below the parser's slots).
const EDIT_SLOT: i16 = parse::L4_SLOT - 8;
const _: () = assert!(parse::L3_SLOT < OPAQUE && EDIT_SLOT >= -512);

/// Compiler limits.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// A subtable with at most this many rules for a port is compiled
    /// inline; above, it is a hash map.
    pub inline_max: usize,
    /// Instructions per program above which inline subtables become maps.
    pub max_insns: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            inline_max: 8,
            max_insns: 30_000,
        }
    }
}

/// A BPF hash map's contents: `n` keys of `key_size` bytes and their
/// [`TABLE_VALUE_SIZE`]-byte values, ready for a batch update.
#[derive(Debug, Clone, Default)]
pub struct HashTable {
    pub key_size: u32,
    pub keys: Vec<u8>,
    pub values: Vec<u8>,
}

impl HashTable {
    pub fn len(&self) -> usize {
        self.values.len() / TABLE_VALUE_SIZE as usize
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// The program of one ingress port.
#[derive(Debug, Clone)]
pub struct PortProgram {
    pub in_port: u32,
    pub code: Assembled,
    /// Its first counter (see the module docs).
    pub counter_base: u32,
    /// What each action id does for this port (for `fold` and for trace).
    pub finals: Vec<Final>,
}

/// The tables compiled for a set of ports.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub generation: u64,
    pub programs: Vec<PortProgram>,
    pub tables: Vec<HashTable>,
    /// Devmap slot -> OpenFlow port.
    pub egress: Vec<u32>,
    /// The ports of the flood devmap ([`MAP_FLOOD`], slots in order): the
    /// ports FLOOD and ALL send to, when the programs flood at all.
    pub flood: Vec<u32>,
    /// Counter index -> rule (table 0's rules, by id).
    pub rules: Vec<Arc<Rule>>,
    /// Action id of each rule.
    pub rule_action: Vec<u32>,
    /// Entries in the counter map.
    pub counters: u32,
    /// Rules whose packets go up, and why (the first few reasons).
    pub up_rules: usize,
    pub up_reasons: Vec<(Up, usize)>,
}

/// Counts folded from the counter map.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub packets: u64,
    pub bytes: u64,
}

impl Counts {
    fn add(&mut self, o: Counts) {
        self.packets += o.packets;
        self.bytes += o.bytes;
    }
}

/// The counter map read as OpenFlow counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fold {
    /// Per rule (by counter index).
    pub rules: Vec<Counts>,
    /// Per ingress port handled in the kernel: (port, received).
    pub rx: Vec<(u32, Counts)>,
    /// Per port: (port, sent by the fast path).
    pub tx: Vec<(u32, Counts)>,
    /// Table 0: lookups and matches made in the kernel.
    pub lookups: u64,
    pub matched: u64,
    /// Sent up to user space, and handled in the kernel.
    pub up: Counts,
    pub kernel: Counts,
}

struct Sub {
    mask: FlowKey,
    words: Vec<usize>,
    /// Rule indices, best score first.
    rules: Vec<usize>,
    max_score: u64,
    table: Option<usize>,
}

/// `priority << 32 | !id`: higher wins; equal priorities go to the lower id.
pub fn score(rule: &Rule) -> u64 {
    ((rule.priority as u64) << 32) | (u32::MAX - rule.id) as u64
}

/// The snapshot's ports, and which of them XDP serves.
pub(crate) struct SnapPorts<'a> {
    pub snap: &'a Snapshot,
    pub egress: &'a [u32],
}

impl Ports for SnapPorts<'_> {
    fn usable(&self, port: u32) -> Option<bool> {
        self.snap.ports.usable(port)
    }
    fn xdp(&self, port: u32) -> bool {
        self.egress.contains(&port)
    }
    fn flood(&self, all: bool) -> Result<Vec<u32>, Up> {
        let reserved = if all { port_no::ALL } else { port_no::FLOOD };
        let mut set = Vec::new();
        for &p in self.snap.ports.usable_ports() {
            if self.snap.ports.get(p).is_some_and(|p| p.no_flood) {
                return Err(Up::Reserved(reserved));
            }
            if !self.xdp(p) {
                return Err(Up::NotXdp(p));
            }
            set.push(p);
        }
        set.sort_unstable();
        Ok(set)
    }
}

/// Why the tables could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileError {
    Asm(AsmError),
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompileError::Asm(e) => write!(f, "assembling the XDP program: {e}"),
        }
    }
}

/// Compiles `snap`'s table 0 for ingress ports `inputs`, with `egress` the
/// ports XDP can redirect to (devmap slot = position).
pub fn compile(
    snap: &Snapshot,
    inputs: &[u32],
    egress: &[u32],
    generation: u64,
    opts: &Options,
) -> Result<Compiled, CompileError> {
    let mut rules: Vec<Arc<Rule>> = snap
        .tables
        .first()
        // Conjunctive flows too: the program sends their packets up (their
        // plan is Up), where the conjunction lookup runs.
        .map(|t| {
            t.entries()
                .chain(t.conj.entries())
                .map(|(_, _, r)| r.clone())
                .collect()
        })
        .unwrap_or_default();
    // Metadata (registers, packet mark) is zero in an arriving packet: a
    // rule that asks for a non-zero value never matches one here.
    rules.retain(|r| crate::plan::arrival_key(&r.key()).is_some());
    rules.sort_by_key(|r| r.id);
    // Plans, shared by equal rules.
    let mut plan_ids: HashMap<Plan, u32> = HashMap::new();
    let mut plans: Vec<Plan> = Vec::new();
    let mut rule_action = Vec::with_capacity(rules.len());
    let mut up_count: HashMap<Up, usize> = HashMap::new();
    let mut up_rules = 0;
    for r in &rules {
        let p = plan(r);
        if let Plan::Up(u) = &p {
            up_rules += 1;
            *up_count.entry(u.clone()).or_default() += 1;
        }
        let id = *plan_ids.entry(p.clone()).or_insert_with(|| {
            plans.push(p);
            plans.len() as u32 - 1
        });
        rule_action.push(id);
    }
    let mut up_reasons: Vec<(Up, usize)> = up_count.into_iter().collect();
    up_reasons.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| format!("{:?}", a.0).cmp(&format!("{:?}", b.0)))
    });

    // Subtables, best first.
    let mut by_mask: HashMap<FlowKey, usize> = HashMap::new();
    let mut subs: Vec<Sub> = Vec::new();
    // Keys are unpacked where used, not all at once: a million full keys
    // would be 350 MB.
    for (i, r) in rules.iter().enumerate() {
        let k = crate::plan::arrival_key(&r.key()).expect("kept above");
        let s = *by_mask.entry(k.mask).or_insert_with(|| {
            subs.push(Sub {
                mask: k.mask,
                words: (0..packet::PACKET_WORDS)
                    .filter(|&w| k.mask.w[w] != 0)
                    .collect(),
                rules: Vec::new(),
                max_score: 0,
                table: None,
            });
            subs.len() - 1
        });
        subs[s].rules.push(i);
    }
    for s in &mut subs {
        s.rules
            .sort_by_key(|&i| std::cmp::Reverse(score(&rules[i])));
        s.max_score = s.rules.first().map_or(0, |&i| score(&rules[i]));
    }
    subs.sort_by_key(|s| std::cmp::Reverse(s.max_score));

    let ports = SnapPorts { snap, egress };
    // Per program: the fixed kinds, one per egress slot, then flooded.
    let n_kinds = K_REDIRECT + egress.len() as u32 + 1;
    let mut tables: Vec<HashTable> = Vec::new();
    let mut programs = Vec::with_capacity(inputs.len());
    for (k, &in_port) in inputs.iter().enumerate() {
        let counter_base = rules.len() as u32 + k as u32 * n_kinds;
        let finals: Vec<Final> = plans
            .iter()
            .map(|p| specialise(p, in_port, &ports))
            .collect();
        let no_recv = snap.ports.no_recv(in_port);
        let mut inline_max = opts.inline_max;
        let code = loop {
            let code = emit_program(
                &Emit {
                    in_port,
                    generation,
                    rules: &rules,
                    rule_action: &rule_action,
                    finals: &finals,
                    egress,
                    counter_base,
                    no_recv,
                    inline_max,
                    miss_up: snap.miss_to_controller,
                },
                &mut subs,
                &mut tables,
            );
            match code {
                Ok(c) if c.insns.len() <= opts.max_insns || inline_max == 0 => break c,
                Ok(_) | Err(AsmError::JumpTooFar { .. }) if inline_max > 0 => inline_max /= 2,
                Ok(c) => break c,
                Err(e) => return Err(CompileError::Asm(e)),
            }
        };
        programs.push(PortProgram {
            in_port,
            code,
            counter_base,
            finals,
        });
    }
    let counters = rules.len() as u32 + inputs.len() as u32 * n_kinds;
    Ok(Compiled {
        generation,
        programs,
        tables,
        egress: egress.to_vec(),
        flood: ports.flood(true).unwrap_or_default(),
        rules,
        rule_action,
        counters: counters.max(1),
        up_rules,
        up_reasons,
    })
}

struct Emit<'a> {
    in_port: u32,
    generation: u64,
    rules: &'a [Arc<Rule>],
    rule_action: &'a [u32],
    finals: &'a [Final],
    egress: &'a [u32],
    counter_base: u32,
    no_recv: bool,
    inline_max: usize,
    /// A miss goes up (to the controllers of OpenFlow 1.0-1.2) instead
    /// of being dropped.
    miss_up: bool,
}

/// The hash table of subtable `s`, made on first use.
fn table_of(s: &mut Sub, e: &Emit<'_>, tables: &mut Vec<HashTable>) -> usize {
    if let Some(t) = s.table {
        return t;
    }
    let mut t = HashTable {
        key_size: 8 * s.words.len() as u32,
        ..HashTable::default()
    };
    // Rules are best first: the first of equal keys is the one that wins.
    let mut seen: std::collections::HashSet<Vec<u64>> = std::collections::HashSet::new();
    for &i in &s.rules {
        let k = crate::plan::arrival_key(&e.rules[i].key()).expect("kept above");
        let key: Vec<u64> = s.words.iter().map(|&w| k.value.w[w]).collect();
        if !seen.insert(key.clone()) {
            continue;
        }
        for w in &key {
            t.keys.extend_from_slice(&w.to_le_bytes());
        }
        t.values
            .extend_from_slice(&score(&e.rules[i]).to_le_bytes());
        t.values.extend_from_slice(&e.rule_action[i].to_le_bytes());
        t.values.extend_from_slice(&(i as u32).to_le_bytes());
    }
    tables.push(t);
    s.table = Some(tables.len() - 1);
    tables.len() - 1
}

/// Whether rule `i` can match packets from `in_port` (its in_port word).
fn reaches(e: &Emit<'_>, i: usize) -> bool {
    let k = crate::plan::arrival_key(&e.rules[i].key()).expect("kept above");
    let w0 = ((e.in_port as u64) << 32) | e.in_port as u64;
    w0 & k.mask.w[0] == k.value.w[0]
}

/// Makes r7, r8, r9 opaque to the verifier (see the module docs).
fn launder(a: &mut Asm) {
    a.ldx(Size::DW, R1, FP, OPAQUE);
    for r in [R7, R8, R9] {
        a.alu_reg(Alu::Xor, r, R1);
        a.alu_reg(Alu::Xor, r, R1);
    }
}

fn emit_program(
    e: &Emit<'_>,
    subs: &mut [Sub],
    tables: &mut Vec<HashTable>,
) -> Result<Assembled, AsmError> {
    let mut a = Asm::new();
    let up = a.label();
    a.mov(R6, R1);
    // The generation check.
    a.st_imm(Size::W, FP, SCRATCH, 0);
    a.ld_map(R1, MAP_CTL);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, SCRATCH as i32);
    a.call(Helper::MapLookupElem);
    a.jmp_imm(Cond::Eq, R0, 0, up);
    a.ldx(Size::DW, R1, R0, 8);
    a.stx(Size::DW, FP, OPAQUE, R1);
    a.ldx(Size::DW, R1, R0, 0);
    a.ld_imm64(R2, e.generation);
    a.jmp_reg(Cond::Ne, R1, R2, up);
    if e.no_recv {
        a.ja(up);
    } else {
        a.ldx(Size::W, R7, R6, 0);
        a.ldx(Size::W, R8, R6, 4);
        parse::emit(&mut a, e.in_port, up);
        emit_match(&mut a, e, subs, tables);
        emit_actions(&mut a, e, up);
    }
    // Up: counted, then to this queue's AF_XDP socket (or the stack).
    a.bind(up);
    a.mov(R1, R6);
    a.call(Helper::XdpGetBuffLen);
    a.mov(R9, R0);
    count(&mut a, Ctr::Const(e.counter_base + K_UP));
    a.ldx(Size::W, R2, R6, 16);
    a.ld_map(R1, MAP_XSK);
    a.mov_imm(R3, XDP_PASS);
    a.call(Helper::RedirectMap);
    a.exit();
    a.finish()
}

fn emit_match(a: &mut Asm, e: &Emit<'_>, subs: &mut [Sub], tables: &mut Vec<HashTable>) {
    let end = a.label();
    a.mov_imm(R9, 0);
    a.mov_imm(R7, 0);
    a.mov_imm(R8, 0);
    // This port's rules of each subtable, best subtable first (so that
    // once the best match outranks one, it outranks all that follow).
    let mut order: Vec<(usize, Vec<usize>, u64)> = subs
        .iter()
        .enumerate()
        .filter_map(|(n, s)| {
            let mine: Vec<usize> = s.rules.iter().copied().filter(|&i| reaches(e, i)).collect();
            let best = score(&e.rules[*mine.first()?]);
            Some((n, mine, best))
        })
        .collect();
    order.sort_by_key(|o| std::cmp::Reverse(o.2));
    for (n, mine, best) in order {
        let s = &mut subs[n];
        let next = a.label();
        a.ld_imm64(R1, best);
        a.jmp_reg(Cond::Ge, R9, R1, end);
        // A mask on in_port only (or none) leaves one rule that matters.
        if mine.len() <= e.inline_max || !s.words.iter().any(|&w| w != 0) {
            for &i in &mine {
                let miss = a.label();
                let k = crate::plan::arrival_key(&e.rules[i].key()).expect("kept above");
                for &w in s.words.iter().filter(|&&w| w != 0) {
                    a.ldx(Size::DW, R1, FP, key_off(w));
                    if s.mask.w[w] != u64::MAX {
                        a.ld_imm64(R2, s.mask.w[w]);
                        a.alu_reg(Alu::And, R1, R2);
                    }
                    a.ld_imm64(R2, k.value.w[w]);
                    a.jmp_reg(Cond::Ne, R1, R2, miss);
                }
                // Rules are best first: a match that does not beat the
                // best so far ends the subtable.
                a.ld_imm64(R1, score(&e.rules[i]));
                a.jmp_reg(Cond::Ge, R9, R1, next);
                a.mov(R9, R1);
                a.mov_imm(R7, e.rule_action[i] as i32);
                a.mov_imm(R8, i as i32);
                a.ja(next);
                a.bind(miss);
                if !s.words.iter().any(|&w| w != 0) {
                    // It matches every packet of this port: the rules
                    // after it never would (and the verifier refuses
                    // unreachable code).
                    break;
                }
            }
        } else {
            let t = table_of(s, e, tables);
            for (j, &w) in s.words.iter().enumerate() {
                a.ldx(Size::DW, R1, FP, key_off(w));
                if s.mask.w[w] != u64::MAX {
                    a.ld_imm64(R2, s.mask.w[w]);
                    a.alu_reg(Alu::And, R1, R2);
                }
                a.stx(Size::DW, FP, HASH_KEY + 8 * j as i16, R1);
            }
            a.ld_map(R1, MAP_TABLE0 + t as u32);
            a.mov(R2, FP);
            a.alu_imm(Alu::Add, R2, HASH_KEY as i32);
            a.call(Helper::MapLookupElem);
            a.jmp_imm(Cond::Eq, R0, 0, next);
            a.ldx(Size::DW, R1, R0, 0);
            a.jmp_reg(Cond::Ge, R9, R1, next);
            a.mov(R9, R1);
            a.ldx(Size::W, R7, R0, 8);
            a.ldx(Size::W, R8, R0, 12);
        }
        a.bind(next);
        launder(a);
    }
    a.bind(end);
    launder(a);
}

enum Ctr {
    Rule,
    Const(u32),
}

/// Adds the packet (r9 = its length) to a counter; clobbers r0-r5.
fn count(a: &mut Asm, c: Ctr) {
    match c {
        Ctr::Rule => a.stx(Size::W, FP, SCRATCH, R8),
        Ctr::Const(n) => a.st_imm(Size::W, FP, SCRATCH, n as i32),
    }
    let skip = a.label();
    a.ld_map(R1, MAP_COUNTERS);
    a.mov(R2, FP);
    a.alu_imm(Alu::Add, R2, SCRATCH as i32);
    a.call(Helper::MapLookupElem);
    a.jmp_imm(Cond::Eq, R0, 0, skip);
    a.ldx(Size::DW, R1, R0, 0);
    a.alu_imm(Alu::Add, R1, 1);
    a.stx(Size::DW, R0, 0, R1);
    a.ldx(Size::DW, R1, R0, 8);
    a.alu_reg(Alu::Add, R1, R9);
    a.stx(Size::DW, R0, 8, R1);
    a.bind(skip);
}

/// The dispatch on r7 (action id; r9 = 0 for no match) and each action.
fn emit_actions(a: &mut Asm, e: &Emit<'_>, up: Label) {
    let hit = a.label();
    if !e.finals.is_empty() {
        a.jmp_imm(Cond::Ne, R9, 0, hit);
    }
    // No rule: up while an OpenFlow 1.0-1.2 controller wants table
    // misses, else dropped (OpenFlow 1.3 without a table-miss entry).
    if e.miss_up {
        a.ja(up);
        if e.finals.is_empty() {
            return;
        }
        a.bind(hit);
        dispatch(a, e, 0, e.finals.len() as u32, up);
        return;
    }
    a.mov(R1, R6);
    a.call(Helper::XdpGetBuffLen);
    a.mov(R9, R0);
    count(a, Ctr::Const(e.counter_base + K_MISS));
    a.ret(XDP_DROP);
    if e.finals.is_empty() {
        return;
    }
    a.bind(hit);
    dispatch(a, e, 0, e.finals.len() as u32, up);
}

fn dispatch(a: &mut Asm, e: &Emit<'_>, lo: u32, hi: u32, up: Label) {
    if hi - lo == 1 {
        action(a, e, &e.finals[lo as usize], up);
        return;
    }
    let mid = lo + (hi - lo) / 2;
    let right = a.label();
    a.jmp_imm(Cond::Ge, R7, mid as i32, right);
    dispatch(a, e, lo, mid, up);
    a.bind(right);
    dispatch(a, e, mid, hi, up);
}

fn action(a: &mut Asm, e: &Emit<'_>, f: &Final, up: Label) {
    if let Final::Up(_) = f {
        a.ja(up);
        return;
    }
    a.mov(R1, R6);
    a.call(Helper::XdpGetBuffLen);
    a.mov(R9, R0);
    let base = e.counter_base;
    match f {
        Final::Drop => {
            count(a, Ctr::Rule);
            count(a, Ctr::Const(base + K_DROP));
            a.ret(XDP_DROP);
        }
        Final::Back { edits } => {
            edit(a, edits, up);
            count(a, Ctr::Rule);
            count(a, Ctr::Const(base + K_BACK));
            a.ret(XDP_TX);
        }
        Final::Redirect { edits, port } => {
            let slot = e.egress.iter().position(|p| p == port).unwrap_or(0) as u32;
            // The target first (a port without one goes up unchanged),
            // then the edits.
            a.ld_map(R1, MAP_DEV);
            a.mov_imm(R2, slot as i32);
            a.mov_imm(R3, 0);
            a.call(Helper::RedirectMap);
            a.jmp_imm(Cond::Ne, R0, XDP_REDIRECT, up);
            edit(a, edits, up);
            count(a, Ctr::Rule);
            count(a, Ctr::Const(base + K_REDIRECT + slot));
            a.ret(XDP_REDIRECT);
        }
        Final::Flood { edits, .. } => {
            a.ld_map(R1, MAP_FLOOD);
            a.mov_imm(R2, 0);
            a.mov_imm(R3, (BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS) as i32);
            a.call(Helper::RedirectMap);
            a.jmp_imm(Cond::Ne, R0, XDP_REDIRECT, up);
            edit(a, edits, up);
            count(a, Ctr::Rule);
            count(a, Ctr::Const(base + K_REDIRECT + e.egress.len() as u32));
            a.ret(XDP_REDIRECT);
        }
        Final::Up(_) => unreachable!("handled above"),
    }
}

/// Makes `edits` in order, as `pipeline::edit::set_field` does, with the
/// same incremental checksum updates (RFC 1624 eqn. 3). First, before any
/// write, each edit's header is checked from the flow key the parser wrote
/// ([`Edit::needs`]); a packet that lacks one goes up unchanged. The
/// bounds checks at each write cannot fail after that (the parser set the
/// flag only with the header whole in the frame): they are there for the
/// verifier.
///
/// The arithmetic is on the 16-bit words as loaded (little-endian on the
/// host): a one's complement sum of byte-swapped words is the byte-swapped
/// sum, so the checksum comes out in wire order without a swap.
fn edit(a: &mut Asm, edits: &[Edit], up: Label) {
    if edits.is_empty() {
        return;
    }
    for c in checks(edits) {
        match c {
            Check::Key { flags, proto, .. } => {
                a.ldx(Size::DW, R1, FP, key_off(6));
                a.alu_imm(Alu::And, R1, flags as i32);
                a.jmp_imm(Cond::Ne, R1, flags as i32, up);
                if let Some(p) = proto {
                    proto_is(a, R1, p, up, false);
                }
            }
            Check::Len(n) => {
                a.ldx(Size::W, R2, R6, 0);
                a.ldx(Size::W, R3, R6, 4);
                a.mov(R1, R2);
                a.alu_imm(Alu::Add, R1, n as i32);
                a.jmp_reg(Cond::Gt, R1, R3, up);
            }
        }
    }
    // How far a pop moved the headers the parser found (a push is never
    // followed by an edit of them: `plan`).
    let mut shift = 0i32;
    for e in edits {
        match *e {
            Edit::PushVlan(tpid) => {
                // The TCI of the outer tag, or 0, kept across the call.
                let notag = a.label();
                a.st_imm(Size::DW, FP, EDIT_SLOT, 0);
                a.ldx(Size::DW, R1, FP, key_off(6));
                a.alu_imm(Alu::And, R1, packet::flags::VLAN as i32);
                a.jmp_imm(Cond::Eq, R1, 0, notag);
                frame_at_least(a, 18, up);
                a.ldx(Size::H, R4, R2, 14);
                a.stx(Size::DW, FP, EDIT_SLOT, R4);
                a.bind(notag);
                a.mov(R1, R6);
                a.mov_imm(R2, -4);
                a.call(Helper::XdpAdjustHead);
                a.jmp_imm(Cond::Ne, R0, 0, up);
                frame_at_least(a, 18, up);
                // The addresses 4 bytes forward, then the tag after them.
                a.ldx(Size::DW, R1, R2, 4);
                a.stx(Size::DW, R2, 0, R1);
                a.ldx(Size::W, R1, R2, 12);
                a.stx(Size::W, R2, 8, R1);
                let t = tpid.to_be_bytes();
                a.st_imm(Size::H, R2, 12, raw16(t[0], t[1]) as i16 as i32);
                a.ldx(Size::DW, R4, FP, EDIT_SLOT);
                a.stx(Size::H, R2, 14, R4);
            }
            Edit::PopVlan => {
                frame_at_least(a, 16, up);
                a.ldx(Size::DW, R4, R2, 0);
                a.ldx(Size::W, R5, R2, 8);
                a.stx(Size::DW, R2, 4, R4);
                a.stx(Size::W, R2, 12, R5);
                a.mov(R1, R6);
                a.mov_imm(R2, 4);
                a.call(Helper::XdpAdjustHead);
                a.jmp_imm(Cond::Ne, R0, 0, up);
                shift -= 4;
            }
            Edit::VlanVid(_) | Edit::VlanPcp(_) => {
                // On the outer tag's TCI (wire order as loaded: the VID's
                // 12 bits are 0xff0f of the loaded word, the PCP's 0x00e0).
                let (keep, bits) = match *e {
                    Edit::VlanVid(v) => (0x00f0, (v & 0x0fff).swap_bytes()),
                    Edit::VlanPcp(p) => (0xff1f, ((p as u16 & 7) << 13).swap_bytes()),
                    _ => unreachable!(),
                };
                frame_at_least(a, 16, up);
                a.ldx(Size::H, R1, R2, 14);
                a.alu_imm(Alu::And, R1, keep);
                a.alu_imm(Alu::Or, R1, bits as i32);
                a.stx(Size::H, R2, 14, R1);
            }
            Edit::EthDst(m) | Edit::EthSrc(m) => {
                let at = if matches!(e, Edit::EthDst(_)) { 0 } else { 6 };
                a.ldx(Size::W, R2, R6, 0);
                a.ldx(Size::W, R3, R6, 4);
                a.mov(R1, R2);
                a.alu_imm(Alu::Add, R1, 14);
                a.jmp_reg(Cond::Gt, R1, R3, up);
                let b = m.to_be_bytes();
                a.st_imm(
                    Size::W,
                    R2,
                    at,
                    i32::from_le_bytes([b[2], b[3], b[4], b[5]]),
                );
                a.st_imm(
                    Size::H,
                    R2,
                    at + 4,
                    u16::from_le_bytes([b[6], b[7]]) as i16 as i32,
                );
            }
            Edit::Ipv4Src(v) | Edit::Ipv4Dst(v) => {
                let at = if matches!(e, Edit::Ipv4Src(_)) {
                    12
                } else {
                    16
                };
                let b = v.to_be_bytes();
                let (hi, lo) = (raw16(b[0], b[1]), raw16(b[2], b[3]));
                header_at(a, parse::L3_SLOT, shift, 20, up);
                // r4 = ~old_hi + ~old_lo + new_hi + new_lo.
                a.ldx(Size::H, R4, R1, at);
                a.alu_imm(Alu::Xor, R4, 0xffff);
                a.ldx(Size::H, R5, R1, at + 2);
                a.alu_imm(Alu::Xor, R5, 0xffff);
                a.alu_reg(Alu::Add, R4, R5);
                a.alu_imm(Alu::Add, R4, hi as i32 + lo as i32);
                a.st_imm(Size::H, R1, at, hi as i16 as i32);
                a.st_imm(Size::H, R1, at + 2, lo as i16 as i32);
                fix_sum(a, 10, false);
                // The transport checksum covers the addresses (TCP, UDP;
                // not ICMP), when the header is whole.
                let (tcp, udp, done) = (a.label(), a.label(), a.label());
                a.ldx(Size::DW, R1, FP, key_off(6));
                a.alu_imm(Alu::And, R1, packet::flags::L4 as i32);
                a.jmp_imm(Cond::Eq, R1, 0, done);
                proto_is(a, R1, packet::parse::ipproto::TCP, tcp, true);
                proto_is(a, R1, packet::parse::ipproto::UDP, udp, true);
                a.ja(done);
                a.bind(tcp);
                header_at(a, parse::L4_SLOT, shift, 20, up);
                fix_sum(a, 16, false);
                a.ja(done);
                a.bind(udp);
                header_at(a, parse::L4_SLOT, shift, 8, up);
                fix_sum(a, 6, true);
                a.bind(done);
            }
            Edit::TcpSrc(p) | Edit::TcpDst(p) | Edit::UdpSrc(p) | Edit::UdpDst(p) => {
                let udp = matches!(e, Edit::UdpSrc(_) | Edit::UdpDst(_));
                let at = if matches!(e, Edit::TcpSrc(_) | Edit::UdpSrc(_)) {
                    0
                } else {
                    2
                };
                let b = p.to_be_bytes();
                let new = raw16(b[0], b[1]);
                header_at(a, parse::L4_SLOT, shift, if udp { 8 } else { 20 }, up);
                a.ldx(Size::H, R4, R1, at);
                a.alu_imm(Alu::Xor, R4, 0xffff);
                a.alu_imm(Alu::Add, R4, new as i32);
                a.st_imm(Size::H, R1, at, new as i16 as i32);
                fix_sum(a, if udp { 6 } else { 16 }, udp);
            }
        }
    }
}

/// A 16-bit word in wire order as `ldx H` loads it.
fn raw16(b0: u8, b1: u8) -> u16 {
    u16::from_le_bytes([b0, b1])
}

/// `if (key.ip_proto == proto) == equal goto l`, clobbering `r`.
fn proto_is(a: &mut Asm, r: crate::asm::Reg, proto: u8, l: Label, equal: bool) {
    let s = packet::slots::IP_PROTO;
    a.ldx(Size::DW, r, FP, key_off(s.word as usize));
    a.alu_imm(Alu::Rsh, r, s.shift as i32);
    a.alu_imm(Alu::And, r, 0xff);
    a.jmp_imm(if equal { Cond::Eq } else { Cond::Ne }, r, proto as i32, l);
}

/// r2 = the frame, checked to hold `n` bytes (r1, r3 clobbered).
fn frame_at_least(a: &mut Asm, n: i32, up: Label) {
    a.ldx(Size::W, R2, R6, 0);
    a.ldx(Size::W, R3, R6, 4);
    a.mov(R1, R2);
    a.alu_imm(Alu::Add, R1, n);
    a.jmp_reg(Cond::Gt, R1, R3, up);
}

/// r1 = the header whose offset the parser left in stack slot `slot`,
/// moved by `shift` (a pop), checked to hold `n` bytes (r0, r2, r3
/// clobbered).
fn header_at(a: &mut Asm, slot: i16, shift: i32, n: i32, up: Label) {
    a.ldx(Size::W, R1, R6, 0);
    a.ldx(Size::W, R3, R6, 4);
    a.ldx(Size::DW, R0, FP, slot);
    if shift != 0 {
        a.alu_imm(Alu::Add, R0, shift);
    }
    a.alu_imm(Alu::And, R0, 0xff);
    a.alu_reg(Alu::Add, R1, R0);
    a.mov(R2, R1);
    a.alu_imm(Alu::Add, R2, n);
    a.jmp_reg(Cond::Gt, R2, R3, up);
}

/// Folds r4 (the sum of the changed words' complements and their new
/// values) into the checksum at r1 + `at`: c = ~(~c + r4). `udp`: a zero
/// checksum (none) stays zero, and a computed zero is sent as 0xffff.
/// Clobbers r0 and r5; r4 is kept for a second checksum.
fn fix_sum(a: &mut Asm, at: i16, udp: bool) {
    let skip = a.label();
    a.ldx(Size::H, R5, R1, at);
    if udp {
        a.jmp_imm(Cond::Eq, R5, 0, skip);
    }
    a.alu_imm(Alu::Xor, R5, 0xffff);
    a.alu_reg(Alu::Add, R5, R4);
    for _ in 0..3 {
        a.mov(R0, R5);
        a.alu_imm(Alu::Rsh, R0, 16);
        a.alu_imm(Alu::And, R5, 0xffff);
        a.alu_reg(Alu::Add, R5, R0);
    }
    a.alu_imm(Alu::Xor, R5, 0xffff);
    if udp {
        let store = a.label();
        a.jmp_imm(Cond::Ne, R5, 0, store);
        a.mov_imm(R5, 0xffff);
        a.bind(store);
    }
    a.stx(Size::H, R1, at, R5);
    a.bind(skip);
}

impl Compiled {
    /// Reads the counter map (`sums`: per entry, packets then bytes,
    /// summed over CPUs) as OpenFlow counts.
    pub fn fold(&self, sums: &[u64]) -> Fold {
        let at = |i: u32| Counts {
            packets: sums.get(2 * i as usize).copied().unwrap_or(0),
            bytes: sums.get(2 * i as usize + 1).copied().unwrap_or(0),
        };
        let mut f = Fold {
            rules: (0..self.rules.len() as u32).map(at).collect(),
            ..Fold::default()
        };
        let mut tx: HashMap<u32, Counts> = HashMap::new();
        for p in &self.programs {
            let b = p.counter_base;
            let mut rx = Counts::default();
            for k in [K_MISS, K_DROP, K_BACK] {
                rx.add(at(b + k));
            }
            f.matched += at(b + K_DROP).packets + at(b + K_BACK).packets;
            tx.entry(p.in_port).or_default().add(at(b + K_BACK));
            for (slot, &port) in self.egress.iter().enumerate() {
                let c = at(b + K_REDIRECT + slot as u32);
                rx.add(c);
                f.matched += c.packets;
                tx.entry(port).or_default().add(c);
            }
            // Flooded: one copy out of each flood port but the ingress.
            let c = at(b + K_REDIRECT + self.egress.len() as u32);
            rx.add(c);
            f.matched += c.packets;
            for &port in self.flood.iter().filter(|&&q| q != p.in_port) {
                tx.entry(port).or_default().add(c);
            }
            f.lookups += rx.packets;
            f.kernel.add(rx);
            f.up.add(at(b + K_UP));
            f.rx.push((p.in_port, rx));
        }
        let mut tx: Vec<(u32, Counts)> = tx.into_iter().collect();
        tx.sort_by_key(|t| t.0);
        f.tx = tx;
        f
    }
}
