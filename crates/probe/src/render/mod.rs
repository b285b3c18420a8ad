//! Every output format of a report: text, JSON, `.hgrm`, `.hlog`, CSV, SVG, and the `--out`
//! directory that holds them.
//!
//! Names only the model and units.

pub mod counters;
pub mod files;
pub mod jitter;
pub mod out_dir;
pub mod output;
pub mod runs;
pub mod text;
