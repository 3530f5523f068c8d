//! The server on a real socket for the HTTP tests: started with two keys,
//! stopped through a channel.

#![allow(dead_code)]

use std::sync::Arc;

use agent_runner::Agent;
use agent_server::{ApiKeys, Server, hash_key};
use agent_testing::{ScriptedClient, response};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::oneshot;

pub const KEY: &str = "test-key-1";
pub const OTHER_KEY: &str = "test-key-2";

pub struct Running {
    pub base: String,
    pub http: reqwest::Client,
    pub stop: Option<oneshot::Sender<()>>,
    pub served: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    pub fn post(&self, path: &str, key: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let request = self.http.post(format!("{}{path}", self.base)).json(body);
        match key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    /// A `GET` with `key`, answered as JSON (`null` when it is not).
    pub async fn get_as(&self, path: &str, key: &str) -> (StatusCode, Value) {
        json_of(self.http.get(format!("{}{path}", self.base)).bearer_auth(key)).await
    }

    /// A `DELETE` with `key`.
    pub async fn delete_as(&self, path: &str, key: &str) -> StatusCode {
        let request = self.http.delete(format!("{}{path}", self.base)).bearer_auth(key);
        request.send().await.map_or_else(|e| panic!("{e}"), |r| r.status())
    }

    /// The body of a server-sent event stream, read to its end.
    pub async fn events_as(&self, path: &str, key: &str) -> (StatusCode, String) {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(key)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let status = response.status();
        (status, response.text().await.unwrap_or_default())
    }

    /// Signals shutdown and waits for `serve` to return.
    pub async fn stop(&mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.served).await.unwrap_or_else(|e| panic!("{e}"))
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

pub async fn start(agent: Agent, configure: impl FnOnce(Server) -> Server) -> Running {
    let keys = ApiKeys::from_hashes([hash_key(KEY), hash_key(OTHER_KEY)]).unwrap_or_else(|e| panic!("{e}"));
    let server = configure(Server::new(agent).api_keys(keys));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let address = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(server.serve(listener, async move {
        let _ = stopped.await;
    }));
    Running {
        base: format!("http://{address}"),
        http: reqwest::Client::new(),
        stop: Some(stop),
        served,
    }
}

pub fn chat(content: &str) -> Value {
    json!({"model": "agentry", "messages": [{"role": "user", "content": content}]})
}

pub fn answering(text: &str) -> Agent {
    Agent::builder(Arc::new(ScriptedClient::new().respond(response::text(text)))).build()
}

pub async fn json_of(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap_or_else(|e| panic!("{e}"));
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}
