use actix_web::HttpRequest;
use limiter::rate_limit;

struct Admin;

impl Admin {
    const COST: u32 = 2;

    fn client(req: &HttpRequest) -> Option<String> {
        req.headers()
            .get("x-admin")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    // In an impl block, the type's own items are named through the type.
    #[rate_limit(5, per = "1m", key = Admin::client, cost = Admin::COST)]
    async fn purge() -> &'static str {
        "ok"
    }
}

pub(crate) fn main() {
    let _ = actix_web::web::get().to(Admin::purge);
}
