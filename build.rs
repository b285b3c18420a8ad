//! Compiles `schema/*.capnp` into Rust under `OUT_DIR` (`latency.capnp` -> `latency_capnp.rs`,
//! included by `src/wire.rs` as `crate::wire::latency_capnp`). Reruns only when the schema
//! directory or `CAPNP` changes.
//!
//! Needs the Cap'n Proto compiler `capnp` (Debian: `apt-get install capnproto`); `CAPNP` may
//! name a binary that is not on `PATH`.

use std::path::PathBuf;
use std::process::Command;

const SCHEMA_DIR: &str = "schema";

fn main() {
    println!("cargo::rerun-if-changed={SCHEMA_DIR}");
    println!("cargo::rerun-if-changed={SCHEMA_DIR}/latency.capnp");
    println!("cargo::rerun-if-env-changed=CAPNP");

    let capnp = std::env::var_os("CAPNP").map_or_else(|| PathBuf::from("capnp"), PathBuf::from);
    if !Command::new(&capnp)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        println!(
            "cargo::error=the Cap'n Proto compiler `{}` was not found: install it with \
             `apt-get install capnproto` (or `make bootstrap`), or set CAPNP=/path/to/capnp",
            capnp.display()
        );
        return;
    }

    let mut schemas: Vec<PathBuf> = std::fs::read_dir(SCHEMA_DIR)
        .expect("schema/ is missing")
        .map(|entry| entry.expect("cannot list schema/").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "capnp"))
        .collect();
    schemas.sort();

    let mut command = capnpc::CompilerCommand::new();
    // The generated code names its own items by absolute path: `crate::wire::latency_capnp`.
    command
        .capnp_executable(&capnp)
        .src_prefix(SCHEMA_DIR)
        .default_parent_module(vec!["wire".into()]);
    for schema in &schemas {
        command.file(schema);
    }
    if let Err(error) = command.run() {
        // Exit non-zero so cargo also shows capnp's own diagnostics (file:line: error).
        println!("cargo::error=compiling {SCHEMA_DIR}/*.capnp failed: {error}");
        std::process::exit(1);
    }
}
