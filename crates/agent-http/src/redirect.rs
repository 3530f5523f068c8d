//! The redirect policy of every authenticated request: redirects within
//! the origin asked for are followed; one to another host, port or scheme
//! is refused with [`HttpError::CrossOriginRedirect`], so neither the
//! credentials (in whatever header) nor the request body reach it.
//!
//! reqwest itself only drops `Authorization` and `Cookie` on such a
//! redirect; keys in `api-key`, `x-api-key` or configured extra headers,
//! and the prompt of a 307/308, would go along.

use reqwest::Url;
use reqwest::redirect::{Attempt, Policy};

use crate::HttpError;

/// The most redirects followed within one origin.
pub(crate) const MAX_REDIRECTS: usize = 10;

/// Follows same-origin redirects (up to ten), refuses others with
/// [`HttpError::CrossOriginRedirect`]: the policy of every request that
/// carries credentials, for reqwest's async and blocking clients alike.
pub fn same_origin_only() -> Policy {
    Policy::custom(decide)
}

fn decide(attempt: Attempt<'_>) -> reqwest::redirect::Action {
    // The first URL is the one asked for; the others were redirects.
    let Some(first) = attempt.previous().first() else {
        return attempt.stop();
    };
    if attempt.url().origin() != first.origin() {
        let error = HttpError::CrossOriginRedirect {
            from: origin(first),
            to: origin(attempt.url()),
        };
        return attempt.error(error);
    }
    if attempt.previous().len() > MAX_REDIRECTS {
        return attempt.error(HttpError::TooManyRedirects { limit: MAX_REDIRECTS });
    }
    attempt.follow()
}

/// `scheme://host[:port]`: no user info, path or query, which may hold
/// tokens.
pub(crate) fn origin(url: &Url) -> String {
    let origin = url.origin();
    if origin.is_tuple() {
        origin.ascii_serialization()
    } else {
        format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn origins_leave_out_credentials_paths_and_queries() {
        assert_eq!(
            origin(&url("https://user:pw@api.example.com/v1/x?key=secret")),
            "https://api.example.com"
        );
        assert_eq!(origin(&url("http://127.0.0.2:8080/x")), "http://127.0.0.2:8080");
        assert_eq!(origin(&url("http://example.com:80/")), "http://example.com");
    }
}
