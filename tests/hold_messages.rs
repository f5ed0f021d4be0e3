//! Issue 28, finding 21: messages that name the real cause. A redirect
//! from the model endpoint is reported with where it points (a 301/302
//! was followed as a GET and read "no choices in the response"; a 307/308
//! "redirect failed"); JSON served as `text/event-stream` is named as such
//! (it read "stream ended before [DONE]").

mod support;

use boardroom::{ChatModel, ChatRequest, Message, OpenAi, Phase};
use support::{Reply, Server};

fn request() -> ChatRequest {
    ChatRequest::new("writer", Phase::Draft, 1, vec![Message::user("hello")])
}

fn model(server: &Server, stream: bool) -> OpenAi {
    OpenAi::builder(server.base_url(), "m")
        .label("default")
        .api_key("sk-test")
        .stream(stream)
        .sleep_with(|_| {})
        .build()
        .unwrap()
}

#[test]
fn finding21_a_redirect_names_where_it_points() {
    for status in [301, 302, 307, 308] {
        let server = Server::start(move |req| {
            if req.path.starts_with("/v2/") {
                Reply::completion("followed")
            } else {
                let port = req.header("host").unwrap_or_default().to_string();
                Reply::status(status, "")
                    .with_header("Location", &format!("http://{port}/v2/chat/completions"))
            }
        });
        let err = model(&server, false)
            .chat(&request(), &mut |_| {})
            .unwrap_err();
        let base = format!("http://127.0.0.1:{}/v2", server.port);
        assert!(
            err.to_string().contains(&format!(
                "http {status} from {}/chat/completions: the endpoint redirected to \
                 '{base}/chat/completions'; redirects are not followed: set the base URL to \
                 '{base}'",
                server.base_url()
            )),
            "{status}: {err}"
        );
        assert_eq!(server.requests(), 1, "{status}: not followed");
    }
}

#[test]
fn finding21_json_labelled_as_an_event_stream_is_named() {
    let server = Server::start(|_| match Reply::completion("hi") {
        Reply::Plain { body, .. } => Reply::Plain {
            status: 200,
            headers: vec![("Content-Type".into(), "text/event-stream".into())],
            body,
        },
        _ => unreachable!(),
    });
    let err = model(&server, true)
        .chat(&request(), &mut |_| {})
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the endpoint sent JSON labelled as an event stream"),
        "{err}"
    );
    assert!(err.to_string().contains("stream=false"), "{err}");
    assert_eq!(
        server.requests(),
        1,
        "not retried: the same answer would come"
    );
}
