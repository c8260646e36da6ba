//! The import graph of `crates/turno/src`, one node per file, and its
//! cycles.
//!
//! The runtime's modules form layers (ARCHITECTURE.md, "Module graph"): the
//! leaves (ids, time, sync, the queues and the verdicts), one knot of
//! mutually dependent modules, the turn's, and the schedulers and APIs
//! above it. A cycle anywhere else is an import that goes the wrong way:
//! this test fails on it and prints every cycle it finds.
//! `scripts/module-cycles.sh [SRC]` prints the graph and its cycles.
//!
//! The parser reads source text, not the compiler's output: it follows
//! `crate::`, `super::` and `self::` paths (in `use` lines and inline),
//! `use child::…` of a module's own children, and the crate root's
//! re-exports to the module that defines the item. Comments, string
//! literals and `#[cfg(test)]` modules are not imports of the runtime.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The one cycle the runtime keeps, and why (ARCHITECTURE.md, "Module
/// graph"): a slot owns its actor's mailbox and cell; the mailbox schedules
/// its own slot (through the scheduler the shared state holds, or the
/// thread's hand-off); the cell runs the actor's turns with a context,
/// whose sends go to addresses (which point at slots), whose asks make
/// reply addresses, and whose effects carry the slots of spawned children
/// back to the engine, which runs slots.
const THE_TURNS_KNOT: &[&str] = &[
    "actor",
    "addr",
    "ask",
    "cell",
    "context",
    "effects",
    "engine",
    "engine::run",
    "engine::slot",
    "engine::tree",
    "hand_off",
    "mailbox",
    "scheduler",
    "shared",
];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, by module path (`engine::slot`; `""` for
/// `lib.rs`).
fn modules(dir: &Path) -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files
        .into_iter()
        .map(|file| {
            let rel = file.strip_prefix(dir).expect("under src");
            let mut parts: Vec<String> = rel
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
                parts.pop();
            }
            (parts.join("::"), file)
        })
        .collect()
}

/// The text of a file without comments, string literals and its
/// `#[cfg(test)]` module.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if text[i..].starts_with("//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if text[i..].starts_with("/*") {
            i += text[i..].find("*/").map_or(bytes.len() - i, |end| end + 2);
        } else if bytes[i] == b'"' && (i == 0 || bytes[i - 1] != b'\'') {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            let c = text[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
        }
    }
    for test_mod in [
        "#[cfg(test)]\nmod ",
        "#[cfg(all(test, not(turno_loom)))]\nmod ",
    ] {
        if let Some(at) = out.find(test_mod) {
            out.truncate(at);
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths a `use` tree or an inline path starting at `text` names, each
/// appended to `prefix`; returns how much of `text` it read.
fn paths_at(text: &str, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    let mut at = 0;
    loop {
        let rest = &text[at..];
        let skipped = rest.len() - rest.trim_start().len();
        at += skipped;
        let rest = &text[at..];
        if rest.starts_with('{') {
            at += 1;
            loop {
                at += paths_at(&text[at..], &path, out);
                let rest = &text[at..];
                let trimmed = rest.trim_start();
                at += rest.len() - trimmed.len();
                if trimmed.starts_with(',') {
                    at += 1;
                    let rest = &text[at..];
                    let trimmed = rest.trim_start();
                    at += rest.len() - trimmed.len();
                }
                if text[at..].starts_with('}') || at >= text.len() {
                    return (at + 1).min(text.len());
                }
            }
        }
        let len = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if len == 0 {
            out.push(path);
            return at;
        }
        path.push(rest[..len].to_string());
        at += len;
        if text[at..].starts_with("::") {
            at += 2;
        } else {
            out.push(path);
            return at;
        }
    }
}

/// Where each item the crate root re-exports is defined (`Policy` →
/// `buffer`).
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(at) = stmt.find("pub use ") else {
            continue;
        };
        let mut paths = Vec::new();
        paths_at(&stmt[at + "pub use ".len()..], &[], &mut paths);
        for path in paths {
            let path = match path.first().map(String::as_str) {
                Some("crate") => &path[1..],
                _ => &path[..],
            };
            if let [module, .., item] = path {
                map.insert(item.clone(), module.clone());
            }
        }
    }
    map
}

