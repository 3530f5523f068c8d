//! `url_policy`: which URLs the web tool's `fetch_url` may reach.

use std::net::IpAddr;
use std::sync::OnceLock;

use agent_tools_web::{UrlPolicy, WebConfig};
use url::{Host, Url};

/// Judges `data` (as UTF-8, lossily) as a URL for `fetch_url` under the
/// default policy and under one with an allow- and a denylist. A URL that
/// passes has an http(s) scheme and a host; an IP literal that passes the
/// default policy is a public address (judged here by the standard
/// library's own classification, not the policy's); one that passes the
/// listed policy, with its host name resolved to a public address off the
/// allowlist, is on the allowlist and off the denylist.
pub fn url_policy(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(url) = Url::parse(text.trim()) else {
        return;
    };
    let (open, listed) = policies();
    if open.check_url(&url).is_ok() {
        assert!(
            matches!(url.scheme(), "http" | "https"),
            "passed with scheme {}: {url}",
            url.scheme()
        );
        if let Some(address) = literal(&url) {
            assert!(is_public(address), "the non-public address {address} passed: {url}");
        }
    }
    if judge(listed, &url) {
        match url.host() {
            Some(Host::Domain(domain)) => {
                let domain = domain.trim_end_matches('.').to_ascii_lowercase();
                assert!(
                    domain == "example.com" || domain.ends_with(".example.com"),
                    "{domain} is not on the allowlist but passed: {url}"
                );
                assert!(
                    !(domain == "private.example.com" || domain.ends_with(".private.example.com")),
                    "{domain} is on the denylist but passed: {url}"
                );
            }
            Some(_) => {
                if let Some(address) = literal(&url) {
                    assert!(is_public(address), "the non-public address {address} passed: {url}");
                }
            }
            None => panic!("a URL without a host passed: {url}"),
        }
    }
}

/// Judges `url` as `fetch_url` does: checked, then a host name's addresses
/// (here one public address, as if resolved) checked.
fn judge(policy: &UrlPolicy, url: &Url) -> bool {
    const RESOLVED: [IpAddr; 1] = [IpAddr::V4(std::net::Ipv4Addr::new(8, 8, 8, 8))];
    if policy.check_url(url).is_err() {
        return false;
    }
    match url.host() {
        Some(Host::Domain(domain)) => policy.check_resolved(&domain.to_ascii_lowercase(), &RESOLVED).is_ok(),
        _ => true,
    }
}

fn policies() -> &'static (UrlPolicy, UrlPolicy) {
    static POLICIES: OnceLock<(UrlPolicy, UrlPolicy)> = OnceLock::new();
    POLICIES.get_or_init(|| {
        let listed = WebConfig {
            allowed_hosts: vec!["example.com".to_owned(), "93.184.215.0/24".to_owned()],
            denied_hosts: vec!["private.example.com".to_owned()],
            ..WebConfig::default()
        };
        match (
            UrlPolicy::from_config(&WebConfig::default()),
            UrlPolicy::from_config(&listed),
        ) {
            (Ok(open), Ok(listed)) => (open, listed),
            (Err(error), _) | (_, Err(error)) => panic!("the fuzz policies are invalid: {error}"),
        }
    })
}

/// The address of a URL whose host is an IP literal, IPv4-mapped IPv6 as IPv4.
fn literal(url: &Url) -> Option<IpAddr> {
    let address = match url.host()? {
        Host::Ipv4(v4) => IpAddr::V4(v4),
        Host::Ipv6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        Host::Domain(_) => return None,
    };
    Some(address)
}

/// Whether `address` is a public internet address, by the standard
/// library's classification (a second opinion on the policy's own table).
fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80)
        }
    }
}
