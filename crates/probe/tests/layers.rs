//! The probe's layers have one direction, and no two of its modules import each other.
//!
//! Each folder of `src/` is a layer (`lib.rs` draws them). A layer may name only the layers
//! listed for it in [`ALLOWED`]: bin/cli -> run -> report -> measure -> sys; analysis and
//! render see only the model and units. Unit-test modules (`#[cfg(test)] mod tests`) and
//! comments are not read: a test may build its fixture with any layer, and a doc link is
//! not a dependency. Run it alone with `cargo test -p latency-probe --test layers`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each layer and the layers it may name (besides itself).
const ALLOWED: [(&str, &[&str]); 10] = [
    ("units", &[]),
    ("model", &["units"]),
    ("sys", &["model", "units"]),
    ("measure", &["sys", "model", "units"]),
    ("analysis", &["model", "units"]),
    ("render", &["model", "units"]),
    ("report", &["measure", "analysis", "sys", "model", "units"]),
    (
        "run",
        &["report", "measure", "analysis", "render", "sys", "model", "units"],
    ),
    (
        "cli",
        &[
            "run", "report", "measure", "analysis", "render", "sys", "model", "units",
        ],
    ),
    (
        "bin",
        &[
            "cli", "run", "report", "measure", "analysis", "render", "sys", "model", "units",
        ],
    ),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's code without comments, string literals and its unit-test module.
fn code(text: &str) -> String {
    let body = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = String::with_capacity(body.len());
    for line in body.lines() {
        let l = line.trim_start();
        if l.starts_with("//") {
            continue;
        }
        let mut in_str = false;
        let mut prev = ' ';
        for c in line.chars() {
            if c == '"' && prev != '\\' {
                in_str = !in_str;
            } else if !in_str {
                out.push(c);
            }
            prev = if prev == '\\' && c == '\\' { ' ' } else { c };
        }
        out.push('\n');
    }
    out
}

/// `crate::a::b…` (or `latency_probe::a::b…` in a binary): the path segments after the root.
fn paths(code: &str, root: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let pat = format!("{root}::");
    let mut rest = code;
    while let Some(i) = rest.find(&pat) {
        let before = rest[..i].chars().last();
        rest = &rest[i + pat.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        // A group, `crate::{a, b::c}`: each member is a path of its own.
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(group.len(), |(i, _)| i);
            for member in group[..end].split(',') {
                let member = member.trim();
                let first = member.split("::").next().unwrap_or("").trim();
                if !first.is_empty() && first.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    found.push(member.split("::").map(|s| s.trim().to_owned()).collect());
                }
            }
            continue;
        }
        let mut segs = Vec::new();
        let mut s = rest;
        loop {
            let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
            if end == 0 {
                break;
            }
            segs.push(s[..end].to_owned());
            if !s[end..].starts_with("::") {
                break;
            }
            s = &s[end + 2..];
        }
        if !segs.is_empty() {
            found.push(segs);
        }
    }
    found
}

/// The layer of a file under `src/`, and its module name (`measure::floor`, `model`, …).
fn layer_of(rel: &Path) -> (String, String) {
    let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let stem = |s: &str| s.trim_end_matches(".rs").to_owned();
    let layer = stem(&parts[0]);
    let module = if parts.len() == 1 || parts.last().unwrap() == "mod.rs" {
        layer.clone()
    } else {
        format!("{layer}::{}", stem(parts.last().unwrap()))
    };
    (layer, module)
}

struct Source {
    layer: String,
    module: String,
    code: String,
}

fn sources() -> Vec<Source> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(src()).unwrap().to_owned();
            let (layer, module) = layer_of(&rel);
            (!matches!(layer.as_str(), "lib" | "test_support")).then(|| Source {
                layer,
                module,
                code: code(&std::fs::read_to_string(&p).unwrap()),
            })
        })
        .collect()
}

fn root_of(layer: &str) -> &'static str {
    if layer == "bin" {
        "latency_probe"
    } else {
        "crate"
    }
}

