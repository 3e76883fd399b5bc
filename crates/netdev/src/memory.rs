//! A port made of two queues in memory: frames pushed in are received,
//! frames sent are collected. For tests and benchmarks.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex};

use crate::{Batch, Port};

/// The test's end of a [`MemoryPort`].
#[derive(Clone, Default)]
pub struct Wire {
    inbound: Arc<Mutex<VecDeque<Vec<u8>>>>,
    outbound: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Wire {
    /// Queues a frame for the port to receive.
    pub fn inject(&self, frame: &[u8]) {
        self.inbound
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(frame.to_vec());
    }

    /// Takes every frame the port sent.
    pub fn take_sent(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.outbound.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// An in-memory port.
pub struct MemoryPort {
    name: String,
    wire: Wire,
}

impl MemoryPort {
    /// A port and the test's end of it.
    pub fn new(name: &str) -> (MemoryPort, Wire) {
        let wire = Wire::default();
        (
            MemoryPort {
                name: name.to_string(),
                wire: wire.clone(),
            },
            wire,
        )
    }
}

impl Port for MemoryPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn recv(&mut self, batch: &mut Batch) -> io::Result<usize> {
        let mut q = self.wire.inbound.lock().unwrap_or_else(|e| e.into_inner());
        let (bufs, lens) = batch.slots();
        let mut n = 0;
        while n < bufs.len() {
            let Some(f) = q.pop_front() else { break };
            let len = f.len().min(bufs[n].len());
            bufs[n][..len].copy_from_slice(&f[..len]);
            lens[n] = len;
            n += 1;
        }
        batch.set_len(n);
        Ok(n)
    }

    fn send(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        let mut out = self.wire.outbound.lock().unwrap_or_else(|e| e.into_inner());
        out.extend(frames.iter().map(|f| f.to_vec()));
        Ok(frames.len())
    }
}
