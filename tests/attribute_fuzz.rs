//! Generated attribute inputs: each one either fails to compile with an error of the macro's
//! own, or compiles and serves requests without a panic — nothing the attribute accepts
//! fails at run time.
//!
//! Two layers. The macro's pipeline, compiled into this test, sees arbitrary token soup and
//! thousands of structured inputs (names, numbers at every bound, constant expressions,
//! unicode): it never panics, always emits parseable Rust, and refuses exactly what an
//! oracle built on `Policy` and the window grammar refuses. Then accepted ones become real
//! handlers that serve requests past their limit without a panic: twenty in a generated
//! module compiled with this test (`attribute_fuzz/sample.rs`), and, with `--ignored`, 150
//! in one generated program that trybuild compiles and runs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

#[path = "../limiter-macros/src/args.rs"]
mod args;
#[path = "../limiter-macros/src/ast.rs"]
mod ast;
#[path = "../limiter-macros/src/errors.rs"]
mod errors;
#[path = "../limiter-macros/src/expand.rs"]
mod expand;
#[path = "../limiter-macros/src/expand_axum.rs"]
mod expand_axum;
#[path = "../limiter-macros/src/front.rs"]
#[allow(dead_code)] // the fuzz expands the actix front end's handlers only
mod front;
#[path = "../limiter-macros/src/in_flight.rs"]
mod in_flight;
#[path = "../limiter-macros/src/input.rs"]
mod input;
#[path = "../limiter-macros/src/key.rs"]
mod key;
#[path = "../limiter-macros/src/penalty.rs"]
mod penalty;
#[path = "../limiter-macros/src/period.rs"]
mod period;
#[path = "../limiter-macros/src/share.rs"]
mod share;
#[path = "../limiter-macros/src/stack.rs"]
mod stack;
#[path = "../limiter-macros/src/valid.rs"]
mod valid;
#[path = "../limiter-macros/src/values.rs"]
mod values;

use std::fmt::Write as _;
use std::time::Duration;

use limiter::{Algorithm, Policy};
use proc_macro2::TokenStream;
use proptest::prelude::*;
use quote::ToTokens;

/// Whether to run the long version (`LIMITER_THOROUGH=1`, which `.ci/run` sets for its
/// second pass): ten times the inputs. The short one keeps the README's test command within
/// minutes on a small machine.
fn thorough() -> bool {
    std::env::var_os("LIMITER_THOROUGH").is_some()
}

/// Runs the whole pipeline on one `#[rate_limit]` over `item`: the attribute, then its
/// marker. Returns the code and whether it holds an error of the macro's.
fn expand(args: TokenStream, item: TokenStream) -> (String, bool) {
    expand_with(stack::rate_limit, args, item)
}

/// [`expand`] for the attribute `attribute` (`#[rate_limit]`, `#[concurrency_limit]`).
fn expand_with(
    attribute: fn(TokenStream, TokenStream, front::Front) -> TokenStream,
    args: TokenStream,
    item: TokenStream,
) -> (String, bool) {
    let output = attribute(args, item, front::Front::Actix);
    let mut function: syn::ItemFn = match syn::parse2(output.clone()) {
        Ok(function) => function,
        // The function and the errors: not a single function any more.
        Err(_) => {
            let code = output.to_string();
            return (code.clone(), code.contains("compile_error"));
        }
    };
    let marker = function
        .attrs
        .iter()
        .position(|a| a.path().segments.last().unwrap().ident == "rate_limit_stack")
        .expect("an accepted attribute leaves its marker");
    let marker = function.attrs.remove(marker);
    let syn::Meta::List(list) = marker.meta else {
        panic!("the marker is a list")
    };
    let code = stack::finish(
        list.tokens,
        function.into_token_stream(),
        front::Front::Actix,
    )
    .to_string();
    let failed = code.contains("compile_error");
    (code, failed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if thorough() { 2_000 } else { 200 }))]

    /// Token soup: whatever lexes, the macro answers with code or an error, never a panic.
    #[test]
    fn any_tokens_get_code_or_an_error(text in "[ -~]{0,60}") {
        let Ok(args) = text.parse::<TokenStream>() else { return Ok(()) };
        let item: TokenStream = "async fn handler() -> &'static str { \"ok\" }".parse().unwrap();
        let (code, _) = expand(args, item);
        prop_assert!(syn::parse_file(&code).is_ok(), "unparseable output for {:?}", text);
    }

    /// The same for `#[concurrency_limit]`.
    #[test]
    fn any_tokens_get_code_or_an_error_in_flight(text in "[ -~]{0,40}") {
        let Ok(args) = text.parse::<TokenStream>() else { return Ok(()) };
        let item: TokenStream = "async fn handler() -> &'static str { \"ok\" }".parse().unwrap();
        let (code, _) = expand_with(stack::concurrency_limit, args, item);
        prop_assert!(syn::parse_file(&code).is_ok(), "unparseable output for {:?}", text);
    }
}

