//! Rules with Open vSwitch's Nicira actions and the XDP fast path: note and
//! sample (nothing, as sluice has no IPFIX collector) stay in the program;
//! a rule with any other of them goes up to the pipeline.

use fastpath::plan::{plan, Plan};
use fastpath::Up;
use ofp::text::parse_flow_mod;
use pipeline::{Config, Pipeline};

fn plan_of(flow: &str) -> Plan {
    let mut p = Pipeline::new(Config::default());
    p.flow_mod(&parse_flow_mod(flow).unwrap(), 0).unwrap();
    let rule = p.tables()[0].rules().next().unwrap().clone();
    plan(&rule)
}

#[test]
fn note_and_sample_run_in_xdp() {
    for f in [
        "actions=note:01.02,output:2",
        "actions=sample(probability=1),output:2",
    ] {
        assert!(matches!(plan_of(f), Plan::Run { .. }), "{f}");
    }
}

#[test]
fn the_other_nicira_actions_go_up() {
    for f in [
        "actions=exit",
        "actions=output:NXM_NX_REG0[]",
        "ip,actions=dec_ttl(1)",
        "actions=push:NXM_NX_REG0[],pop:NXM_NX_REG1[]",
        "actions=clone(output:2)",
        "actions=controller(reason=no_match)",
        "actions=multipath(eth_src,0,modulo_n,2,0,NXM_NX_REG0[0..1])",
        "actions=bundle(eth_src,0,hrw,ofport,members:1,2)",
        "actions=bundle_load(eth_src,0,hrw,ofport,NXM_NX_REG0[],members:1,2)",
    ] {
        assert!(
            matches!(plan_of(f), Plan::Up(Up::Action(_))),
            "{f}: {:?}",
            plan_of(f)
        );
    }
}