#[test]
fn no_layer_names_a_layer_above_it() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.into_iter().collect();
    let mut broken = BTreeSet::new();
    let sources = sources();
    for s in &sources {
        let ok = allowed
            .get(s.layer.as_str())
            .unwrap_or_else(|| panic!("src/{}: a folder that is no layer: add it to ALLOWED", s.layer));
        for p in paths(&s.code, root_of(&s.layer)) {
            let to = p[0].as_str();
            if to != s.layer && !ok.contains(&to) {
                broken.insert(format!("{} names {}", s.module, p.join("::")));
            }
        }
    }
    assert!(
        sources.len() > 30,
        "read {} files: is src/ where it was?",
        sources.len()
    );
    assert!(
        broken.is_empty(),
        "imports against the layering:\n  {}",
        Vec::from_iter(broken).join("\n  ")
    );
}

/// The modules a module names: `crate::layer::file` resolves to that file's module; the flat
/// model (`crate::model::Name`) and `super::Name` to the file that defines `Name`.
fn module_graph(sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<&str> = sources.iter().map(|s| s.module.as_str()).collect();
    let mut defined_in: BTreeMap<(String, String), String> = BTreeMap::new();
    for s in sources {
        for word in ["fn", "struct", "enum", "const", "static", "type", "trait"] {
            for (i, _) in s.code.match_indices(&format!("{word} ")) {
                let at_item =
                    s.code[..i].ends_with('\n') || s.code[..i].ends_with("pub ") || s.code[..i].ends_with(") ");
                if !at_item {
                    continue;
                }
                let rest = &s.code[i + word.len() + 1..];
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                defined_in.insert((s.layer.clone(), rest[..end].to_owned()), s.module.clone());
            }
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in sources {
        let edges = graph.entry(s.module.clone()).or_default();
        for p in paths(&s.code, root_of(&s.layer)) {
            let target = if p.len() >= 2 && modules.contains(format!("{}::{}", p[0], p[1]).as_str()) {
                Some(format!("{}::{}", p[0], p[1]))
            } else if p.len() >= 2 {
                defined_in
                    .get(&(p[0].clone(), p[1].clone()))
                    .cloned()
                    .or_else(|| modules.contains(p[0].as_str()).then(|| p[0].clone()))
            } else {
                modules.contains(p[0].as_str()).then(|| p[0].clone())
            };
            if let Some(t) = target.filter(|t| *t != s.module) {
                edges.insert(t);
            }
        }
        for p in paths(&s.code, "super") {
            if let Some(t) = defined_in
                .get(&(s.layer.clone(), p[0].clone()))
                .filter(|t| **t != s.module)
            {
                edges.insert(t.clone());
            }
        }
    }
    graph
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let l = t.low[w].min(t.low[v]);
                t.low.insert(v, l);
            } else if t.on.contains(w) {
                let l = t.index[w].min(t.low[v]);
                t.low.insert(v, l);
            }
        }
        if t.low[v] == t.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                scc.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                t.out.push(scc);
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_two_modules_import_each_other() {
    let graph = module_graph(&sources());
    assert!(
        graph.values().map(BTreeSet::len).sum::<usize>() > 50,
        "found too few imports to trust the check"
    );
    let found = cycles(&graph);
    assert!(found.is_empty(), "import cycles between modules: {found:?}");
}

#[test]
fn the_cycle_check_finds_a_planted_cycle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("run::a".into()).or_default().insert("run::b".into());
    g.entry("run::b".into()).or_default().insert("run::c".into());
    g.entry("run::c".into()).or_default().insert("run::a".into());
    g.entry("model".into()).or_default();
    assert_eq!(
        cycles(&g),
        vec![vec!["run::a".to_owned(), "run::b".into(), "run::c".into()]]
    );
}

#[test]
fn the_layer_check_reads_paths_in_code_but_not_in_comments_strings_or_tests() {
    let c = code(
        "use crate::run::x;\n// crate::cli::y\nlet s = \"crate::cli::z\";\n#[cfg(test)]\nmod tests {\n use crate::cli::w;\n}\n",
    );
    assert_eq!(paths(&c, "crate"), vec![vec!["run".to_owned(), "x".into()]]);
    let grouped = code("use crate::{cli, run::x};\n");
    assert_eq!(
        paths(&grouped, "crate"),
        vec![vec!["cli".to_owned()], vec!["run".to_owned(), "x".into()]]
    );
}
