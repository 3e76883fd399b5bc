//! eBPF instructions and a small assembler with forward labels.
//!
//! Only what the generated programs use: 64-bit ALU, byte swaps, loads and
//! stores, conditional jumps, helper calls and 64-bit immediates (map
//! references among them). Every jump goes to a [`Label`] that is bound
//! once; [`Asm::finish`] resolves them and refuses a program whose jumps do
//! not fit the instruction's 16-bit offset (the caller then compiles less
//! inline). Nothing here knows about OpenFlow.

use std::fmt;

/// A register: r0 (return value), r1-r5 (arguments, clobbered by calls),
/// r6-r9 (kept across calls), r10 (frame pointer, read-only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg(pub u8);

pub const R0: Reg = Reg(0);
pub const R1: Reg = Reg(1);
pub const R2: Reg = Reg(2);
pub const R3: Reg = Reg(3);
pub const R4: Reg = Reg(4);
pub const R5: Reg = Reg(5);
pub const R6: Reg = Reg(6);
pub const R7: Reg = Reg(7);
pub const R8: Reg = Reg(8);
pub const R9: Reg = Reg(9);
pub const FP: Reg = Reg(10);

/// One `struct bpf_insn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    /// The instruction as the kernel reads it (little-endian u64).
    pub fn raw(&self) -> u64 {
        (self.code as u64)
            | ((self.dst as u64 & 0xf) << 8)
            | ((self.src as u64 & 0xf) << 12)
            | ((self.off as u16 as u64) << 16)
            | ((self.imm as u32 as u64) << 32)
    }
}

// Instruction classes, sizes, modes and operations (linux/bpf_common.h, linux/bpf.h).
const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const ALU: u8 = 0x04;
const JMP: u8 = 0x05;
const ALU64: u8 = 0x07;
const IMM: u8 = 0x00;
const MEM: u8 = 0x60;
const K: u8 = 0x00;
const X: u8 = 0x08;
const END: u8 = 0xd0;
const TO_BE: u8 = 0x08;
const CALL: u8 = 0x80;
const EXIT: u8 = 0x90;
const PSEUDO_MAP_FD: u8 = 1;

/// Access width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    B = 0x10,
    H = 0x08,
    W = 0x00,
    DW = 0x18,
}

/// 64-bit ALU operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alu {
    Add = 0x00,
    Sub = 0x10,
    Or = 0x40,
    And = 0x50,
    Lsh = 0x60,
    Rsh = 0x70,
    Xor = 0xa0,
    Mov = 0xb0,
}

/// Jump conditions (unsigned comparisons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond {
    Eq = 0x10,
    Gt = 0x20,
    Ge = 0x30,
    Set = 0x40,
    Ne = 0x50,
    Lt = 0xa0,
    Le = 0xb0,
}

/// Kernel helpers the programs call (their numbers in `enum bpf_func_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Helper {
    MapLookupElem = 1,
    XdpAdjustHead = 44,
    RedirectMap = 51,
    XdpGetBuffLen = 188,
}

/// A jump target, bound once with [`Asm::bind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label(usize);

/// Why a program could not be assembled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AsmError {
    /// A jump spans more than 32 767 instructions.
    JumpTooFar { at: usize, to: usize },
    /// A label was jumped to but never bound (a compiler bug).
    Unbound,
}

impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AsmError::JumpTooFar { at, to } => write!(
                f,
                "a jump from instruction {at} to {to} does not fit 16 bits"
            ),
            AsmError::Unbound => write!(f, "a jump to a label never bound"),
        }
    }
}

/// An instruction stream under construction. Map references are recorded
/// as (instruction index, map number) so the loader can patch in fds.
#[derive(Default)]
pub struct Asm {
    insns: Vec<Insn>,
    labels: Vec<Option<usize>>,
    fixups: Vec<(usize, Label)>,
    maps: Vec<(usize, u32)>,
}

/// An assembled program: instructions and where they name maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assembled {
    pub insns: Vec<Insn>,
    /// (index of a 64-bit immediate load, map number the caller gave).
    pub map_refs: Vec<(usize, u32)>,
}

impl Assembled {
    /// The raw instructions with map number `n` replaced by `fd(n)`.
    pub fn link(&self, fd: impl Fn(u32) -> i32) -> Vec<u64> {
        let mut out: Vec<Insn> = self.insns.clone();
        for &(at, n) in &self.map_refs {
            out[at].imm = fd(n);
        }
        out.iter().map(Insn::raw).collect()
    }
}

impl Asm {
    pub fn new() -> Asm {
        Asm::default()
    }

    /// Instructions emitted so far.
    pub fn len(&self) -> usize {
        self.insns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.insns.is_empty()
    }

    fn emit(&mut self, code: u8, dst: Reg, src: Reg, off: i16, imm: i32) {
        self.insns.push(Insn {
            code,
            dst: dst.0,
            src: src.0,
            off,
            imm,
        });
    }

    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// Binds `l` to the next instruction.
    pub fn bind(&mut self, l: Label) {
        debug_assert!(self.labels[l.0].is_none(), "label bound twice");
        self.labels[l.0] = Some(self.insns.len());
    }

    /// `dst op= imm` (64-bit).
    pub fn alu_imm(&mut self, op: Alu, dst: Reg, imm: i32) {
        self.emit(ALU64 | op as u8 | K, dst, R0, 0, imm);
    }

