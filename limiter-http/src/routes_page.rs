//! The table of rate-limited routes, served by the application itself — as JSON for
//! tools, as a small HTML page for people — with the policies a limiter applies
//! (configured and changed-at-run-time ones included) and who is being limited right now.
//! Every front end serves these bytes (actix's `routes_service`, axum's `routes_page`).

use std::fmt::Write as _;

use limiter_core::Routes;

use crate::headers::{Field, FieldMap};
use crate::pipeline::Respond;
use crate::{Limiter, RejectedClient};

/// Whether a request for the page asks for JSON: `?format=json` in its `query`, or an
/// `Accept` naming `application/json` and not `text/html`.
pub fn wants_json(query: Option<&str>, accept: Option<&[u8]>) -> bool {
    let asked = query.is_some_and(|q| q.split('&').any(|p| p == "format=json"));
    asked
        || accept
            .and_then(|v| std::str::from_utf8(v).ok())
            .is_some_and(|accept| {
                accept.contains("application/json") && !accept.contains("text/html")
            })
}

/// The page of `limiter`'s routes (`json`: as JSON), not to be cached.
pub fn routes_page<F: Respond>(limiter: &Limiter<F>, json: bool) -> F::Response {
    let routes = limiter.routes();
    let rejected: Vec<(String, Vec<RejectedClient>)> = limiter
        .scopes_rejecting()
        .into_iter()
        .map(|scope| {
            let clients = limiter.rejected_clients(&scope);
            (scope, clients)
        })
        .filter(|(_, clients)| !clients.is_empty())
        .collect();
    let (body, content_type) = match json {
        true => (self::json(&routes, &rejected), "application/json"),
        false => (html(&routes, &rejected), "text/html; charset=utf-8"),
    };
    let mut response = F::response(200, body.into());
    {
        let mut fields = F::fields_of(&mut response);
        let content_type = <F::Fields<'_> as FieldMap>::value_static(content_type);
        fields.insert(Field::ContentType, content_type);
        let no_store = <F::Fields<'_> as FieldMap>::value_static("no-store");
        fields.insert(Field::CacheControl, no_store);
    }
    response
}

/// The most rejected clients of each scope that has some.
type Rejected = [(String, Vec<RejectedClient>)];

/// `{"routes":[{"handler":…,"location":…,"limits":[{"scope":…,"max":…,"window_ms":…,
/// "algorithm":…,"burst":…,"key":…,"options":[…]}]}],"rejected":[{"scope":…,
/// "clients":[{"client":…,"rejections":…,"overcount":…}]}]}`
fn json(routes: &Routes, rejected: &Rejected) -> String {
    let mut out = String::from("{\"routes\":[");
    for (i, route) in routes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"handler\":{},\"location\":{},\"limits\":[",
            string(&route.handler),
            string(&route.location)
        );
        for (j, limit) in route.limits.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            let policy = limit.policy();
            let burst = match policy.algorithm() {
                limiter_core::Algorithm::TokenBucket => policy.burst().to_string(),
                _ => "null".to_string(),
            };
            let options: Vec<String> = limit.options.iter().map(|o| string(o)).collect();
            let _ = write!(
                out,
                "{{\"scope\":{},\"max\":{},\"window_ms\":{},\"algorithm\":{},\"burst\":{burst},\
                 \"key\":{},\"options\":[{}]}}",
                string(limit.scope()),
                policy.max(),
                policy.window_ms(),
                string(policy.algorithm().name()),
                string(&limit.key),
                options.join(",")
            );
        }
        out.push_str("]}");
    }
    out.push_str("],\"rejected\":[");
    for (i, (scope, clients)) in rejected.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{{\"scope\":{},\"clients\":[", string(scope));
        for (j, client) in clients.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                "{{\"client\":{},\"rejections\":{},\"overcount\":{}}}",
                string(&client.client),
                client.rejections,
                client.overcount
            );
        }
        out.push_str("]}");
    }
    out.push_str("]}");
    out
}

/// A JSON string.
fn string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Text made safe for HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn html(routes: &Routes, rejected: &Rejected) -> String {
    let mut rows = String::new();
    for [scope, limit, key, options, handler] in routes.rows() {
        let configured = options.contains("configured");
        let _ = write!(
            rows,
            "<tr{}><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td>{}</td>\
             <td><code>{}</code></td></tr>",
            if configured {
                " class=\"configured\""
            } else {
                ""
            },
            escape(&scope),
            escape(&limit),
            escape(&key),
            escape(&options),
            escape(&handler)
        );
    }
    let mut limited = String::new();
    for (scope, clients) in rejected {
        for client in clients {
            let sure = client.rejections - client.overcount;
            let count = match client.overcount {
                0 => sure.to_string(),
                over => format!("{sure} to {}", sure + over),
            };
            let _ = write!(
                limited,
                "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{count}</td></tr>",
                escape(scope),
                escape(&client.client),
            );
        }
    }
    let limited = if limited.is_empty() {
        "<p>Nobody was rejected in the last minutes.</p>".to_string()
    } else {
        format!(
            "<table>\n<thead><tr><th>scope</th><th>client</th><th>rejections</th></tr></thead>\n\
             <tbody>{limited}</tbody>\n</table>"
        )
    };
    let count = routes.rows().len();
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Rate limits</title>
<style>
  body {{ font: 15px/1.45 system-ui, sans-serif; margin: 2rem; color: #1d2125; background: #fff; }}
  h1 {{ font-size: 1.4rem; margin: 0 0 .25rem; }}
  h2 {{ font-size: 1.1rem; margin: 2rem 0 .25rem; }}
  p {{ color: #555; margin: 0 0 1.25rem; }}
  table {{ border-collapse: collapse; width: 100%; }}
  th, td {{ text-align: left; padding: .45rem .7rem; border-bottom: 1px solid #e3e6ea; vertical-align: top; }}
  th {{ font-weight: 600; background: #f5f7f9; }}
  tr.configured td:nth-child(2) {{ color: #8a4b00; font-weight: 600; }}
  code {{ font: 13px ui-monospace, SFMono-Regular, Menlo, monospace; }}
</style>
</head>
<body>
<h1>Rate limits</h1>
<p>{count} limit{plural} in this program, as this instance applies them. Highlighted: a policy set by configuration.</p>
<table>
<thead><tr><th>scope</th><th>limit</th><th>key</th><th>options</th><th>handler</th></tr></thead>
<tbody>{rows}</tbody>
</table>
<h2>Limited right now</h2>
<p>The clients each scope rejected most over the last one to two minutes, at most ten per scope.</p>
{limited}
</body>
</html>
"#,
        plural = if count == 1 { "" } else { "s" },
    )
}
