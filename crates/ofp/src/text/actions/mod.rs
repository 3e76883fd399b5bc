//! Actions and instructions in ovs-ofctl text.
//!
//! Instructions are written the ovs-ofctl way, as one list: `meter:N`, plain
//! actions (the apply-actions instruction), `clear_actions`,
//! `write_actions(...)`, `write_metadata:V[/M]`, `goto_table:N`. They are
//! printed in that order, which is also the order the spec executes them,
//! and read in that order only, as ovs-ofctl reads them.
//!
//! Reading is `parse.rs`, writing `format.rs`; names of ports and tables
//! are `super::names`.

mod format;
mod parse;

pub(crate) use format::format_subfield;
pub use format::{
    format_action, format_action_named, format_actions, format_actions_named, format_instructions,
    format_instructions_named,
};
pub use parse::{parse_action, parse_actions, parse_instructions};
pub(crate) use parse::{parse_actions_ctx, parse_instructions_ctx, parse_subfield, Ctx};