    /// `dst op= src` (64-bit).
    pub fn alu_reg(&mut self, op: Alu, dst: Reg, src: Reg) {
        self.emit(ALU64 | op as u8 | X, dst, src, 0, 0);
    }

    pub fn mov_imm(&mut self, dst: Reg, imm: i32) {
        self.alu_imm(Alu::Mov, dst, imm);
    }

    pub fn mov(&mut self, dst: Reg, src: Reg) {
        self.alu_reg(Alu::Mov, dst, src);
    }

    /// Converts the low `bits` (16, 32, 64) of `dst` from network to host
    /// order, zeroing the bits above.
    pub fn be(&mut self, dst: Reg, bits: i32) {
        self.emit(ALU | END | TO_BE, dst, R0, 0, bits);
    }

    /// `dst = imm` for any 64-bit value (two instruction slots).
    pub fn ld_imm64(&mut self, dst: Reg, v: u64) {
        self.emit(LD | Size::DW as u8 | IMM, dst, R0, 0, v as u32 as i32);
        self.emit(0, R0, R0, 0, (v >> 32) as u32 as i32);
    }

    /// `dst = &map n` (patched by [`Assembled::link`]).
    pub fn ld_map(&mut self, dst: Reg, n: u32) {
        self.maps.push((self.insns.len(), n));
        self.emit(LD | Size::DW as u8 | IMM, dst, Reg(PSEUDO_MAP_FD), 0, 0);
        self.emit(0, R0, R0, 0, 0);
    }

    /// `dst = *(size *)(src + off)`.
    pub fn ldx(&mut self, size: Size, dst: Reg, src: Reg, off: i16) {
        self.emit(LDX | size as u8 | MEM, dst, src, off, 0);
    }

    /// `*(size *)(dst + off) = src`.
    pub fn stx(&mut self, size: Size, dst: Reg, off: i16, src: Reg) {
        self.emit(STX | size as u8 | MEM, dst, src, off, 0);
    }

    /// `*(size *)(dst + off) = imm`.
    pub fn st_imm(&mut self, size: Size, dst: Reg, off: i16, imm: i32) {
        self.emit(ST | size as u8 | MEM, dst, R0, off, imm);
    }

    /// `if dst cond imm goto l` (64-bit, unsigned).
    pub fn jmp_imm(&mut self, c: Cond, dst: Reg, imm: i32, l: Label) {
        self.fixups.push((self.insns.len(), l));
        self.emit(JMP | c as u8 | K, dst, R0, 0, imm);
    }

    /// `if dst cond src goto l` (64-bit, unsigned).
    pub fn jmp_reg(&mut self, c: Cond, dst: Reg, src: Reg, l: Label) {
        self.fixups.push((self.insns.len(), l));
        self.emit(JMP | c as u8 | X, dst, src, 0, 0);
    }

    /// `goto l`.
    pub fn ja(&mut self, l: Label) {
        self.fixups.push((self.insns.len(), l));
        self.emit(JMP, R0, R0, 0, 0);
    }

    pub fn call(&mut self, h: Helper) {
        self.emit(JMP | CALL, R0, R0, 0, h as i32);
    }

    pub fn exit(&mut self) {
        self.emit(JMP | EXIT, R0, R0, 0, 0);
    }

    /// `r0 = code; exit`.
    pub fn ret(&mut self, code: i32) {
        self.mov_imm(R0, code);
        self.exit();
    }

    /// Resolves the jumps.
    pub fn finish(mut self) -> Result<Assembled, AsmError> {
        for &(at, l) in &self.fixups {
            let to = self.labels[l.0].ok_or(AsmError::Unbound)?;
            let off = to as i64 - at as i64 - 1;
            let off = i16::try_from(off).map_err(|_| AsmError::JumpTooFar { at, to })?;
            self.insns[at].off = off;
        }
        Ok(Assembled {
            insns: self.insns,
            map_refs: self.maps,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_match_the_kernel_s() {
        // mov r0, 1 ; exit  (as clang emits them)
        let mut a = Asm::new();
        a.ret(1);
        let p = a.finish().unwrap();
        assert_eq!(p.insns[0].raw(), 0x0000_0001_0000_00b7);
        assert_eq!(p.insns[1].raw(), 0x95);
        // r2 = *(u32 *)(r1 + 4): code 0x61, dst 2, src 1, off 4
        let mut a = Asm::new();
        a.ldx(Size::W, R2, R1, 4);
        assert_eq!(a.finish().unwrap().insns[0].raw(), 0x0000_0000_0004_1261);
    }

    #[test]
    fn jumps_resolve_forward_and_map_refs_are_patched() {
        let mut a = Asm::new();
        let out = a.label();
        a.jmp_imm(Cond::Eq, R1, 7, out);
        a.ld_map(R1, 3);
        a.bind(out);
        a.ret(2);
        let p = a.finish().unwrap();
        assert_eq!(p.insns[0].off, 2, "skips the two slots of the map load");
        let raw = p.link(|n| 40 + n as i32);
        assert_eq!(raw[1] >> 32, 43);
        assert_eq!((raw[1] >> 12) & 0xf, 1, "BPF_PSEUDO_MAP_FD");
    }

    #[test]
    fn unbound_labels_are_refused() {
        let mut a = Asm::new();
        let l = a.label();
        a.ja(l);
        assert_eq!(a.finish().unwrap_err(), AsmError::Unbound);
    }
}