// ---- structured inputs, and their oracle ----------------------------------------------------

/// A deterministic generator, so that the generated program is the same on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.next() as usize % items.len()]
    }
}

/// One generated attribute, with what it means.
struct Case {
    name: String,
    /// The maximum as written, and its value.
    max: (String, u64),
    per: &'static str,
    algorithm: Option<&'static str>,
    key: Option<&'static str>,
    scope: Option<String>,
    burst: Option<u64>,
}

impl Case {
    fn args(&self) -> String {
        let mut args = format!("{}, per = {:?}", self.max.0, self.per);
        if let Some(algorithm) = self.algorithm {
            let _ = write!(args, ", algorithm = {algorithm:?}");
        }
        if let Some(key) = self.key {
            let _ = write!(args, ", key = {key:?}");
        }
        if let Some(scope) = &self.scope {
            let _ = write!(args, ", scope = {scope:?}");
        }
        if let Some(burst) = self.burst {
            let _ = write!(args, ", burst = {burst}");
        }
        args
    }

    /// Whether the maximum is a literal, which the macro checks itself (a constant is
    /// checked when it is evaluated, by rustc).
    fn literal_max(&self) -> bool {
        self.max.0.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    }

    /// Whether the limit is valid, by `Policy` and the documented grammar.
    fn valid(&self) -> bool {
        let Ok(window_ms) = period::parse(self.per) else {
            return false;
        };
        let algorithm = match self.algorithm {
            None => Algorithm::SlidingWindow,
            Some(name) => match Algorithm::from_name(name) {
                Some(algorithm) => algorithm,
                None => return false,
            },
        };
        let key_ok = match self.key {
            None | Some("ip" | "user" | "global") => true,
            Some(key) => key.strip_prefix("header:").is_some_and(|name| {
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
            }),
        };
        let scope_ok = self.scope.as_deref().is_none_or(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
        });
        let Ok(max) = u32::try_from(self.max.1) else {
            return false;
        };
        let policy = Policy::for_algorithm(algorithm, max, Duration::from_millis(window_ms));
        let policy = match (policy, self.burst) {
            (Ok(p), Some(burst)) => u32::try_from(burst).ok().and_then(|b| p.with_burst(b).ok()),
            (Ok(p), None) => Some(p),
            (Err(_), _) => None,
        };
        key_ok && scope_ok && policy.is_some()
    }
}

const NAMES: [&str; 8] = [
    "login",
    "über",
    "登录",
    "r#match",
    "_hidden",
    "a1",
    "Ωmega",
    "handler_with_a_long_name",
];
const MAXES: [(&str, u64); 16] = [
    ("0", 0),
    ("1", 1),
    ("5", 5),
    ("65_535", 65_535),
    ("65536", 65_536),
    ("16_777_215", 16_777_215),
    ("16777216", 16_777_216),
    ("4294967295", 4_294_967_295),
    ("4294967296", 4_294_967_296),
    ("7446427", 7_446_427),
    ("7_446_428", 7_446_428),
    ("BASE", 3),
    ("BASE * 2", 6),
    ("u16::MAX as u32", 65_535),
    ("u32::MAX", 4_294_967_295),
    ("1 << 24", 16_777_216),
];
const PERS: [&str; 14] = [
    "1ms",
    "500ms",
    "1s",
    "1m",
    "1h30m",
    "1d",
    "7d",
    "8d",
    "0s",
    "",
    "1 m",
    "1min",
    "１m",
    "6d23h59m59s999ms",
];
const ALGORITHMS: [Option<&str>; 6] = [
    None,
    Some("sliding_window"),
    Some("fixed_window"),
    Some("sliding_window_counter"),
    Some("token_bucket"),
    Some("token-bucket"),
];
const KEYS: [Option<&str>; 7] = [
    None,
    Some("ip"),
    Some("global"),
    Some("header:x-api-key"),
    Some("header:ü"),
    Some("header:"),
    Some("ipaddress"),
];
const SCOPES: [Option<&str>; 5] = [None, Some("auth"), Some("ü-scope"), Some("a\"b"), Some("")];
const BURSTS: [Option<u64>; 6] = [None, None, Some(0), Some(1), Some(20), Some(4_294_967_295)];

fn cases(count: usize) -> Vec<Case> {
    let mut rng = Lcg(0x5eed);
    (0..count)
        .map(|i| {
            let max = rng.pick(&MAXES);
            Case {
                name: format!("{}_{i}", rng.pick(&NAMES).trim_start_matches("r#")),
                max: (max.0.to_string(), max.1),
                per: rng.pick(&PERS),
                algorithm: rng.pick(&ALGORITHMS),
                key: rng.pick(&KEYS),
                // Scopes are one budget each: a name per case, so that no two generated
                // handlers share one with different limits (a conflict `build` refuses).
                scope: rng.pick(&SCOPES).map(|s| {
                    if s.is_empty() {
                        String::new()
                    } else {
                        format!("{s}-{i}")
                    }
                }),
                burst: rng.pick(&BURSTS),
            }
        })
        .collect()
}

