use limiter::rate_limit;

// The counter's max × window must stay below 2^52 (exact in Redis's Lua too).
#[rate_limit(8_000_000, per = "7d", algorithm = "sliding_window_counter")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
