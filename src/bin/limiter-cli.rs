//! `limiter-cli`: acting on a running fleet without a deploy, through its Redis store — the
//! limits its instances use, where a client stands under each, forgetting a client, and
//! policies every instance applies within a second (feature `cli`).
//!
//! ```text
//! limiter-cli [--redis URL] [--prefix PREFIX] [--ipv6-prefix BITS] COMMAND
//!   limits                 the limits the instances count with, and the policies stored
//!   show CLIENT            where CLIENT stands under every limit
//!   reset CLIENT [SCOPE]   forgets CLIENT's state (under SCOPE's limits only)
//!   set SCOPE POLICY       every instance applies POLICY ("10 per 1m") to SCOPE
//!   unset SCOPE            every instance goes back to SCOPE's declared limit
//! CLIENT: ip:ADDRESS, user:ID, header:VALUE, function:VALUE, checked:VALUE or global
//! ```
//!
//! The URL defaults to `LIMITER_REDIS_URL`, else `redis://127.0.0.1:6379`; the prefix and
//! the IPv6 grouping to the store's and the limiter's defaults (`limiter`, 56). A usage
//! mistake exits with status 2 and the usage; a failure (Redis unreachable, refusing, or
//! slower than 5 s) with status 1, its cause and a one-line hint.

use std::net::IpAddr;
use std::process::ExitCode;

use limiter::{Limit, Limiter, Policy, RedisStore, Store, Subject};

const USAGE: &str = "usage: limiter-cli [--redis URL] [--prefix PREFIX] [--ipv6-prefix BITS] \
COMMAND
  limits                 the limits the instances count with, and the policies stored
  show CLIENT            where CLIENT stands under every limit
  reset CLIENT [SCOPE]   forgets CLIENT's state (under SCOPE's limits only)
  set SCOPE POLICY       every instance applies POLICY (\"10 per 1m\") to SCOPE
  unset SCOPE            every instance goes back to SCOPE's declared limit
CLIENT: ip:ADDRESS, user:ID, header:VALUE, function:VALUE, checked:VALUE or global";

/// The one line under a failure: what to check (the usage is for usage mistakes alone).
const HINT: &str = "hint: check --redis (or LIMITER_REDIS_URL) and --prefix: they must be \
the service's; `limiter-cli --help` lists the commands";

/// What the command line asks.
struct Asked {
    url: String,
    prefix: String,
    ipv6_prefix: u8,
    command: Vec<String>,
}

fn asked(args: Vec<String>) -> Result<Asked, String> {
    let mut asked = Asked {
        url: std::env::var("LIMITER_REDIS_URL")
            .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_string()),
        prefix: "limiter".to_string(),
        ipv6_prefix: 56,
        command: Vec::new(),
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--redis" => asked.url = value("--redis")?,
            "--prefix" => asked.prefix = value("--prefix")?,
            "--ipv6-prefix" => {
                let bits = value("--ipv6-prefix")?;
                asked.ipv6_prefix = bits
                    .parse()
                    .ok()
                    .filter(|&b| b <= 128)
                    .ok_or(format!("--ipv6-prefix takes 0 to 128 bits, not {bits}"))?;
            }
            "-h" | "--help" => return Err(String::new()),
            _ => asked.command.push(arg),
        }
    }
    Ok(asked)
}

/// A client as the command line names it.
fn subject(text: &str) -> Result<Subject<'_>, String> {
    let (kind, value) = text.split_once(':').unwrap_or((text, ""));
    Ok(match kind {
        "ip" => Subject::Address(
            value
                .parse::<IpAddr>()
                .map_err(|_| format!("\"{value}\" is not an IP address"))?,
        ),
        "user" => Subject::User(value),
        "header" => Subject::Header(value.as_bytes()),
        "function" => Subject::Function(value),
        "checked" => Subject::Checked(value),
        "global" => Subject::Global,
        _ => {
            return Err(format!(
                "\"{text}\" names no client: ip:ADDRESS, user:ID, header:VALUE, \
                 function:VALUE, checked:VALUE or global"
            ))
        }
    })
}

/// Why a command did nothing: a command line that asks nothing it can do (answered with
/// the usage, exit status 2), or a command that failed, Redis unreachable or refusing
/// (answered with why and a one-line hint, exit status 1).
enum Failure {
    Usage(String),
    Failed(String),
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()).await {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(Failure::Usage(why)) if why.is_empty() => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Err(Failure::Usage(why)) => {
            eprintln!("limiter-cli: {why}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Failed(why)) => {
            eprintln!("limiter-cli: {why}\n{HINT}");
            ExitCode::from(1)
        }
    }
}

