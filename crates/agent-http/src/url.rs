//! [`RequestUrl`]: where a request goes, as text or parsed once.

use agent_core::LlmError;
pub use reqwest::Url;

/// A request's URL. A provider whose endpoint is fixed parses it once
/// (`Url`) and pays no parse per request; text (`str`, `String`) is parsed
/// for each request, for URLs built per call.
pub trait RequestUrl {
    /// The URL to send to; a malformed one is an invalid request.
    fn request_url(&self) -> Result<Url, LlmError>;
}

impl RequestUrl for Url {
    fn request_url(&self) -> Result<Url, LlmError> {
        Ok(self.clone())
    }
}

impl RequestUrl for str {
    fn request_url(&self) -> Result<Url, LlmError> {
        parse_url(self)
    }
}

impl RequestUrl for String {
    fn request_url(&self) -> Result<Url, LlmError> {
        parse_url(self)
    }
}

/// `text` as a URL, or an invalid-request error naming what is wrong (not
/// the URL itself, whose query may hold a key).
pub fn parse_url(text: &str) -> Result<Url, LlmError> {
    Url::parse(text).map_err(|error| LlmError::invalid_request(format!("the request URL is not valid: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_parsed_urls_give_the_same_target() {
        let parsed = "http://127.0.0.1:8080/v1/chat".request_url();
        assert_eq!(parsed.as_ref().map(Url::as_str), Ok("http://127.0.0.1:8080/v1/chat"));
        let again = parsed.as_ref().map(RequestUrl::request_url);
        assert!(matches!(again, Ok(Ok(url)) if url.as_str() == "http://127.0.0.1:8080/v1/chat"));
    }

    #[test]
    fn a_malformed_url_is_an_invalid_request_that_does_not_repeat_it() {
        let error = "not a url ?key=secret".to_owned().request_url().err();
        let Some(error) = error else {
            panic!("a malformed URL was accepted");
        };
        assert_eq!(error.kind, agent_core::LlmErrorKind::InvalidRequest);
        assert!(error.message.contains("not valid"), "{}", error.message);
        assert!(!error.message.contains("secret"), "{}", error.message);
    }
}
