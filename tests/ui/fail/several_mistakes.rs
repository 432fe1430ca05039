use limiter::rate_limit;

// Every mistake is reported at once, each on its own token.
#[rate_limit(0, per = "1x", algorithm = "leaky", color = "red")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
