//! What Redis's refusals mean: a login wanted or refused, scripts refused, a write refused
//! (full, read-only, no replicas) — configuration or a state of the server, each an error
//! that names its cause, apart from an outage.

use redis::RedisError;

use crate::StoreError;

/// Whether Redis answered `e` because the connection has not logged in (`NOAUTH`; for the
/// script, whose length a server refuses from a client that has not, `unauthenticated bulk
/// length`) or was refused its login (`WRONGPASS`, also a disabled ACL user): every check
/// would fail the same way; this is configuration. Only Redis's own words count: a
/// connection that fails for another reason is no reason to refuse to start.
pub(super) fn refuses_login(e: &RedisError) -> bool {
    let text = e.to_string();
    e.code()
        .is_some_and(|code| code.starts_with("NOAUTH") || code.starts_with("WRONGPASS"))
        || ["NOAUTH", "WRONGPASS", "unauthenticated"]
            .iter()
            .any(|word| text.contains(word))
}

/// What the store says when Redis wants a login it did not give.
pub(super) fn login_wanted(e: &RedisError) -> StoreError {
    StoreError::msg(format!(
        "Redis refused the store's login ({e}): {WHERE_THE_LOGIN_GOES}"
    ))
}

/// Where the password and user the store logs in with are given.
const WHERE_THE_LOGIN_GOES: &str = "give the password (and user) it expects in the URL \
     (redis://user:password@host:6379); behind Sentinel, the sentinels' own in their URLs, the \
     masters' in the client's SentinelNodeConnectionInfo (RedisStore::from_sentinel)";

/// What the store says when Redis answered its login with an error that redis does not pass
/// on (its `AuthenticationFailed`): a wrong password or user, most often, but a full server
/// or a proxy's error answers a login so too.
pub(super) fn login_failed(e: &RedisError) -> StoreError {
    StoreError::msg(format!(
        "Redis answered the store's login with an error ({e}; redis does not say which): a \
         wrong password or user, a password given to a server that wants none, or a server \
         with no room for another client (maxclients); for a login, {WHERE_THE_LOGIN_GOES}"
    ))
}

/// Why Redis will not run the store's calls as configured, with the fix: it refused the
/// store's login, in its own words or as redis's `AuthenticationFailed` (an error answering
/// the login, which says which it may be), or its scripts. `None` for anything else (an
/// outage, a slow server).
pub(super) fn refusal(e: &RedisError) -> Option<StoreError> {
    if refuses_login(e) {
        return Some(login_wanted(e));
    }
    if e.kind() == redis::ErrorKind::AuthenticationFailed {
        return Some(login_failed(e));
    }
    refuses_scripts(e).then(|| {
        StoreError::msg(format!(
            "this Redis does not run Lua scripts, which the limiter needs (EVALSHA, \
             SCRIPT LOAD): {e}; grant the user `+@scripting` (ACL SETUSER ... +@scripting) \
             or use a server or plan that allows EVAL"
        ))
    })
}

/// A call that failed, `what` it was for. A store that connects lazily meets a refused
/// login or refused scripts at its checks, not when it is made: those are said as at
/// [`RedisStore::connect`], with the fix, in the failure every check then gets (and in the
/// limiter's event when it finds the store lost), not as Redis's bare words.
pub(super) fn failure(what: &str, e: RedisError) -> StoreError {
    refusal(&e).unwrap_or_else(|| error(what, e))
}

/// Whether `e` says the server will not run scripts for this client: no permission for the
/// scripts' commands, or no such command. A refusal that names no script command (a key the
/// user may not touch, another command) has another fix, and is left in Redis's words.
pub(super) fn refuses_scripts(e: &RedisError) -> bool {
    let text = e.to_string().to_ascii_lowercase();
    let of_scripts = ["'eval", "'script", "'fcall", "scripting"]
        .iter()
        .any(|word| text.contains(word));
    of_scripts && (refused(&text) || text.contains("scripting"))
}

/// Whether an error's text (lowercase) is a server's refusal of a command to this client,
/// which asking again will not change: no permission (an ACL, a managed plan), or no such
/// command or subcommand (an older server, one without Lua). Which command, the callers
/// say.
pub(super) fn refused(text: &str) -> bool {
    [
        "noperm",
        "no permissions",
        "unknown command",
        "unknown subcommand",
    ]
    .iter()
    .any(|word| text.contains(word))
}

pub(super) fn error(what: &str, source: RedisError) -> StoreError {
    StoreError::new(what, source)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redis_error(code: &'static str, text: &str) -> RedisError {
        RedisError::from((redis::ErrorKind::Extension, code, text.to_string()))
    }

    /// Only a refusal of the scripts' own commands is said as one, with its fix: a key or
    /// another command the user may not touch keeps Redis's words.
    #[test]
    fn a_refusal_of_scripts_names_their_commands() {
        let refused = [
            redis_error(
                "NOPERM",
                "this user has no permissions to run the 'evalsha' command",
            ),
            redis_error(
                "NOPERM",
                "this user has no permissions to run the 'script|load' command",
            ),
            redis_error(
                "ERR",
                "unknown command 'EVALSHA', with args beginning with: ",
            ),
        ];
        for e in &refused {
            assert!(refuses_scripts(e), "{e}");
        }
        let other = [
            redis_error("NOPERM", "No permissions to access a key"),
            redis_error(
                "NOPERM",
                "this user has no permissions to run the 'del' command",
            ),
            redis_error("ERR", "max number of clients reached"),
        ];
        for e in &other {
            assert!(!refuses_scripts(e) && refusal(e).is_none(), "{e}");
        }
    }
}
