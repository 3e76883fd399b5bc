//! Shows the protocol crate at work: each flow given (in ovs-ofctl syntax) is
//! parsed, validated, encoded as an OpenFlow 1.3 FLOW_MOD, decoded back and
//! printed again. `cargo run -p ofp --example flow-codec -- 'tcp,tp_dst=80,actions=output:2'`

use bytes::Bytes;
use ofp::text::{format_flow_mod, parse_flow_mod};
use ofp::Message;

const DEFAULT_FLOWS: &[&str] = &[
    "table=0,priority=100,in_port=1,dl_type=0x0800,nw_dst=10.0.0.0/8,tcp,tp_dst=80,actions=set_field:02:00:00:00:00:01->eth_dst,output:2",
    "priority=10,arp,actions=flood",
    "priority=0,actions=controller",
    "ip,tcp_dst=80,actions=output:1",
    "tp_dst=80,actions=drop",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flows: Vec<&str> = if args.is_empty() {
        DEFAULT_FLOWS.to_vec()
    } else {
        args.iter().map(String::as_str).collect()
    };
    let mut failed = false;
    for text in flows {
        println!("flow:      {text}");
        let fm = match parse_flow_mod(text) {
            Ok(fm) => fm,
            Err(e) => {
                println!("  rejected: {e}\n");
                failed = true;
                continue;
            }
        };
        let msg = Message::FlowMod(fm);
        if let Err(e) = msg.validate() {
            println!("  a switch would answer {e}");
        }
        let wire = msg.to_bytes(1);
        let hex: String = wire.iter().map(|b| format!("{b:02x}")).collect();
        println!("  wire:    {} bytes {hex}", wire.len());
        match Message::decode(&Bytes::from(wire)) {
            Ok((_, Message::FlowMod(back))) => println!("  decoded: {}\n", format_flow_mod(&back)),
            Ok((_, other)) => println!("  decoded as {:?}?\n", other.msg_type()),
            Err(e) => println!("  decode failed: {e}\n"),
        }
    }
    if failed && !args.is_empty() {
        std::process::exit(1);
    }
}
