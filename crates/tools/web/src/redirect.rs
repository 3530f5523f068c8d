//! The search client's redirect policy: redirects are followed (up to a
//! few) only within the origin of the request; one to another host, port
//! or scheme is refused, because reqwest would carry custom headers such as
//! Brave's `X-Subscription-Token` along (it drops only `Authorization` and
//! `Cookie`).
//!
//! `fetch_url` does not use this: it sends no credentials, and follows
//! redirects by hand under its URL policy.

use reqwest::Url;
use reqwest::redirect::{Action, Attempt, Policy};

/// The most redirects followed within one origin.
const MAX_REDIRECTS: usize = 3;

/// A redirect the search client refused to follow. Names origins only: no
/// path or query (which may carry the query or tokens), never a header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RedirectRefused {
    /// To another origin.
    #[error("{from} redirected to {to}, another origin")]
    CrossOrigin {
        /// The origin of the request.
        from: String,
        /// The origin redirected to.
        to: String,
    },
    /// Too many redirects within the origin.
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooMany,
}

/// Follows same-origin redirects (up to [`MAX_REDIRECTS`]), refuses others.
pub(crate) fn same_origin_only() -> Policy {
    Policy::custom(decide)
}

fn decide(attempt: Attempt<'_>) -> Action {
    // The first URL is the one asked for; the others were redirects.
    let Some(first) = attempt.previous().first() else {
        return attempt.stop();
    };
    if attempt.url().origin() != first.origin() {
        let refused = RedirectRefused::CrossOrigin {
            from: origin(first),
            to: origin(attempt.url()),
        };
        return attempt.error(refused);
    }
    if attempt.previous().len() > MAX_REDIRECTS {
        return attempt.error(RedirectRefused::TooMany);
    }
    attempt.follow()
}

/// `scheme://host[:port]`.
fn origin(url: &Url) -> String {
    let origin = url.origin();
    if origin.is_tuple() {
        origin.ascii_serialization()
    } else {
        format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default())
    }
}

/// The refusal among the causes of `error`, if that is why it failed.
pub(crate) fn refusal_in(error: &reqwest::Error) -> Option<&RedirectRefused> {
    let mut cause = std::error::Error::source(error);
    while let Some(current) = cause {
        if let Some(refused) = current.downcast_ref::<RedirectRefused>() {
            return Some(refused);
        }
        cause = current.source();
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn origins_leave_out_paths_queries_and_credentials() {
        let url = Url::parse("https://user:pw@api.search.brave.com/res/v1/web/search?q=secret").unwrap();
        assert_eq!(origin(&url), "https://api.search.brave.com");
        assert_eq!(
            origin(&Url::parse("http://127.0.0.2:8080/x").unwrap()),
            "http://127.0.0.2:8080"
        );
    }
}
