//! The path of a handler, as the route table and the default scopes name it.

/// The path of a handler, from the `type_name` of a type declared inside its generated
/// function: `my_app::auth::login` for `async fn login` in module `auth`, with the `impl`
/// type or enclosing function when there is one (`my_app::auth::Admin::login`,
/// `my_app::routes::login`), so that two handlers of one name never share a budget by
/// accident. What the route macros and `async` add to the path is removed.
///
/// It is the default scope, and names the budget in Redis: moving or renaming a handler
/// starts a new budget. Name scopes (`scope = "login"`) where budgets must outlive such
/// changes across a rolling deploy.
///
/// ```
/// use limiter_http::handler_path;
/// assert_eq!(handler_path("app::auth::login::{{closure}}::__LimiterHandler"), "app::auth::login");
/// assert_eq!(
///     handler_path("<app::login as actix_web::service::HttpServiceFactory>::register::login::{{closure}}::__LimiterHandler"),
///     "app::login"
/// );
/// ```
#[doc(hidden)]
pub fn handler_path(marker: &str) -> String {
    let mut segments = split_path(marker);
    if segments.last() == Some(&"__LimiterHandler") {
        segments.pop();
    }
    segments.retain(|s| !(s.starts_with("{{closure") || s.starts_with("{closure")));
    let mut out: Vec<&str> = Vec::with_capacity(segments.len());
    let mut i = 0;
    while i < segments.len() {
        let segment = segments[i];
        // The route macros turn `fn NAME` into a type `NAME` whose
        // `HttpServiceFactory::register` holds the function.
        if let Some(inner) = segment
            .strip_prefix('<')
            .and_then(|s| s.strip_suffix('>'))
            .and_then(|s| s.split_once(" as "))
            .filter(|(_, t)| t.ends_with("HttpServiceFactory"))
            .map(|(ty, _)| ty)
        {
            if segments.get(i + 1) == Some(&"register") {
                out.extend(split_path(inner));
                i += 3; // the type, `register`, and the function of the same name
                continue;
            }
        }
        out.push(segment);
        i += 1;
    }
    out.join("::")
}

/// Splits a Rust path on `::`, except inside `<...>`.
fn split_path(path: &str) -> Vec<&str> {
    let mut segments = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' => depth += 1,
            b'>' => depth = depth.saturating_sub(1),
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                segments.push(&path[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    segments.push(&path[start..]);
    segments
}