/// The macro refuses exactly what the oracle refuses (constant maxima aside: rustc checks
/// those), and never panics.
#[::std::prelude::v1::test]
fn the_macro_refuses_exactly_what_cannot_run() {
    let mut accepted = 0;
    for case in cases(if thorough() { 4_000 } else { 1_000 }) {
        let args: TokenStream = case.args().parse().unwrap();
        let item: TokenStream = format!("async fn {}() -> &'static str {{ \"ok\" }}", case.name)
            .parse()
            .unwrap();
        let (code, failed) = expand(args, item);
        assert!(syn::parse_file(&code).is_ok(), "{}", case.args());
        if case.literal_max() || failed {
            assert_eq!(
                !failed,
                case.valid(),
                "#[rate_limit({})]: {code}",
                case.args()
            );
        }
        accepted += usize::from(!failed);
    }
    assert!(
        accepted > 25,
        "only {accepted} accepted: the generator needs more valid ones"
    );
}

/// The accepted inputs among the first `count` cases, at most `take` of them, as the
/// handlers of one module with `serve_all`, which sends each past its limit and asserts that
/// none panics or answers anything but 200 or 429.
fn handlers_module(count: usize, take: usize) -> String {
    let valid: Vec<Case> = cases(count)
        .into_iter()
        .filter(Case::valid)
        .take(take)
        .collect();
    let mut module = String::from(
        "// Generated by tests/attribute_fuzz.rs: the first accepted inputs, compiled into its\n\
         // test. Refresh with `LIMITER_BLESS=1 cargo test --test attribute_fuzz`.\n\
         #![allow(non_snake_case, unused)]\n\
         use actix_web::{test, web, App};\n\
         use limiter::rate_limit;\n\
         const BASE: u32 = 3;\n\n",
    );
    for case in &valid {
        let _ = writeln!(
            module,
            "#[rate_limit({})]\nasync fn {}() -> &'static str {{ \"ok\" }}\n",
            case.args(),
            case.name
        );
    }
    module.push_str(
        "pub(crate) async fn serve_all() {\n\
         \x20   let limiter = limiter::Limiter::builder().build();\n\
         \x20   let app = test::init_service(App::new().app_data(limiter)\n",
    );
    for (i, case) in valid.iter().enumerate() {
        let _ = writeln!(
            module,
            "        .route(\"/{i}\", web::get().to({}))",
            case.name
        );
    }
    module.push_str("    ).await;\n");
    let _ = writeln!(
        module,
        "    for i in 0..{} {{\n\
         \x20       for _ in 0..8 {{\n\
         \x20           let req = test::TestRequest::get().uri(&format!(\"/{{i}}\"))\n\
         \x20               .peer_addr(\"203.0.113.7:4000\".parse().unwrap())\n\
         \x20               .insert_header((\"x-api-key\", \"k\")).to_request();\n\
         \x20           let status = test::call_service(&app, req).await.status().as_u16();\n\
         \x20           assert!(status == 200 || status == 429, \"/{{i}}: {{status}}\");\n\
         \x20       }}\n\
         \x20   }}\n\
         }}",
        valid.len()
    );
    module
}

/// The first twenty accepted inputs, generated into `tests/attribute_fuzz/sample.rs` and
/// compiled with this test: the README's test command compiles and serves them without a
/// second cargo.
// As generated: rustfmt would make it differ from what the generator makes.
#[rustfmt::skip]
#[path = "attribute_fuzz/sample.rs"]
mod sample;

const SAMPLE: &str = "tests/attribute_fuzz/sample.rs";

#[::std::prelude::v1::test]
fn the_sample_is_what_the_generator_makes() {
    let generated = handlers_module(1_000, 20);
    if std::env::var_os("LIMITER_BLESS").is_some() {
        std::fs::write(SAMPLE, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(SAMPLE).unwrap();
    assert!(
        committed == generated,
        "{SAMPLE} is not what the generator makes now: \
         LIMITER_BLESS=1 cargo test --test attribute_fuzz, then build again"
    );
}

#[actix_web::test]
async fn the_sample_compiles_and_serves() {
    sample::serve_all().await;
}

/// The accepted inputs, 150 of them, as handlers of one program that trybuild compiles with
/// a second cargo (minutes on a small machine) and runs: constant maxima included, each
/// handler serves past its limit without a panic. `.ci/run` runs it.
#[::std::prelude::v1::test]
#[ignore = "compiles 150 generated handlers with a second cargo: \
            LIMITER_THOROUGH=1 cargo test --test attribute_fuzz -- --ignored"]
fn every_accepted_input_compiles_and_serves() {
    let mut program = handlers_module(4_000, 150);
    program.push_str("\n#[actix_web::main]\nasync fn main() {\n    serve_all().await;\n}\n");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("attribute_fuzz");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("generated.rs");
    std::fs::write(&path, program).unwrap();
    let cases = trybuild::TestCases::new();
    cases.pass(&path);
}
