//! The routes: one table ([`ROUTES`]) that the dispatcher matches and
//! `openapi.json` describes (a test checks they list the same), the
//! checks every request passes (Host, token), and JSON in and out.

use std::sync::atomic::AtomicBool;

use super::chats::{Chats, NewChat};
use super::runs::{NewRun, Refused, Runs};
use crate::util::httpd::{self, BodyError, Request, Response};

/// The OpenAPI document, kept by hand beside the code.
pub(super) const OPENAPI: &str = include_str!("openapi.json");

/// The page served at `/`, and its script.
const PAGE: &str = include_str!("page.html");
const PAGE_JS: &str = include_str!("page.js");

/// Every route: method and path pattern (`{name}` is one segment).
pub(super) const ROUTES: &[(&str, &str)] = &[
    ("GET", "/"),
    ("GET", "/openapi.json"),
    ("GET", "/page.js"),
    ("GET", "/v1/teams"),
    ("GET", "/v1/runs"),
    ("POST", "/v1/runs"),
    ("GET", "/v1/runs/{id}"),
    ("GET", "/v1/runs/{id}/events"),
    ("GET", "/v1/runs/{id}/ws"),
    ("POST", "/v1/runs/{id}/messages"),
    ("POST", "/v1/runs/{id}/cancel"),
    ("POST", "/v1/runs/{id}/resume"),
    ("POST", "/v1/runs/{id}/approvals/{call}"),
    ("POST", "/v1/chats"),
    ("GET", "/v1/chats/{id}"),
    ("POST", "/v1/chats/{id}/messages"),
    ("POST", "/v1/chats/{id}/consent"),
    ("POST", "/v1/chats/{id}/close"),
];

/// Routes served without the token.
const OPEN: &[&str] = &["/", "/openapi.json", "/page.js"];

/// Who may be served and what a body may weigh.
#[derive(Debug)]
pub(super) struct Access {
    /// On loopback: the `Host` values that name this server.
    pub(super) hosts: Option<std::sync::Arc<[String]>>,
    /// The bearer token of every `/v1` request.
    pub(super) token: String,
    /// The largest request body taken, in bytes.
    pub(super) max_body: usize,
}

/// A JSON response.
pub(super) fn json(status: u16, value: &serde_json::Value) -> Response {
    Response::new(status, value.to_string().into_bytes())
        .with_header("Content-Type", "application/json")
        .with_header("Cache-Control", "no-store")
        .with_header("X-Content-Type-Options", "nosniff")
}

/// `{"error": message, "status": status}`.
pub(super) fn error(status: u16, message: &str) -> Response {
    json(
        status,
        &serde_json::json!({"error": message, "status": status}),
    )
}

/// The status and message a refusal is answered with.
pub(super) fn refused(r: &Refused) -> (u16, String) {
    match r {
        Refused::Full(n) => (
            429,
            format!("{n} runs are running, the most this server takes at once: retry later"),
        ),
        Refused::ChatsFull(n) => (
            429,
            format!(
                "{n} chats are open, the most this server holds at once: close one, or retry later"
            ),
        ),
        Refused::BadInput(m) => (400, m.clone()),
        Refused::NotFound(m) => (404, m.clone()),
        Refused::Conflict(m) => (409, m.clone()),
        Refused::Failed(m) => (500, m.clone()),
    }
}

fn refusal(r: &Refused) -> Response {
    let (status, message) = refused(r);
    let response = error(status, &message);
    if status == 429 {
        response.with_header("Retry-After", "1")
    } else {
        response
    }
}

/// As many event streams and WebSockets as the server keeps are open.
fn too_many_streams() -> Response {
    error(
        503,
        &format!(
            "{} event streams and WebSockets are open, the most this server keeps at once: \
             retry later",
            super::MAX_STREAMS
        ),
    )
    .with_header("Retry-After", "5")
}

/// Every worker is busy and the queue is full.
pub(super) fn busy() -> Response {
    error(503, "the server is busy: retry in a moment").with_header("Retry-After", "1")
}

/// The route `method path` matches, with the values of its `{…}`
/// segments; else the status to answer (404, or 405 when the path is
/// served with another method).
fn route<'a>(method: &str, path: &'a str) -> Result<(&'static str, Vec<&'a str>), u16> {
    let parts: Vec<&str> = path.split('/').collect();
    let mut path_known = false;
    for (m, pattern) in ROUTES {
        let want: Vec<&str> = pattern.split('/').collect();
        if want.len() != parts.len() {
            continue;
        }
        let mut params = Vec::new();
        let fits = want.iter().zip(&parts).all(|(w, p)| {
            if w.starts_with('{') {
                params.push(*p);
                !p.is_empty()
            } else {
                w == p
            }
        });
        if !fits {
            continue;
        }
        path_known = true;
        let same_method = *m == method || (*m == "GET" && method == "HEAD");
        if same_method {
            return Ok((pattern, params));
        }
    }
    Err(if path_known { 405 } else { 404 })
}

