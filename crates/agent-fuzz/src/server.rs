//! `server_bodies`: request bodies sent to the HTTP server's routes.

use agent_server::{ApiKeys, Server, hash_key};
use axum::body::Body;
use axum::http::{Method, Request, header};
use tower::ServiceExt;

use crate::agent::agent;
use crate::runtime::block_on;

const KEY: &str = "fuzz-key";

/// The routes a body is sent to (the first byte picks one), and the method.
const ROUTES: [(Method, &str); 5] = [
    (Method::POST, "/v1/chat/completions"),
    (Method::POST, "/v1/runs"),
    (Method::POST, "/v1/sessions"),
    (Method::POST, "/v1/sessions/not-a-session/resume"),
    (Method::GET, "/v1/sessions?"),
];

/// Sends `data` minus its first byte, which picks the route, to a server
/// with one key (as the body of a POST, as the query of a GET): the answer
/// is a success or a client error (4xx), never a server error, and a
/// streamed answer ends.
pub fn server_bodies(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let (method, path) = &ROUTES[usize::from(pick) % ROUTES.len()];
    let keys = match ApiKeys::from_hashes([hash_key(KEY)]) {
        Ok(keys) => keys,
        Err(error) => panic!("the fuzz key is refused: {error}"),
    };
    let router = Server::new(agent()).api_keys(keys).requests_per_minute(None).router();
    let (uri, body) = if *method == Method::GET {
        let query: String = url::form_urlencoded::byte_serialize(body).collect();
        (format!("{path}{query}"), Body::empty())
    } else {
        ((*path).to_owned(), Body::from(body.to_vec()))
    };
    let request = Request::builder()
        .method(method.clone())
        .uri(&uri)
        .header(header::AUTHORIZATION, format!("Bearer {KEY}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(body);
    let Ok(request) = request else {
        return;
    };
    let (status, answer) = block_on(async move {
        let response = match router.oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let status = response.status();
        let answer = axum::body::to_bytes(response.into_body(), 1 << 20).await;
        (status, answer)
    });
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => panic!("the answer to {method} {uri} ({status}) did not end: {error}"),
    };
    assert!(
        !status.is_server_error(),
        "{method} {uri} answered {status}: {}",
        String::from_utf8_lossy(&answer)
    );
}
