//! The answers' cases: the RateLimit fields, the 429's and the failures' fields, each
//! written onto a front end's header map and read back as bytes.

use std::borrow::Cow;
use std::time::Duration;

use limiter_core::{Decision, Policy};

use crate::{
    append_members, complete_failure, complete_rejection, concurrency_refused, problem_fields,
    Declared, Field, FieldMap, HeaderOptions, Member, RateLimitFields, Write,
};

const IETF: HeaderOptions = HeaderOptions {
    ietf: true,
    legacy: false,
};
const LEGACY: HeaderOptions = HeaderOptions {
    ietf: false,
    legacy: true,
};

/// What one case leaves in the map: each field it expects, and its bytes (`None`: absent).
type Expected<'a> = &'a [(Field, Option<&'a str>)];

/// Runs every case on a fresh map of the front end's type, which `fresh` makes empty;
/// panics, naming the case, at the first field whose bytes are not the ones expected.
pub fn run_answers<M: FieldMap>(mut fresh: impl FnMut() -> M) {
    let allowed = Decision::allow(5, 4, Duration::from_secs(60));
    let rejected = Decision::reject(5, Duration::from_millis(41_200));
    let mut case = |name: &str, write: &dyn Fn(&mut M), expected: Expected<'_>| {
        let mut map = fresh();
        write(&mut map);
        for (field, bytes) in expected {
            // The bytes themselves: a front end that re-encoded a value would pass a
            // comparison of text.
            let found = map.get(*field).map(|v| M::bytes_of(v).to_vec());
            let expected = bytes.map(|b| b.as_bytes().to_vec());
            assert!(
                found == expected,
                "{name}: {field:?} is {:?}, expected {:?}",
                found.as_deref().map(String::from_utf8_lossy),
                expected.as_deref().map(String::from_utf8_lossy),
            );
        }
    };
    let policy = || M::value_static(r#""login";q=5;w=60"#);
    let prefixes: Vec<Box<str>> = vec![r#""login";r="#.into()];
    let one = |map: &mut M, fields: &RateLimitFields, options, write| {
        let policy = policy();
        let declared = Declared {
            policy: &policy,
            prefixes: &prefixes,
        };
        fields.apply(map, declared, options, write);
    };
    case(
        "one limit, the IETF fields",
        &|map| one(map, &RateLimitFields::one(allowed), IETF, Write::Replace),
        &[
            (Field::RateLimitPolicy, Some(r#""login";q=5;w=60"#)),
            (Field::RateLimit, Some(r#""login";r=4;t=60"#)),
            (Field::Limit, None),
            (Field::DryRun, None),
        ],
    );
    case(
        "one limit, the legacy fields",
        &|map| one(map, &RateLimitFields::one(allowed), LEGACY, Write::Replace),
        &[
            (Field::RateLimit, None),
            (Field::Limit, Some("5")),
            (Field::Remaining, Some("4")),
            (Field::Reset, Some("60")),
        ],
    );
    case(
        "a rejection's fields",
        &|map| one(map, &RateLimitFields::one(rejected), IETF, Write::Replace),
        &[(Field::RateLimit, Some(r#""login";r=0;t=42"#))],
    );
    let members = || {
        let tier = Policy::new(100, Duration::from_secs(3_600)).expect("a policy");
        let burst = Policy::new(2, Duration::from_millis(1_500)).expect("a policy");
        vec![
            Member {
                name: Cow::Borrowed("tier"),
                policy: tier,
            },
            Member {
                name: Cow::Borrowed("burst"),
                policy: burst,
            },
        ]
    };
    let two = || {
        let decisions = vec![
            Decision::allow(100, 7_123, Duration::from_secs(3_600)),
            Decision::allow(2, 1, Duration::from_millis(1_500)),
        ];
        RateLimitFields::of_members(decisions, members())
    };
    case(
        "named members",
        &|map| one(map, &two(), IETF, Write::Replace),
        &[
            (
                Field::RateLimitPolicy,
                Some(r#""tier";q=100;w=3600, "burst";q=2;w=2"#),
            ),
            (
                Field::RateLimit,
                Some(r#""tier";r=7123;t=3600, "burst";r=1;t=2"#),
            ),
        ],
    );
    case(
        "the legacy fields name the tightest",
        &|map| one(map, &two(), LEGACY, Write::Replace),
        &[
            (Field::Limit, Some("2")),
            (Field::Remaining, Some("1")),
            (Field::Reset, Some("2")),
        ],
    );
    case(
        "limits let through",
        &|map| {
            let mut fields = RateLimitFields::one(allowed);
            fields.let_through(vec![Cow::Borrowed("login"), Cow::Borrowed("%C3%BCber")]);
            one(map, &fields, IETF, Write::Replace);
        },
        &[(Field::DryRun, Some(r#""login", "%C3%BCber""#))],
    );
    case(
        "given back",
        &|map| {
            let mut fields = RateLimitFields::one(allowed);
            fields.give_back(0, 3);
            one(map, &fields, IETF, Write::Replace);
        },
        &[(Field::RateLimit, Some(r#""login";r=5;t=60"#))],
    );
    case(
        "checked inside the handler",
        &|map| {
            let mut fields = RateLimitFields::one(allowed);
            let checked = Member {
                name: Cow::Borrowed("user"),
                policy: Policy::new(3, Duration::from_secs(10)).expect("a policy"),
            };
            let decision = Decision::allow(3, 2, Duration::from_secs(10));
            let declared = || {
                let login = Policy::new(5, Duration::from_secs(60)).expect("a policy");
                vec![Member {
                    name: Cow::Borrowed("login"),
                    policy: login,
                }]
            };
            fields.add_checked(vec![(checked, decision)], Vec::new(), declared);
            one(map, &fields, IETF, Write::Replace);
        },
        &[
            (
                Field::RateLimitPolicy,
                Some(r#""login";q=5;w=60, "user";q=3;w=10"#),
            ),
            (
                Field::RateLimit,
                Some(r#""login";r=4;t=60, "user";r=2;t=10"#),
            ),
        ],
    );
    case(
        "a middleware's go before the handler's",
        &|map| {
            map.insert(Field::RateLimit, M::value_static(r#""inner";r=1;t=1"#));
            map.insert(Field::Limit, M::value_static("9"));
            let both = HeaderOptions {
                ietf: true,
                legacy: true,
            };
            one(map, &RateLimitFields::one(allowed), both, Write::Prepend);
        },
        &[
            (
                Field::RateLimit,
                Some(r#""login";r=4;t=60, "inner";r=1;t=1"#),
            ),
            (Field::Limit, Some("9")),
            (Field::Remaining, Some("4")),
        ],
    );
    case(
        "a middleware's dry run and policy go before the handler's",
        &|map| {
            map.insert(
                Field::RateLimitPolicy,
                M::value_static(r#""inner";q=1;w=1"#),
            );
            map.insert(Field::DryRun, M::value_static(r#""inner""#));
            let mut fields = RateLimitFields::one(allowed);
            fields.let_through(vec![Cow::Borrowed("login")]);
            one(map, &fields, IETF, Write::Prepend);
        },
        &[
            (
                Field::RateLimitPolicy,
                Some(r#""login";q=5;w=60, "inner";q=1;w=1"#),
            ),
            (Field::DryRun, Some(r#""login", "inner""#)),
        ],
    );
    case(
        "a custom rejection's own legacy fields stay",
        &|map| {
            map.insert(Field::Limit, M::value_static("9"));
            one(
                map,
                &RateLimitFields::one(rejected),
                LEGACY,
                Write::KeepExisting,
            );
        },
        &[
            (Field::Limit, Some("9")),
            (Field::Remaining, Some("0")),
            (Field::Reset, Some("42")),
        ],
    );
    case(
        "legacy numbers of several digits",
        &|map| {
            let big = Decision::allow(100_000, 99_999, Duration::from_secs(86_400));
            one(map, &RateLimitFields::one(big), LEGACY, Write::Replace);
        },
        &[
            (Field::Limit, Some("100000")),
            (Field::Remaining, Some("99999")),
            (Field::Reset, Some("86400")),
        ],
    );
    case(
        "a custom rejection's own fields stay",
        &|map| {
            map.insert(Field::RateLimitPolicy, M::value_static("theirs"));
            one(
                map,
                &RateLimitFields::one(rejected),
                IETF,
                Write::KeepExisting,
            );
        },
        &[
            (Field::RateLimitPolicy, Some("theirs")),
            (Field::RateLimit, Some(r#""login";r=0;t=42"#)),
        ],
    );
    case(
        "undecided: no RateLimit",
        &|map| one(map, &RateLimitFields::undecided(), IETF, Write::Replace),
        &[(Field::RateLimitPolicy, None), (Field::RateLimit, None)],
    );
    case(
        "exempt: nothing",
        &|map| one(map, &RateLimitFields::none(), IETF, Write::Replace),
        &[(Field::RateLimitPolicy, None), (Field::RateLimit, None)],
    );
    case(
        "the 429's fields",
        &|map| problem_fields(map, Some(42)),
        &[
            (Field::ContentType, Some("application/problem+json")),
            (Field::RetryAfter, Some("42")),
            (Field::CacheControl, Some("no-store")),
        ],
    );
    for n in [3_600, 3_600, 86_400] {
        case(
            "a long Retry-After, made or kept",
            &|map| problem_fields(map, Some(n)),
            &[(Field::RetryAfter, Some(&n.to_string()))],
        );
    }
    case(
        "never admitted: no Retry-After",
        &|map| problem_fields(map, None),
        &[
            (Field::RetryAfter, None),
            (Field::CacheControl, Some("no-store")),
        ],
    );
    case(
        "a custom rejection keeps its Retry-After",
        &|map| {
            map.insert(Field::RetryAfter, M::value_static("7"));
            complete_rejection(map, Some(42));
        },
        &[
            (Field::RetryAfter, Some("7")),
            (Field::CacheControl, Some("no-store")),
        ],
    );
    case(
        "a failure's fields",
        &|map| complete_failure(map, Some(1), &policy(), IETF),
        &[
            (Field::RetryAfter, Some("1")),
            (Field::CacheControl, Some("no-store")),
            (Field::RateLimitPolicy, Some(r#""login";q=5;w=60"#)),
        ],
    );
    case(
        "a failure outside any handler's limits",
        &|map| complete_failure(map, None, &M::value_static(""), IETF),
        &[(Field::RetryAfter, None), (Field::RateLimitPolicy, None)],
    );
    case(
        "a concurrency limit after the rate limits",
        &|map| {
            one(map, &RateLimitFields::one(allowed), IETF, Write::Replace);
            let policy = crate::concurrency_policy_member("uploads", 4);
            append_members(map, Field::RateLimitPolicy, &policy);
            append_members(
                map,
                Field::RateLimit,
                &crate::concurrency_member("uploads", 3),
            );
        },
        &[
            (
                Field::RateLimitPolicy,
                Some(r#""login";q=5;w=60, "uploads";q=4;qu="concurrent-requests""#),
            ),
            (Field::RateLimit, Some(r#""login";r=4;t=60, "uploads";r=3"#)),
        ],
    );
    case(
        "a concurrency limit after a value of bytes above 0x7f, kept as they are",
        &|map| {
            let theirs = M::value(bytes::Bytes::from_static("café".as_bytes()));
            map.insert(Field::RateLimit, theirs.expect("obs-text is a valid value"));
            append_members(map, Field::RateLimit, r#""uploads";r=3"#);
        },
        &[(Field::RateLimit, Some(r#"café, "uploads";r=3"#))],
    );
    case(
        "a concurrency limit alone",
        &|map| append_members(map, Field::RateLimit, r#""uploads";r=3"#),
        &[(Field::RateLimit, Some(r#""uploads";r=3"#))],
    );
    case(
        "over a concurrency limit",
        &|map| concurrency_refused(map, "uploads", 4),
        &[
            (
                Field::RateLimitPolicy,
                Some(r#""uploads";q=4;qu="concurrent-requests""#),
            ),
            (Field::RateLimit, Some(r#""uploads";r=0"#)),
        ],
    );
}