/// Answers one request.
pub(super) fn handle(
    mut request: Request,
    runs: &Runs,
    chats: &Chats,
    access: &Access,
    stop: &AtomicBool,
) {
    if !httpd::host_allowed(&request, access.hosts.as_deref()) {
        let _ = request.respond(error(421, "this server answers to its own address only"));
        return;
    }
    let path = request.path().to_string();
    let method = request.method().to_string();
    let (pattern, params) = match route(&method, &path) {
        Ok(found) => found,
        Err(405) => {
            let _ = request.respond(error(405, &format!("{method} is not served on {path}")));
            return;
        }
        Err(_) => {
            let _ = request.respond(error(404, &format!("no route {path}")));
            return;
        }
    };
    if !OPEN.contains(&pattern)
        && !httpd::bearer(&request).is_some_and(|t| httpd::same(t, &access.token))
    {
        let _ = request.respond(
            error(
                401,
                "this route needs the server's token: Authorization: Bearer TOKEN",
            )
            .with_header("WWW-Authenticate", "Bearer"),
        );
        return;
    }
    let id = params.first().copied().unwrap_or("").to_string();
    let response = match (method.as_str(), pattern) {
        (_, "/") => page(),
        (_, "/openapi.json") => Response::new(200, OPENAPI.as_bytes().to_vec())
            .with_header("Content-Type", "application/json")
            .with_header("Cache-Control", "no-store"),
        (_, "/page.js") => Response::new(200, PAGE_JS.as_bytes().to_vec())
            .with_header("Content-Type", "text/javascript; charset=utf-8")
            .with_header("Cache-Control", "no-store"),
        (_, "/v1/teams") => json(200, &serde_json::json!({"teams": runs.team_names()})),
        ("GET", "/v1/runs") => match runs.list() {
            Ok(list) => json(200, &serde_json::json!({"runs": list})),
            Err(r) => refusal(&r),
        },
        ("POST", "/v1/runs") => match body::<NewRun>(&mut request, access.max_body) {
            Ok(new) => match runs.start(new) {
                Ok(id) => json(201, &serde_json::json!({"id": id}))
                    .with_header("Location", &format!("/v1/runs/{id}")),
                Err(r) => refusal(&r),
            },
            Err(response) => response,
        },
        (_, "/v1/runs/{id}") => match runs.get(&id) {
            Ok(run) => json(200, &run),
            Err(r) => refusal(&r),
        },
        (_, "/v1/runs/{id}/events" | "/v1/runs/{id}/ws") => match runs.find(&id) {
            Some(dir) => {
                // Each holds a worker while it is open: at most
                // MAX_STREAMS, so plain requests always find one.
                let Some(_slot) = runs.open_stream() else {
                    let _ = request.respond(too_many_streams());
                    return;
                };
                if pattern.ends_with("/ws") {
                    super::ws::serve(request, runs, &id, &dir, stop);
                } else {
                    let after = super::stream::last_event_id(
                        request.header("Last-Event-ID"),
                        request.url(),
                    );
                    super::stream::sse(request.into_stream(), runs, &id, &dir, after, stop);
                }
                return;
            }
            None => error(404, &format!("no run '{id}'")),
        },
        (_, "/v1/runs/{id}/messages") => match body::<Message>(&mut request, access.max_body) {
            Ok(m) => match runs.resume(&id, Some(&m.text)) {
                Ok(()) => json(202, &serde_json::json!({"id": id})),
                Err(r) => refusal(&r),
            },
            Err(response) => response,
        },
        (_, "/v1/runs/{id}/cancel") => match runs.cancel(&id) {
            Ok(()) => json(202, &serde_json::json!({"id": id})),
            Err(r) => refusal(&r),
        },
        (_, "/v1/runs/{id}/resume") => match runs.resume(&id, None) {
            Ok(()) => json(202, &serde_json::json!({"id": id})),
            Err(r) => refusal(&r),
        },
        (_, "/v1/runs/{id}/approvals/{call}") => {
            let call = params.get(1).copied().unwrap_or("").to_string();
            match body::<Verdict>(&mut request, access.max_body)
                .and_then(|v| v.decision().map_err(|m| error(400, &m)))
            {
                Ok(decision) => match runs.decide(&id, &call, decision) {
                    Ok(()) => json(202, &serde_json::json!({"id": id, "call": call})),
                    Err(r) => refusal(&r),
                },
                Err(response) => response,
            }
        }
        ("POST", "/v1/chats") => match body::<NewChat>(&mut request, access.max_body) {
            Ok(new) => match chats.start(runs, new) {
                Ok(chat) => {
                    let at = format!("/v1/chats/{}", chat["id"].as_str().unwrap_or(""));
                    json(201, &chat).with_header("Location", &at)
                }
                Err(r) => refusal(&r),
            },
            Err(response) => response,
        },
        (_, "/v1/chats/{id}") => {
            let after = query_number(request.url(), "after");
            match chats.show(&id, after) {
                Ok(chat) => json(200, &chat),
                Err(r) => refusal(&r),
            }
        }
        (_, "/v1/chats/{id}/messages") => match body::<Message>(&mut request, access.max_body) {
            Ok(m) => match chats.say(&id, &m.text) {
                Ok(chat) => json(200, &chat),
                Err(r) => refusal(&r),
            },
            Err(response) => response,
        },
        (_, "/v1/chats/{id}/consent") => match body::<Consent>(&mut request, access.max_body) {
            Ok(c) => match chats.consent(&id, c.granted) {
                Ok(chat) => json(200, &chat),
                Err(r) => refusal(&r),
            },
            Err(response) => response,
        },
        (_, "/v1/chats/{id}/close") => match chats.close(&id) {
            Ok(chat) => json(200, &chat),
            Err(r) => refusal(&r),
        },
        _ => error(501, &format!("{method} {pattern} is not implemented")),
    };
    if let Err(e) = request.respond(response) {
        log::debug!("serve: {method} {path}: {e}");
    }
}