async fn run(args: Vec<String>) -> Result<String, Failure> {
    let asked = asked(args).map_err(Failure::Usage)?;
    let store = RedisStore::connect(&asked.url)
        .await
        .map_err(|e| Failure::Failed(format!("cannot reach Redis at {}: {e}", asked.url)))?
        .with_prefix(asked.prefix.clone())
        .overrides_every(None);
    // A tool may be far from Redis: seconds, not the 50 ms a request gets.
    store.accept_timeout(std::time::Duration::from_secs(5));
    let failed = |e: limiter::StoreError| Failure::Failed(e.to_string());
    let words: Vec<&str> = asked.command.iter().map(String::as_str).collect();
    let mut out = String::new();
    match words.as_slice() {
        ["limits"] => {
            for limit in store.limits().await.map_err(failed)? {
                out += &format!(
                    "{}\t{}\t{:016x}\n",
                    limit.scope(),
                    limit.policy(),
                    limit.id()
                );
            }
            for limit in store.concurrency_limits().await.map_err(failed)? {
                out += &format!("{}\t{limit}\t{:016x}\n", limit.scope(), limit.id());
            }
            for (scope, policy) in store.overrides().await.map_err(failed)? {
                out += &format!("{scope}\t{policy}\tstored override\n");
            }
        }
        ["show", client] => {
            let key = key_of(&asked, client).map_err(Failure::Usage)?;
            for limit in store.limits().await.map_err(failed)? {
                let status = store.status(&limit, &key).await.map_err(failed)?;
                // A block refuses everything until it ends; used-up quota comes back as its
                // window (or calendar period) moves on.
                let blocked = match status.retry_after() {
                    Some(wait) if status.blocked() => {
                        format!("blocked for {}", span(wait.as_secs_f64().ceil() as u64))
                    }
                    Some(wait) => format!(
                        "used up: admitted again in {}",
                        span(wait.as_secs_f64().ceil() as u64)
                    ),
                    None => "not blocked".to_string(),
                };
                out += &format!(
                    "{}\t{}\tremaining {} of {}\treset in {}s\t{blocked}\n",
                    limit.scope(),
                    limit.policy(),
                    status.remaining(),
                    status.limit(),
                    status.reset_after_secs(),
                );
            }
            for limit in store.concurrency_limits().await.map_err(failed)? {
                let taken = store.slots_taken(&limit, &key).await.map_err(failed)?;
                out += &format!("{}\t{limit}\t{taken} in flight now\n", limit.scope());
            }
        }
        ["reset", client, rest @ ..] if rest.len() <= 1 => {
            let key = key_of(&asked, client).map_err(Failure::Usage)?;
            let limits: Vec<Limit> = store
                .limits()
                .await
                .map_err(failed)?
                .into_iter()
                .filter(|l| rest.first().is_none_or(|scope| l.scope() == *scope))
                .collect();
            if limits.is_empty() {
                return Err(Failure::Failed("no limit of that scope is in use".into()));
            }
            for limit in &limits {
                store.reset_everywhere(limit, &key).await.map_err(failed)?;
                out += &format!("{}\t{}\tforgotten\n", limit.scope(), limit.policy());
            }
        }
        ["set", scope, text] => {
            let policy: Policy = text.parse().map_err(|e| Failure::Usage(format!("{e}")))?;
            store.set_override(scope, &policy).await.map_err(failed)?;
            // As given: a policy that names no algorithm shows the default one.
            let text = text.trim();
            out += &format!("{scope}\t{text}\tstored: every instance applies it within its reading interval (1 s by default)\n");
            // What the instances make of it: a policy that names no algorithm, delay or
            // penalty keeps the counting limit's (each limit of the scope an instance uses).
            let mut applied = Vec::new();
            for limit in store.limits().await.map_err(failed)? {
                if limit.scope() == *scope {
                    let over = policy.over(limit.policy()).unwrap_or(policy);
                    if !applied.contains(&over) {
                        applied.push(over);
                    }
                }
            }
            for over in applied {
                out += &format!("{scope}\t{over}\tas the instances apply it\n");
            }
        }
        ["unset", scope] => {
            store.clear_override(scope).await.map_err(failed)?;
            out += &format!("{scope}\tremoved: every instance goes back to its declared limit\n");
        }
        [] => return Err(Failure::Usage(String::new())),
        _ => return Err(Failure::Usage(format!("cannot do \"{}\"", words.join(" ")))),
    }
    Ok(out)
}

/// The store key of the client the command line names, as the service's limiter makes it.
fn key_of(asked: &Asked, client: &str) -> Result<Vec<u8>, String> {
    let subject = subject(client)?;
    let limiter = Limiter::builder().ipv6_prefix(asked.ipv6_prefix).build();
    Ok(limiter.store_key(subject))
}

/// A wait in seconds, and for one of an hour or more in days, hours and minutes besides.
fn span(secs: u64) -> String {
    if secs < 3_600 {
        return format!("{secs}s");
    }
    let (days, hours, minutes) = (secs / 86_400, secs % 86_400 / 3_600, secs % 3_600 / 60);
    match days {
        0 => format!("{secs}s ({hours}h {minutes}m)"),
        _ => format!("{secs}s ({days}d {hours}h {minutes}m)"),
    }
}
