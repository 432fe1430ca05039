use limiter::rate_limit;

// An escalation with no block to escalate.
#[rate_limit(5, per = "1m", penalty = "3 in 1h -> 1d")]
async fn escalation_alone() -> &'static str {
    "ok"
}

// A block of nothing, a block beyond 30 days, a block in words.
#[rate_limit(5, per = "1m", block = "0s")]
async fn zero() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", block = "31d")]
async fn too_long() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", block = "15 minutes")]
async fn in_words() -> &'static str {
    "ok"
}

// An escalation not in its form, and one counting too many blocks.
#[rate_limit(5, per = "1m", block = "15m", penalty = "3 per hour, then a day")]
async fn not_the_form() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", block = "15m", penalty = "20 in 1h -> 1d")]
async fn too_many() -> &'static str {
    "ok"
}

// A jitter beyond an hour.
#[rate_limit(5, per = "1m", jitter = "2h")]
async fn jitter_too_long() -> &'static str {
    "ok"
}

fn main() {}