/// A decision about a tool call that waits for one:
/// `{"decision": "approve" | "deny" | "edit", "reason": "…", "arguments": {…}}`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Verdict {
    decision: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    arguments: Option<serde_json::Value>,
}

impl Verdict {
    /// The library's decision, or why this is none.
    pub(super) fn decision(self) -> Result<crate::record::Decision, String> {
        use crate::record::Decision;
        match (self.decision.as_str(), self.arguments) {
            ("approve", None) => Ok(Decision::Approve),
            ("deny", None) => Ok(Decision::Deny {
                reason: self.reason.filter(|r| !r.trim().is_empty()),
            }),
            ("edit", Some(args)) => Ok(Decision::Edit {
                arguments: match args {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                },
            }),
            ("edit", None) => Err("arguments: an edit needs the new arguments".into()),
            ("approve" | "deny", Some(_)) => Err("arguments: only an edit takes arguments".into()),
            (other, _) => Err(format!(
                "decision: '{other}' is not a decision (approve, deny, edit)"
            )),
        }
    }
}

/// A reply to the master's question, or a follow-up.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Message {
    text: String,
}

/// The user's yes or no to the partner's question.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Consent {
    granted: bool,
}

/// The number `name=N` of the URL's query (0 when absent or not one).
fn query_number(url: &str, name: &str) -> usize {
    url.split_once('?')
        .map(|(_, q)| q)
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

/// The request's body as JSON of type `T`, or the error response: 413 past
/// the cap, 411 without a length, 400 for what is not that JSON.
fn body<T: serde::de::DeserializeOwned>(
    request: &mut Request,
    max_body: usize,
) -> Result<T, Response> {
    let bytes = request.read_body(max_body).map_err(|e| match e {
        BodyError::TooLarge { limit } => error(
            413,
            &format!("the request body is larger than {limit} bytes"),
        ),
        BodyError::NoLength => error(411, "the request needs a Content-Length"),
        BodyError::Io(e) => error(400, &format!("the request body did not arrive: {e}")),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        error(
            400,
            &format!("the request body is not valid JSON for this route: {e}"),
        )
    })
}

/// The page shell (it asks for the token itself).
fn page() -> Response {
    Response::new(200, PAGE.as_bytes().to_vec())
        .with_header("Content-Type", "text/html; charset=utf-8")
        .with_header("Cache-Control", "no-store")
        .with_header("X-Content-Type-Options", "nosniff")
        .with_header("Referrer-Policy", "no-referrer")
        .with_header(
            "Content-Security-Policy",
            "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'",
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `openapi.json` lists every route of [`ROUTES`] with its method, and
    /// nothing else.
    #[test]
    fn the_openapi_document_lists_every_route() {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI).unwrap();
        assert_eq!(doc["openapi"].as_str().map(|v| &v[..2]), Some("3."));
        let mut documented = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                if ["get", "post", "put", "delete", "patch"].contains(&method.as_str()) {
                    documented.push((method.to_uppercase(), path.clone()));
                }
            }
        }
        documented.sort();
        let mut routed: Vec<(String, String)> = ROUTES
            .iter()
            .map(|(m, p)| ((*m).to_string(), (*p).to_string()))
            .collect();
        routed.sort();
        assert_eq!(documented, routed);
    }

    #[test]
    fn routes_match_by_segment() {
        assert_eq!(
            route("GET", "/v1/runs/abc"),
            Ok(("/v1/runs/{id}", vec!["abc"]))
        );
        assert_eq!(
            route("POST", "/v1/runs/a/approvals/c1"),
            Ok(("/v1/runs/{id}/approvals/{call}", vec!["a", "c1"]))
        );
        assert_eq!(route("DELETE", "/v1/runs"), Err(405));
        assert_eq!(route("GET", "/v1/runs//events"), Err(404));
        assert_eq!(route("GET", "/v2"), Err(404));
    }
}
