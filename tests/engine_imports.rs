//! The engine's files import one another without a cycle: a part's file
//! (`parts/batches/`, `parts/jobs.rs`, `parts/calls.rs` ...) may use the types of the
//! parts below it, never of one that uses it back. Names re-exported by `engine/mod.rs`
//! (`super::Batch`) count as imports of the file that defines them; `Engine` itself
//! (every orchestration file's `impl Engine`) does not. A part in `parts/` is a node as
//! a flow in `engine/` is (`parts/mod.rs`, which only declares the parts, is none). A
//! part kept in a module directory (`parts/batches/`) is its `mod.rs`; each of its other
//! files is a node too, and what it imports from other parts counts for its part.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Every `use super::…;` and `use crate::engine::…;` statement of `source`, as the paths
/// it names (`super::{a::B, C}` gives `a::B` and `C`).
fn super_imports(source: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for prefix in ["use super::", "use crate::engine::"] {
        paths.extend(imports_after(source, prefix));
    }
    paths
}

/// The paths of every `use` statement of `source` that starts with `prefix`.
fn imports_after(source: &str, prefix: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find(prefix) {
        let after = &rest[at + prefix.len()..];
        let end = after.find(';').unwrap_or(after.len());
        let list = after[..end].trim();
        let list = list.strip_prefix('{').and_then(|l| l.strip_suffix('}'));
        match list {
            Some(list) => paths.extend(list.split(',').map(|p| p.trim().to_owned())),
            None => paths.push(after[..end].trim().to_owned()),
        }
        rest = &after[end..];
    }
    paths.retain(|p| !p.is_empty() && p != "*");
    paths
}

/// The file each name that `mod.rs` brings in (`use jobs::{Jobs, Left};`,
/// `pub use groups::Group;`) comes from.
fn reexports(mod_rs: &str, files: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for line in mod_rs.lines() {
        let line = line.trim_start_matches("pub ").trim();
        let Some(path) = line.strip_prefix("use ").and_then(|l| l.strip_suffix(';')) else {
            continue;
        };
        let Some((file, items)) = path.split_once("::") else {
            continue;
        };
        if !files.contains(file) {
            continue;
        }
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            names.insert(item.trim().to_owned(), file.to_owned());
        }
    }
    names
}

/// A cycle of the import graph, if there is one (a depth-first search).
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        file: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|f| f == file) {
            let mut cycle = path[at..].to_vec();
            cycle.push(file.to_owned());
            return Some(cycle);
        }
        if done.contains(file) {
            return None;
        }
        path.push(file.to_owned());
        for next in edges.get(file).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(file.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|file| visit(file, edges, &mut Vec::new(), &mut done))
}

/// An engine source file: its name in the graph (its stem; a module directory's
/// `mod.rs` is named by the directory), and for a file of a module directory
/// (`batches/`, `pacer/`), that part and its files but `mod.rs` (where the `use super::…`
/// of a file other than `mod.rs` points).
struct Source {
    name: String,
    dir: Option<(String, BTreeSet<String>)>,
    text: String,
}

/// The `.rs` files of `dir` by stem, but a part's own unit tests (`tests.rs`, `_tests`
/// files), which see everything of their part.
fn rust_files(dir: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    for entry in fs::read_dir(dir).expect("an engine directory is readable") {
        let path = entry.expect("a directory entry").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if path.extension().is_some_and(|e| e == "rs")
            && name != "tests"
            && !name.ends_with("_tests")
        {
            let source = fs::read_to_string(&path).expect("an engine file is readable");
            files.insert(name.to_owned(), source);
        }
    }
    files
}

/// The engine's files: those of `src/engine/` and of `src/engine/parts/` (but
/// `parts/mod.rs`, which only declares the parts), those of their module directories
/// included.
fn engine_sources() -> Vec<Source> {
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
    let parts = engine.join("parts");
    let mut sources = Vec::new();
    for dir in [&engine, &parts] {
        let files = rust_files(dir)
            .into_iter()
            .filter(|(name, _)| *dir == engine || name != "mod");
        sources.extend(files.map(|(name, text)| Source {
            name,
            dir: None,
            text,
        }));
        for entry in fs::read_dir(dir).expect("an engine directory is readable") {
            let path = entry.expect("a directory entry").path();
            let part = path
                .file_name()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            if path == parts || !path.join("mod.rs").is_file() {
                continue;
            }
            let files = rust_files(&path);
            let siblings: BTreeSet<String> =
                files.keys().filter(|n| *n != "mod").cloned().collect();
            for (name, text) in files {
                sources.push(Source {
                    name: if name == "mod" { part.to_owned() } else { name },
                    dir: Some((part.to_owned(), siblings.clone())),
                    text,
                });
            }
        }
    }
    sources
}

