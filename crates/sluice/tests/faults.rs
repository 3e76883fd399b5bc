//! Faults on the daemon without root (pcap ports): a worker that dies
//! takes the daemon down loudly.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};

mod common;
use common::Daemon;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-faults-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_pcap(p: &Path, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::new(std::fs::File::create(p).unwrap()).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(&PcapPacket::new(
            Duration::from_micros(i as u64),
            f.len() as u32,
            f,
        ))
        .unwrap();
    }
}

fn read_pcap(p: &Path) -> Vec<Vec<u8>> {
    let Ok(f) = std::fs::File::open(p) else {
        return Vec::new();
    };
    let Ok(mut r) = PcapReader::new(f) else {
        return Vec::new();
    };
    let mut v = Vec::new();
    while let Some(Ok(pkt)) = r.next_packet() {
        v.push(pkt.data.to_vec());
    }
    v
}

/// A bridge with pcap port 1 (`in.pcap`) and port 2 (`out.pcap`) and the
/// given flows; returns the config's path.
fn two_pcap_ports(dir: &Path, flows: &[&str], rate: Option<u64>) -> PathBuf {
    let cfg = dir.join("sluice.toml");
    let flows: String = flows.iter().map(|f| format!("  \"{f}\",\n")).collect();
    let rate = rate.map_or(String::new(), |r| format!("pcap_rate = {r}\n"));
    std::fs::write(
        &cfg,
        format!(
            "[bridge]\nname = \"t\"\nlocal_port = false\nflows = [\n{flows}]\n\
             [[port]]\nname = \"in\"\nofport = 1\nbackend = \"pcap\"\npcap_in = \"{}\"\n{rate}\
             [[port]]\nname = \"out\"\nofport = 2\nbackend = \"pcap\"\npcap_out = \"{}\"\n",
            dir.join("in.pcap").display(),
            dir.join("out.pcap").display()
        ),
    )
    .unwrap();
    cfg
}

#[test]
fn a_worker_panic_stops_the_daemon_with_status_70_and_an_error_line() {
    let dir = temp_dir("panic");
    // Batches of 32 frames: the worker panics in its 5th, after it has
    // sent it.
    let frames: Vec<Vec<u8>> = (0..1000)
        .map(|_| packet::build::sample_tcp(80, 0x02))
        .collect();
    write_pcap(&dir.join("in.pcap"), &frames);
    let cfg = two_pcap_ports(&dir, &["priority=1,actions=output:2"], None);
    let t0 = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--config", cfg.to_str().unwrap(), "--duration", "30"])
        .arg("--run-dir")
        .arg(&dir)
        .env("SLUICE_FAULT", "worker-panic:5")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut d = Daemon {
        child,
        dir: dir.clone(),
    };
    // Wait for the exit with a bound (the daemon must not keep answering
    // with a dead worker).
    let status = loop {
        if let Some(s) = d.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the daemon still runs 10 s after its worker was made to panic"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(d.child.stderr.as_mut().unwrap(), &mut err).unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(d.child.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert_eq!(status.code(), Some(70), "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("ERROR") && l.contains("worker died"))
        .unwrap_or_else(|| panic!("no error line naming the worker: {err}"));
    assert!(line.contains("bridge=t"), "{line}");
    assert!(line.contains("worker=0"), "{line}");
    assert!(
        line.contains("injected fault (SLUICE_FAULT=worker-panic:5)"),
        "{line}"
    );
    assert!(line.contains("datapath/src/lib.rs"), "{line}");
    // What the worker had sent before it died was flushed, and the
    // counters were printed on the way out.
    assert_eq!(read_pcap(&dir.join("out.pcap")).len(), 5 * 32, "{out}");
    assert!(out.contains("bridge t"), "{out}");
}

#[test]
fn a_fault_injection_that_is_not_understood_refuses_to_start() {
    let dir = temp_dir("badfault");
    write_pcap(&dir.join("in.pcap"), &[]);
    let cfg = two_pcap_ports(&dir, &[], None);
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--config", cfg.to_str().unwrap(), "--duration", "5"])
        .arg("--run-dir")
        .arg(&dir)
        .env("SLUICE_FAULT", "worker-panic:soon")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SLUICE_FAULT=\"worker-panic:soon\""), "{err}");
}

#[test]
fn backend_pcap_with_a_command_line_port_is_a_config_error_not_a_panic() {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--backend", "pcap", "--port", "veth0", "--duration", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--port veth0"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
