//! Every mistake in `tests/ui/fail/` gets the words its `.stderr` pins, checked without a
//! compiler: each attribute of each handler there is expanded here, as rustc would expand
//! it (the outermost first, the marker last), and each `compile_error!` it writes must be one
//! of the file's errors. The default `cargo test` runs this in a second; trybuild, which
//! also checks where each error points and rustc's own errors, runs with `--ignored`
//! (`cargo test --test ui -- --ignored`, as `.ci/run` does).

use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Attribute, ImplItem, Item, ItemFn};

use crate::front::Front;
use crate::stack;

/// The mistakes only rustc reports (a type, a const's evaluation, a signature the attribute
/// leaves to the compiler): the attribute accepts them and writes no error of its own.
const RUSTC_ONLY: [&str; 11] = [
    "axum_async_key_not_send",
    "axum_count_function_signature",
    "axum_key_function_signature",
    "burst_const_refill",
    "cost_above_a_const_max",
    "cost_const_out_of_bounds",
    "count_function_signature",
    "key_function_signature",
    "max_const_too_large",
    "max_zero_const",
    "option_functions_signature",
];

fn fail_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/ui/fail")
}

#[test]
fn each_mistake_gets_the_words_its_stderr_pins() {
    let mut checked = 0;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(fail_dir())
        .expect("tests/ui/fail")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_stem().and_then(|s| s.to_str()).expect("a name");
        let source = std::fs::read_to_string(&path).expect("the program");
        let stderr =
            std::fs::read_to_string(path.with_extension("stderr")).expect("its .stderr file");
        let file = syn::parse_file(&source).expect("the program parses");
        // The attribute as the program imports it: the actix front end's, or axum's.
        let front = match source.contains("use limiter_axum::") {
            true => Front::Axum,
            false => Front::Actix,
        };
        let mut said = Vec::new();
        for item in file.items {
            match item {
                Item::Fn(function) => expand(function, front, &mut said),
                Item::Impl(block) => {
                    for item in block.items {
                        if let ImplItem::Fn(method) = item {
                            let function = ItemFn {
                                attrs: method.attrs,
                                vis: method.vis,
                                sig: method.sig,
                                block: Box::new(method.block),
                            };
                            expand(function, front, &mut said);
                        }
                    }
                }
                _ => {}
            }
        }
        for message in &said {
            assert!(
                stderr.contains(&format!("error: {message}\n")),
                "{name}.rs: the attribute says\n  {message}\nwhich {name}.stderr does not hold \
                 (TRYBUILD=overwrite cargo test --test ui -- --ignored refreshes it)"
            );
        }
        if RUSTC_ONLY.contains(&name) {
            continue;
        }
        assert!(
            !said.is_empty(),
            "{name}.rs: the attribute accepted every handler; if rustc alone reports this \
             mistake, name the file in RUSTC_ONLY"
        );
        checked += said.len();
    }
    println!("{checked} messages of the attribute checked against tests/ui/fail");
    assert!(checked > 50, "only {checked} messages found");
}

/// Expands `function`'s limiter attributes one after the other, as rustc does, and adds
/// the words of each `compile_error!` they write to `said`.
fn expand(mut function: ItemFn, front: Front, said: &mut Vec<String>) {
    loop {
        let Some(at) = function.attrs.iter().position(is_limiter_attribute) else {
            return;
        };
        let attribute = function.attrs.remove(at);
        let name = last_segment(attribute.path());
        let args = match attribute.meta {
            syn::Meta::List(list) => list.tokens,
            _ => TokenStream::new(),
        };
        let item = function.to_token_stream();
        let output = match name.as_str() {
            "rate_limit" => stack::rate_limit(args, item, front),
            "concurrency_limit" => stack::concurrency_limit(args, item, front),
            _ => stack::finish(args, item, front),
        };
        compile_errors(output.clone(), said);
        let Ok(file) = syn::parse2::<syn::File>(output) else {
            return;
        };
        let Some(next) = file.items.into_iter().find_map(|item| match item {
            Item::Fn(function) => Some(function),
            _ => None,
        }) else {
            return;
        };
        function = next;
    }
}

fn is_limiter_attribute(attribute: &Attribute) -> bool {
    matches!(
        last_segment(attribute.path()).as_str(),
        "rate_limit" | "concurrency_limit" | "rate_limit_stack"
    )
}

fn last_segment(path: &syn::Path) -> String {
    path.segments
        .last()
        .map(|segment| segment.ident.to_string())
        .unwrap_or_default()
}

/// The words of every `compile_error!("...")` in `tokens`.
fn compile_errors(tokens: TokenStream, said: &mut Vec<String>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Ident(ident) if ident == "compile_error" => {
                if let Some(TokenTree::Group(group)) = trees.get(i + 2) {
                    if let Ok(words) = syn::parse2::<syn::LitStr>(group.stream()) {
                        said.push(words.value());
                    }
                }
            }
            TokenTree::Group(group) => compile_errors(group.stream(), said),
            _ => {}
        }
    }
}
