//! The daemon end to end with pcap ports (no root needed): frames replayed
//! from a capture go through the configured flows and land in captures.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};

fn tcp_frame(dst_port: u16) -> Vec<u8> {
    packet::wire::build::sample_tcp(dst_port, 0x02)
}

fn read_all(p: &Path) -> Vec<Vec<u8>> {
    let mut r = PcapReader::new(std::fs::File::open(p).unwrap()).unwrap();
    let mut v = Vec::new();
    while let Some(Ok(pkt)) = r.next_packet() {
        v.push(pkt.data.to_vec());
    }
    v
}

#[test]
fn flows_route_frames_between_pcap_ports() {
    let dir = std::env::temp_dir().join(format!("sluice-pcap-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.pcap");
    {
        let mut w = PcapWriter::new(std::fs::File::create(&input).unwrap()).unwrap();
        for i in 0..20u16 {
            let f = tcp_frame(if i % 2 == 0 { 80 } else { 22 });
            w.write_packet(&PcapPacket::new(
                Duration::from_millis(i as u64),
                f.len() as u32,
                &f,
            ))
            .unwrap();
        }
    }
    let (out2, out3) = (dir.join("out2.pcap"), dir.join("out3.pcap"));
    let cfg = dir.join("sluice.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"[bridge]
local_port = false
flows = [
  "priority=10,in_port=1,tcp,tp_dst=80,actions=set_field:02:00:00:00:00:99->eth_dst,output:2",
  "priority=5,in_port=1,actions=output:3",
]
[[port]]
name = "in"
ofport = 1
backend = "pcap"
pcap_in = "{}"
[[port]]
name = "web"
ofport = 2
backend = "pcap"
pcap_out = "{}"
[[port]]
name = "rest"
ofport = 3
backend = "pcap"
pcap_out = "{}"
"#,
            input.display(),
            out2.display(),
            out3.display()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--config", cfg.to_str().unwrap(), "--duration", "0.5"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let web = read_all(&out2);
    let rest = read_all(&out3);
    assert_eq!(web.len(), 10);
    assert_eq!(rest.len(), 10);
    assert!(web
        .iter()
        .all(|f| f[0..6] == [2, 0, 0, 0, 0, 0x99] && f[36..38] == [0, 80]));
    assert!(rest
        .iter()
        .all(|f| f[36..38] == [0, 22] && f[0..6] == [2, 0, 0, 0, 0, 2]));

    // A capture that does not exist: refused, naming the port.
    std::fs::remove_file(&input).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("port in (ofport 1)"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
