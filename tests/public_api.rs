//! The public surface of both crates, pinned: every item, and each one's inherent methods,
//! variants, fields and associated constants, as rustdoc documents them. A change to the
//! surface fails here until `tests/public_api.txt` is refreshed on purpose
//! (`LIMITER_BLESS=1 LIMITER_THOROUGH=1 cargo test --test public_api`) — and then shows in
//! the review as a diff of that file.
//!
//! It builds the docs of both crates, so it runs in the long pass (`LIMITER_THOROUGH=1`,
//! which `.ci/run` sets, after building the same docs); the README's quick command skips it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const PINNED: &str = "tests/public_api.txt";

/// The target directory this test was built in (its temporary directory's parent).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .to_path_buf()
}

/// Every documented name of `krate`, as `crate::path::Item` and `crate::path::Item::member`.
fn surface(docs: &Path, krate: &str) -> BTreeSet<String> {
    let root = docs.join(krate);
    let all = std::fs::read_to_string(root.join("all.html")).expect("rustdoc's all.html");
    let mut names = BTreeSet::new();
    for (href, name) in links(&all) {
        let item = format!("{krate}::{name}");
        let page = std::fs::read_to_string(root.join(&href)).unwrap_or_default();
        names.extend(members(&page).into_iter().map(|m| format!("{item}::{m}")));
        names.insert(item);
    }
    names
}

/// The `(href, name)` of each item listed in `all.html`.
fn links(all: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = all;
    while let Some(at) = rest.find("<li><a href=\"") {
        rest = &rest[at + 13..];
        let Some(end) = rest.find('"') else { break };
        let href = rest[..end].to_string();
        let Some(open) = rest.find('>') else { break };
        let Some(close) = rest.find("</a>") else {
            break;
        };
        out.push((href, rest[open + 1..close].to_string()));
        rest = &rest[close..];
    }
    out
}

/// The members an item's page documents as its own: inherent methods (and those it has by
/// `Deref`), variants, fields, associated constants, a trait's methods. Not the trait
/// implementations, whose lists follow the standard library, not this project.
fn members(page: &str) -> BTreeSet<String> {
    let own = match page.find("id=\"trait-implementations\"") {
        Some(end) => &page[..end],
        None => page,
    };
    let mut out = BTreeSet::new();
    for prefix in [
        "id=\"method.",
        "id=\"tymethod.",
        "id=\"variant.",
        "id=\"structfield.",
        "id=\"associatedconstant.",
    ] {
        let mut rest = own;
        while let Some(at) = rest.find(prefix) {
            rest = &rest[at + prefix.len()..];
            let end = rest.find('"').unwrap_or(0);
            let name = &rest[..end];
            // rustdoc numbers a name seen twice on a page (`new-1`).
            let name = name.split('-').next().unwrap_or(name);
            out.insert(name.to_string());
        }
    }
    out
}

#[test]
fn the_public_api_is_the_pinned_one() {
    if std::env::var_os("LIMITER_THOROUGH").is_none() {
        eprintln!("skipped: the long pass (LIMITER_THOROUGH=1, set by .ci/run) pins the API");
        return;
    }
    let target = target_dir();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["doc", "--no-deps", "-p", "limiter", "-p", "limiter-core"])
        .args(["--all-features", "--target-dir"])
        .arg(&target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo doc runs");
    assert!(status.success(), "cargo doc failed");
    let docs = target.join("doc");
    let mut lines: Vec<String> = surface(&docs, "limiter").into_iter().collect();
    lines.extend(surface(&docs, "limiter_core"));
    let now = lines.join("\n") + "\n";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PINNED);
    if std::env::var_os("LIMITER_BLESS").is_some() {
        std::fs::write(&path, &now).unwrap();
        return;
    }
    let pinned = std::fs::read_to_string(&path).unwrap_or_default();
    let (was, is): (BTreeSet<&str>, BTreeSet<&str>) =
        (pinned.lines().collect(), now.lines().collect());
    let added: Vec<&&str> = is.difference(&was).collect();
    let removed: Vec<&&str> = was.difference(&is).collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "the public API changed: added {added:?}, removed {removed:?}. If on purpose, run \
         `LIMITER_BLESS=1 LIMITER_THOROUGH=1 cargo test --test public_api` and commit {PINNED} \
         (and say so in the CHANGELOG)"
    );
    println!("{} public names, as pinned", is.len());
}
