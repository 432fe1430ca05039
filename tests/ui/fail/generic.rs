use limiter::rate_limit;

#[rate_limit(5, per = "1m")]
async fn handler<T: Default>() -> String {
    let _ = T::default();
    String::new()
}

fn main() {}
