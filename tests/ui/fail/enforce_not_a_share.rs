use limiter::rate_limit;

#[rate_limit(5, per = "1m", enforce = "10")]
async fn no_percent_sign() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", enforce = "0.1")]
async fn a_fraction() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", enforce = "150%")]
async fn more_than_everyone() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", enforce = "ten%")]
async fn words() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", enforce = "0.00001%")]
async fn too_fine() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", enforce = 10)]
async fn not_a_string() -> &'static str {
    "ok"
}

fn main() {}