/// The module graph of the source tree at `dir`.
fn graph(dir: &Path) -> Graph {
    let modules = modules(dir);
    let code: BTreeMap<&String, String> = modules
        .iter()
        .map(|(m, file)| {
            (
                m,
                code_of(&std::fs::read_to_string(file).expect("readable")),
            )
        })
        .collect();
    let reexports = root_reexports(&code[&String::new()]);
    let resolve = |path: &[String]| -> Option<String> {
        (1..=path.len()).rev().find_map(|n| {
            let candidate = path[..n].join("::");
            modules.contains_key(&candidate).then_some(candidate)
        })
    };
    let mut graph = Graph::new();
    for (module, text) in &code {
        if module.is_empty() {
            continue;
        }
        let me: Vec<String> = module.split("::").map(str::to_string).collect();
        let children: BTreeSet<&str> = modules
            .keys()
            .filter_map(|m| m.strip_prefix(&format!("{module}::")))
            .filter(|rest| !rest.contains("::"))
            .collect();
        // `super::` inside an inline module (`mod model { … }`) is the
        // file's own module.
        let inline_mod = text
            .match_indices("mod ")
            .find(|(at, _)| {
                let rest = &text[at + 4..];
                let name = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
                name > 0 && rest[name..].trim_start().starts_with('{')
            })
            .map_or(text.len(), |(at, _)| at);
        let mut named = Vec::new();
        for (at, _) in text.match_indices("::") {
            let start = text[..at]
                .rfind(|c: char| !is_ident(c))
                .map_or(0, |p| p + 1);
            let head = &text[start..at];
            let prefix: Vec<String> = match head {
                "crate" => vec![],
                "super" if at > inline_mod => me.clone(),
                "super" => me[..me.len() - 1].to_vec(),
                "self" => me.clone(),
                _ => {
                    let before = text[..start].trim_end();
                    let is_use = before.ends_with("use") || before.ends_with('{');
                    if is_use && children.contains(head) {
                        let mut p = me.clone();
                        p.push(head.to_string());
                        paths_at(&text[at + 2..], &p, &mut named);
                    }
                    continue;
                }
            };
            paths_at(&text[at + 2..], &prefix, &mut named);
        }
        let deps = graph.entry(module.to_string()).or_default();
        for path in named {
            let target = match resolve(&path) {
                Some(target) if !target.is_empty() => Some(target),
                _ => path.first().and_then(|item| reexports.get(item).cloned()),
            };
            if let Some(target) = target.filter(|t| t != *module) {
                deps.insert(target);
            }
        }
    }
    graph
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                loop {
                    let w = self.stack.pop().expect("v is on the stack");
                    self.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found.sort();
    walk.found
}

fn report(graph: &Graph, cycles: &[Vec<String>]) -> String {
    let mut out = String::from("module graph of crates/turno/src (file -> files it imports):\n");
    for (module, deps) in graph {
        let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
        out += &format!("  {module} -> {}\n", deps.join(", "));
    }
    out += &format!("cycles ({}):\n", cycles.len());
    for cycle in cycles {
        out += &format!("  {} modules: {}\n", cycle.len(), cycle.join(", "));
    }
    out
}

#[test]
fn the_only_cycle_is_the_turns_knot() {
    let graph = graph(&src_dir());
    let found = cycles(&graph);
    let expected = vec![THE_TURNS_KNOT
        .iter()
        .map(|m| m.to_string())
        .collect::<Vec<_>>()];
    assert_eq!(found, expected, "\n{}", report(&graph, &found));
}

/// Prints the graph and its cycles; `TURNO_MODULE_GRAPH_SRC` names another
/// source tree to read (an older checkout's `crates/turno/src`).
#[test]
fn print_the_module_graph() {
    let dir = std::env::var_os("TURNO_MODULE_GRAPH_SRC").map_or_else(src_dir, PathBuf::from);
    let graph = graph(&dir);
    let found = cycles(&graph);
    println!("{}", report(&graph, &found));
}

/// The check of the checker: an import that goes the wrong way (a leaf
/// that imports the mailbox) is found as a cycle.
#[test]
fn a_wrong_way_import_makes_a_cycle_the_check_finds() {
    let dir = std::env::temp_dir().join(format!("turno-module-graph-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("engine")).unwrap();
    let files = [
        (
            "lib.rs",
            "mod ids; mod mailbox; mod engine;\npub use ids::ActorId;\n",
        ),
        ("ids.rs", "pub struct ActorId;\n"),
        (
            "mailbox.rs",
            "use crate::ActorId; // resolved through the root\n",
        ),
        ("engine/mod.rs", "mod slot;\nuse slot::Slot;\n"),
        (
            "engine/slot.rs",
            "use crate::{ids::ActorId, mailbox};\npub struct Slot;\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let clean = graph(&dir);
    assert_eq!(clean["mailbox"], BTreeSet::from(["ids".to_string()]));
    assert_eq!(
        clean["engine"],
        BTreeSet::from(["engine::slot".to_string()])
    );
    assert!(cycles(&clean).is_empty(), "{}", report(&clean, &[]));

    std::fs::write(dir.join("ids.rs"), "use crate::mailbox::Mailbox;\n").unwrap();
    let wrong = graph(&dir);
    let found = cycles(&wrong);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(found, vec![vec!["ids".to_string(), "mailbox".to_string()]]);
}
