//! A trace's steps laid out as Open vSwitch's `ofproto/trace` lays them
//! out (`oftrace_node_print_details`).
//!
//! The steps are a tree written as indented lines: a table's line, its
//! actions one level deeper, what a resubmit or a recirculation looks up
//! at the level of the action that asked (as Open vSwitch appends the
//! table it reaches to the list the action is in), details (`-> ...`)
//! and warnings (`>> ...`) beside the line they are about. Open vSwitch
//! prints a node at `(level + more) * 4` spaces and its children at
//! `level + 2 * more`, where `more` says the node is not the last of its
//! list or is "terminal" (anything but a table): so the last table of a
//! chain of resubmits stays at its caller's level (a tail call does not
//! nest) and one that is not last is indented under the caller.

/// One step: its text, whether Open vSwitch counts its kind terminal,
/// and the steps under it.
struct Node {
    text: String,
    terminal: bool,
    subs: Vec<Node>,
}

/// The steps (`"    "` per level, as [`super::Trace::steps`] writes
/// them) laid out as Open vSwitch does.
pub fn ovs_layout(steps: &[String]) -> String {
    // (depth, text) from the indentation; a detail or warning never
    // deeper than the line before it (it is that line's sibling).
    let mut flat: Vec<(usize, Node)> = Vec::new();
    for line in steps {
        let body = line.trim_start_matches(' ');
        let mut depth = (line.len() - body.len()) / 4;
        let detail = body.starts_with("-> ") || body.starts_with(">> ");
        if detail {
            depth = depth.min(flat.last().map_or(0, |(d, _)| *d));
        }
        let terminal = !is_table(body);
        let text = if detail {
            format!(" {body}")
        } else {
            // A table's number is right-aligned in two columns.
            let lead = &line[depth * 4..line.len() - body.len()];
            format!("{lead}{body}")
        };
        flat.push((
            depth,
            Node {
                text,
                terminal,
                subs: Vec::new(),
            },
        ));
    }
    let tree = build(&mut flat.into_iter().peekable(), 0);
    let mut out = String::new();
    print(&tree, 0, &mut out);
    out
}

/// The nodes at `depth` and deeper, each with the deeper ones after it as
/// its children.
fn build(
    it: &mut std::iter::Peekable<impl Iterator<Item = (usize, Node)>>,
    depth: usize,
) -> Vec<Node> {
    let mut list = Vec::new();
    while let Some((d, _)) = it.peek() {
        if *d < depth {
            break;
        }
        let (d, mut n) = it.next().expect("peeked");
        n.subs = build(it, d + 1);
        list.push(n);
    }
    list
}

/// Whether a step is a table's (`" 3. ..."`, `"10. ..."`): the one kind
/// of step Open vSwitch does not count as terminal.
fn is_table(body: &str) -> bool {
    body.split_once(". ").is_some_and(|(n, _)| {
        !n.is_empty() && n.len() <= 3 && n.bytes().all(|b| b.is_ascii_digit())
    })
}

fn print(nodes: &[Node], level: usize, out: &mut String) {
    for (i, n) in nodes.iter().enumerate() {
        let more = usize::from(i + 1 < nodes.len() || n.terminal);
        out.push_str(&" ".repeat((level + more) * 4));
        out.push_str(&n.text);
        out.push('\n');
        print(&n.subs, level + 2 * more, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_resubmits_stay_and_others_nest_as_open_vswitch_prints_them() {
        // The tutorial's table 3 (Documentation/tutorials/ovs-advanced.rst).
        let sib: Vec<String> = [
            " 0. priority 0",
            "    resubmit(,1)",
            "     1. in_port=1, priority 99",
            "        learn(table=10)",
            "         -> table=10 priority=32768 actions=drop",
            "        resubmit(,3)",
            "         3. priority 50",
            "            resubmit(,10)",
            "            10. vlan_tci=0x0014/0x0fff, priority 32768",
            "                load:0x1->NXM_NX_REG0[0..15]",
            "            resubmit(,4)",
            "             4. No match.",
            "                drop",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            ovs_layout(&sib),
            [
                " 0. priority 0",
                "    resubmit(,1)",
                " 1. in_port=1, priority 99",
                "    learn(table=10)",
                "     -> table=10 priority=32768 actions=drop",
                "    resubmit(,3)",
                " 3. priority 50",
                "    resubmit(,10)",
                "    10. vlan_tci=0x0014/0x0fff, priority 32768",
                "            load:0x1->NXM_NX_REG0[0..15]",
                "    resubmit(,4)",
                " 4. No match.",
                "    drop",
                ""
            ]
            .join("\n")
        );
    }
}
