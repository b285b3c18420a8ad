//! The docs' layout map (`docs/layout.md`) matches the tree: every path it names exists, and it
//! names every top-level module of each crate (each file and folder right under `src/`), every
//! test, bench, example and script file. A file added without a line in the map, or a map line
//! left behind by a move, fails here with the path to fix. Every dated page in `docs/results/`
//! has its row in `docs/README.md`'s index. And no source file holds more than
//! 700 lines of non-test code (the rest of the house rule, functions under 120 lines, is
//! clippy's `too_many_lines`, set in clippy.toml).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `` `path` `` in the map that looks like a path of the repository (has a `/`, or a
/// file extension), without a trailing `/`.
fn named(map: &str) -> BTreeSet<String> {
    map.split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .filter(|s| !s.contains(' ') && !s.starts_with('-') && !s.contains("::"))
        .filter(|s| s.contains('/') || Path::new(s).extension().is_some())
        .map(|s| s.trim_end_matches('/').to_owned())
        .collect()
}

/// Paths (relative to the root) of the entries of `dir` whose names pass `keep`.
fn entries(dir: &str, keep: impl Fn(&Path) -> bool) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(root().join(dir)) else {
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| keep(p))
        .map(|p| p.strip_prefix(root()).unwrap().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn rust_or_dir(p: &Path) -> bool {
    p.is_dir() || p.extension().is_some_and(|e| e == "rs")
}

/// What the map must name: each crate's top-level modules, and the test, bench, example and
/// script files.
fn required() -> Vec<String> {
    let mut v = Vec::new();
    for src in ["src", "crates/messaging/src", "crates/probe/src"] {
        v.extend(entries(src, rust_or_dir));
    }
    for dir in [
        "tests",
        "crates/messaging/tests",
        "crates/probe/tests",
        "examples",
        "crates/messaging/examples",
    ] {
        v.extend(entries(dir, |p| p.extension().is_some_and(|e| e == "rs")));
    }
    v.extend(entries("crates/probe/benches", |p| p.is_dir()));
    v.extend(entries("benches", rust_or_dir));
    v.extend(entries("scripts", |p| p.is_file()));
    v
}

#[test]
fn the_layout_map_names_what_exists_and_every_top_level_module() {
    let path = root().join("docs/layout.md");
    let map = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let named = named(&map);
    let missing: Vec<&String> = named.iter().filter(|p| !root().join(p).exists()).collect();
    assert!(
        missing.is_empty(),
        "docs/layout.md names paths that do not exist (moved or deleted? fix the map): {missing:?}"
    );
    let unnamed: Vec<String> = required().into_iter().filter(|p| !named.contains(p)).collect();
    assert!(
        unnamed.is_empty(),
        "docs/layout.md does not name these (add a line each, path in backticks): {unnamed:?}"
    );
}

#[test]
fn paths_in_backticks_are_read_and_other_code_is_not() {
    let n = named("`src/lib.rs` does x; `cargo test` and `a::b` and `crates/probe/src/run/` and `--json x.json`");
    assert_eq!(
        n.into_iter().collect::<Vec<_>>(),
        ["crates/probe/src/run", "src/lib.rs"]
    );
}

/// Every `.rs` file under `dir`, recursively (relative to the root).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Lines before a file's `#[cfg(test)]` module (all of them without one).
fn non_test_lines(text: &str) -> usize {
    text.lines().take_while(|l| !l.starts_with("#[cfg(test)]")).count()
}

#[test]
fn no_source_file_is_over_700_lines_of_non_test_code() {
    // Sources, benches and examples; test files (tests/, the fuzz corpus) are not held to it.
    let mut files = Vec::new();
    for dir in [
        "src",
        "crates/messaging/src",
        "crates/probe/src",
        "crates/probe/benches",
        "examples",
        "benches",
    ] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    let over: Vec<String> = files
        .iter()
        .filter_map(|p| {
            let n = non_test_lines(&std::fs::read_to_string(p).unwrap());
            (n > 700).then(|| format!("{} ({n} lines)", p.strip_prefix(root()).unwrap().display()))
        })
        .collect();
    assert!(over.is_empty(), "split these by job (docs/layout.md): {over:?}");
    assert_eq!(non_test_lines("a\nb\n#[cfg(test)]\nmod tests {}\n"), 2);
}

#[test]
fn every_dated_results_page_is_in_the_docs_index() {
    let index = std::fs::read_to_string(root().join("docs/README.md")).expect("docs/README.md");
    let missing: Vec<String> = entries("docs/results", |p| p.extension().is_some_and(|e| e == "md"))
        .into_iter()
        .map(|p| p.trim_start_matches("docs/").to_owned())
        .filter(|p| !index.contains(&format!("]({p})")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/README.md's results table misses (add a dated row for each): {missing:?}"
    );
}
