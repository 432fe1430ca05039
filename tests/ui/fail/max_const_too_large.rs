use limiter::rate_limit;

const PER_DAY: u32 = 100_000;

// The exact log counts at most 65535 per window.
#[rate_limit(PER_DAY, per = "1d")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
