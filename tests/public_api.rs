//! The public surface of the four crates (the facade and its actix front end, the engine, the
//! key logic and answers every front end shares, the axum front end), pinned: every
//! documented item, and each one's inherent methods, variants, fields and associated
//! constants, as rustdoc documents them — the
//! project's own names only (not what a type has from `std` through `Deref`). The facade
//! lists the engine's items as re-exports, so each name is pinned once, at the path where it
//! is documented. A change to the surface fails here until `tests/public_api.txt` is
//! refreshed on purpose (`LIMITER_BLESS=1 cargo test --all-features --test public_api`) —
//! and then shows in the review as a diff of that file.
//!
//! It documents the crates with the features this test was built with: a name only some
//! feature brings is marked `[feature]` in the pin, and checked in a build with every
//! feature (`.ci/run`'s second pass).

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
        // The page's own table of contents (`#structs`), not an item.
        if href.starts_with('#') {
            continue;
        }
        let Some(open) = rest.find('>') else { break };
        let Some(close) = rest.find("</a>") else {
            break;
        };
        out.push((href, rest[open + 1..close].to_string()));
        rest = &rest[close..];
    }
    out
}

/// The members an item's page documents as its own: inherent methods, variants, fields,
/// associated constants, a trait's methods. Not what it has by `Deref` nor its trait
/// implementations, whose lists follow the standard library, not this project.
fn members(page: &str) -> BTreeSet<String> {
    let end = ["id=\"deref-methods", "id=\"trait-implementations\""]
        .iter()
        .filter_map(|section| page.find(section))
        .min()
        .unwrap_or(page.len());
    let own = &page[..end];
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

/// The features that change the surface, as this test was built.
const FEATURES: [(&str, bool); 3] = [
    ("redis", cfg!(feature = "redis")),
    ("redis-tls", cfg!(feature = "redis-tls")),
    ("metrics", cfg!(feature = "metrics")),
];

/// The names of the four crates documented with `features`.
fn documented(features: &[&str]) -> BTreeSet<String> {
    let target = target_dir();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "doc",
            "--no-deps",
            "-p",
            "limiter",
            "-p",
            "limiter-core",
            "-p",
            "limiter-http",
            "-p",
            "limiter-axum",
        ])
        .args(["--features", &features.join(",")])
        .arg("--target-dir")
        .arg(&target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo doc runs");
    assert!(status.success(), "cargo doc failed");
    let docs = target.join("doc");
    let mut names = surface(&docs, "limiter");
    names.extend(surface(&docs, "limiter_core"));
    names.extend(surface(&docs, "limiter_http"));
    names.extend(surface(&docs, "limiter_axum"));
    names
}

/// A pinned line's name and whether only a feature brings it.
fn parse(line: &str) -> (&str, bool) {
    match line.strip_suffix(" [feature]") {
        Some(name) => (name, true),
        None => (line, false),
    }
}

#[test]
fn the_public_api_is_the_pinned_one() {
    let on: Vec<&str> = FEATURES.iter().filter(|f| f.1).map(|f| f.0).collect();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PINNED);
    if std::env::var_os("LIMITER_BLESS").is_some() {
        assert_eq!(on.len(), FEATURES.len(), "bless with --all-features");
        let base = documented(&[]);
        let all = documented(&on);
        let lines: Vec<String> = all
            .iter()
            .map(|name| match base.contains(name) {
                true => name.clone(),
                false => format!("{name} [feature]"),
            })
            .collect();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        return;
    }
    if !on.is_empty() && on.len() < FEATURES.len() {
        println!("skipped: built with some features ({on:?}); the pin is checked with none or all");
        return;
    }
    let is = documented(&on);
    let pinned = std::fs::read_to_string(&path).unwrap_or_default();
    let was: BTreeSet<String> = pinned
        .lines()
        .map(parse)
        .filter(|(_, gated)| !on.is_empty() || !gated)
        .map(|(name, _)| name.to_string())
        .collect();
    let added: Vec<&String> = is.difference(&was).collect();
    let removed: Vec<&String> = was.difference(&is).collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "the public API changed: added {added:?}, removed {removed:?}. If on purpose, run \
         `LIMITER_BLESS=1 cargo test --all-features --test public_api` and commit {PINNED} \
         (and say so in the CHANGELOG)"
    );
    println!("{} public names (features: {on:?}), as pinned", is.len());
}