/// Which file imports which. A file of a module directory is a node of its own, and
/// what it imports from other parts its part imports too.
fn engine_import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let sources = engine_sources();
    let mod_rs = sources.iter().find(|s| s.name == "mod" && s.dir.is_none());
    let mod_rs = &mod_rs.expect("src/engine/mod.rs is readable").text;
    let files: BTreeSet<String> = (sources.iter())
        .filter(|s| s.dir.as_ref().is_none_or(|(part, _)| *part == s.name))
        .map(|s| s.name.clone())
        .collect();
    let names = reexports(mod_rs, &files);
    let target = |head: &str| {
        if files.contains(head) {
            Some(head.to_owned())
        } else {
            names.get(head).cloned()
        }
    };
    let head = |path: &str| path.split("::").next().unwrap_or_default().to_owned();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in sources.iter().filter(|s| s.name != "mod") {
        // A part's `mod.rs` is in the engine as any file of it is: its `super` is the
        // engine.
        let nested = (source.dir.as_ref()).filter(|(part, _)| *part != source.name);
        let uses: Vec<Option<String>> = match nested {
            None => super_imports(&source.text)
                .iter()
                .map(|path| target(&head(path)))
                .collect(),
            // In a module directory's other files, `super` is the part: one of its
            // files, or what its `mod.rs` holds.
            Some((part, siblings)) => {
                let inside = imports_after(&source.text, "use super::").into_iter();
                let inside = inside.map(|path| match head(&path) {
                    file if siblings.contains(&file) => Some(file),
                    _ => Some(part.clone()),
                });
                let outside = imports_after(&source.text, "use crate::engine::").into_iter();
                inside
                    .chain(outside.map(|path| target(&head(&path))))
                    .collect()
            }
        };
        let uses: BTreeSet<String> = uses
            .into_iter()
            .flatten()
            .filter(|t| *t != source.name)
            .collect();
        if let Some((part, siblings)) = nested {
            let outside = uses.iter().filter(|t| *t != part && !siblings.contains(*t));
            edges
                .entry(part.clone())
                .or_default()
                .extend(outside.cloned());
        }
        edges.entry(source.name.clone()).or_default().extend(uses);
    }
    edges
}

#[test]
fn the_engine_files_import_one_another_without_a_cycle() {
    let edges = engine_import_graph();
    // The graph is read at all: the parts' files are there and import what they use.
    assert!(edges["batches"].contains("jobs"), "{edges:?}");
    assert!(edges["streams"].contains("calls"), "{edges:?}");
    assert!(edges["batch"].contains("jobs"), "{edges:?}");
    assert_eq!(find_cycle(&edges), None, "{edges:#?}");
}

#[test]
fn a_cycle_is_found_when_there_is_one() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let link = |a: &str, b: &str, edges: &mut BTreeMap<String, BTreeSet<String>>| {
        edges.entry(a.into()).or_default().insert(b.into());
    };
    link("calls", "streamed", &mut edges);
    link("streamed", "jobs", &mut edges);
    assert_eq!(find_cycle(&edges), None);
    link("jobs", "calls", &mut edges);
    let cycle = find_cycle(&edges).expect("calls -> streamed -> jobs -> calls");
    assert_eq!(cycle.first(), cycle.last());
    assert_eq!(cycle.len(), 4);
}

#[test]
fn imports_are_read_from_lists_and_reexports() {
    let source = "use super::batches::{Batch, State};\nuse super::{Engine, Job};\nuse super::calls::Running;\nuse crate::engine::jobs::Member;\n";
    let expected = [
        "batches::{Batch, State}",
        "Engine",
        "Job",
        "calls::Running",
        "jobs::Member",
    ];
    assert_eq!(super_imports(source), expected.map(String::from));
    let files: BTreeSet<String> = ["jobs", "groups"].map(String::from).into();
    let names = reexports(
        "use jobs::{Jobs, Left};\npub use groups::Group;\nuse crate::x::Y;\n",
        &files,
    );
    let pairs: Vec<(&str, &str)> = names
        .iter()
        .map(|(n, f)| (n.as_str(), f.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [("Group", "groups"), ("Jobs", "jobs"), ("Left", "jobs")]
    );
}
