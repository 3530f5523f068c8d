//! Which URLs `fetch_url` may reach: the scheme, the host allow- and
//! denylists, and the addresses the host resolves to (no loopback,
//! private, link-local or other non-global ranges unless allowed), to
//! prevent server-side request forgery.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

use crate::{WebConfig, WebError};

/// Why a URL or address is refused, for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

/// A host pattern from the allow- or denylist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostPattern {
    /// A domain name: matches itself and its subdomains.
    Domain(String),
    /// An address range (a single address is a /32 or /128).
    Network { address: IpAddr, prefix: u8 },
}

impl HostPattern {
    /// Parses `example.com`, `*.example.com`, `.example.com`, `10.1.2.3`,
    /// `::1`, `[::1]` or `10.0.0.0/8`.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let unbracketed = text.trim_start_matches('[').trim_end_matches(']');
        if let Some((address, prefix)) = text.split_once('/') {
            let address: IpAddr = address
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .map_err(|_| format!("{text:?} is not a CIDR range such as 10.0.0.0/8"))?;
            let max = if address.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = prefix
                .parse()
                .ok()
                .filter(|&prefix| prefix <= max)
                .ok_or_else(|| format!("{text:?} has a prefix length outside 0..={max}"))?;
            return Ok(Self::Network { address, prefix });
        }
        if let Ok(address) = unbracketed.parse::<IpAddr>() {
            let prefix = if address.is_ipv4() { 32 } else { 128 };
            return Ok(Self::Network { address, prefix });
        }
        let domain = text
            .trim_start_matches("*.")
            .trim_start_matches('.')
            .trim_end_matches('.');
        if domain.is_empty() || domain.contains(['/', ':', '*', ' ']) {
            return Err(format!("{text:?} is not a host name, an IP address or a CIDR range"));
        }
        Ok(Self::Domain(domain.to_ascii_lowercase()))
    }

    fn matches_domain(&self, host: &str) -> bool {
        match self {
            Self::Domain(domain) => {
                host == domain
                    || host
                        .strip_suffix(domain.as_str())
                        .is_some_and(|prefix| prefix.ends_with('.'))
            }
            Self::Network { .. } => false,
        }
    }

    fn matches_address(&self, candidate: IpAddr) -> bool {
        let Self::Network { address, prefix } = *self else {
            return false;
        };
        match (address, canonical(candidate)) {
            (IpAddr::V4(network), IpAddr::V4(candidate)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
                u32::from(network) & mask == u32::from(candidate) & mask
            }
            (IpAddr::V6(network), IpAddr::V6(candidate)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
                u128::from(network) & mask == u128::from(candidate) & mask
            }
            _ => false,
        }
    }
}

/// The rules `fetch_url` follows: which schemes, hosts and addresses a URL
/// may reach. Public so that a URL can be judged before it is handed to
/// the tool, and fuzzed; `fetch_url` checks every URL and redirect with it.
///
/// ```
/// use agent_tools_web::{UrlPolicy, WebConfig};
///
/// let policy = UrlPolicy::from_config(&WebConfig::default())?;
/// let metadata = url::Url::parse("http://169.254.169.254/latest/")?;
/// assert!(policy.check_url(&metadata).is_err());
/// let public = url::Url::parse("https://example.com/")?;
/// assert!(policy.check_url(&public).is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct UrlPolicy {
    pub(crate) allowed: Vec<HostPattern>,
    pub(crate) denied: Vec<HostPattern>,
    pub(crate) allow_private_addresses: bool,
}

impl UrlPolicy {
    /// The policy `config`'s `allowed_hosts`, `denied_hosts` and
    /// `allow_private_addresses` describe.
    ///
    /// # Errors
    ///
    /// [`WebError::Config`] naming a host pattern that is not a host name,
    /// an IP address or a CIDR range.
    pub fn from_config(config: &WebConfig) -> Result<Self, WebError> {
        let parse = |patterns: &[String]| -> Result<Vec<HostPattern>, WebError> {
            patterns
                .iter()
                .map(|pattern| HostPattern::parse(pattern).map_err(WebError::Config))
                .collect()
        };
        Ok(Self {
            allowed: parse(&config.allowed_hosts)?,
            denied: parse(&config.denied_hosts)?,
            allow_private_addresses: config.allow_private_addresses,
        })
    }

    /// Checks everything that can be known before resolving the host: the
    /// scheme, the lists, and the address when the host is an IP literal.
    /// A host name's addresses are checked next, by [`check_resolved`](Self::check_resolved).
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal(format!(
                "refused: only http and https URLs can be fetched, not {}:",
                url.scheme()
            )));
        }
        match url.host() {
            None => Err(Refusal(format!("refused: the URL {url} has no host"))),
            Some(Host::Domain(domain)) => {
                let domain = domain.trim_end_matches('.').to_ascii_lowercase();
                if self.denied.iter().any(|pattern| pattern.matches_domain(&domain)) {
                    return Err(Refusal(format!("refused: the host {domain} is on the denylist")));
                }
                let may_match_by_address = self
                    .allowed
                    .iter()
                    .any(|pattern| matches!(pattern, HostPattern::Network { .. }));
                if !self.allowed.is_empty()
                    && !may_match_by_address
                    && !self.allowed.iter().any(|pattern| pattern.matches_domain(&domain))
                {
                    return Err(Refusal(format!(
                        "refused: {domain} is not on the allowlist of hosts this agent may fetch"
                    )));
                }
                // The addresses it resolves to are checked next.
                Ok(())
            }
            Some(Host::Ipv4(address)) => self.check_address(&url_host(url), IpAddr::V4(address), true),
            Some(Host::Ipv6(address)) => self.check_address(&url_host(url), IpAddr::V6(address), true),
        }
    }

    /// Checks the addresses a host resolved to: every one must pass.
    pub fn check_resolved(&self, host: &str, addresses: &[IpAddr]) -> Result<(), Refusal> {
        if addresses.is_empty() {
            return Err(Refusal(format!("the host {host} did not resolve to any address")));
        }
        let host_allowed = self.allowed.iter().any(|pattern| pattern.matches_domain(host));
        for &address in addresses {
            self.check_address(host, address, !host_allowed)?;
        }
        Ok(())
    }

    /// Checks one address of `host`. `needs_listing`: when an allowlist is
    /// set, the address itself must be on it (the host name was not).
    fn check_address(&self, host: &str, address: IpAddr, needs_listing: bool) -> Result<(), Refusal> {
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        let subject = if literal.parse::<IpAddr>().is_ok() {
            format!("{address} is")
        } else {
            format!("{host} resolves to {address}, which is")
        };
        if self.denied.iter().any(|pattern| pattern.matches_address(address)) {
            return Err(Refusal(format!("refused: {subject} on the denylist")));
        }
        let listed = self.allowed.iter().any(|pattern| pattern.matches_address(address));
        if let Some(kind) = non_global(address)
            && !(self.allow_private_addresses || listed)
        {
            return Err(Refusal(format!(
                "refused: {subject} a {kind} address; only public internet addresses can be fetched"
            )));
        }
        if needs_listing && !self.allowed.is_empty() && !listed {
            return Err(Refusal(format!(
                "refused: {host} is not on the allowlist of hosts this agent may fetch"
            )));
        }
        Ok(())
    }
}

/// The host as written in the URL (IPv6 in brackets).
fn url_host(url: &Url) -> String {
    url.host_str().unwrap_or_default().to_owned()
}

/// An IPv4-mapped IPv6 address as the IPv4 address it stands for.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        IpAddr::V4(_) => address,
    }
}

/// What kind of non-global address this is, or `None` for a public one.
pub(crate) fn non_global(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(v4) => non_global_v4(v4),
        IpAddr::V6(v6) => non_global_v6(v6),
    }
}

fn non_global_v4(address: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = address.octets();
    let kind = match (a, b, c) {
        (0, _, _) => "\"this network\" (0.0.0.0/8)",
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => "private network",
        (100, 64..=127, _) => "carrier-grade NAT (shared)",
        (127, _, _) => "loopback",
        (169, 254, _) => "link-local",
        (192, 0, 0) => "IETF protocol assignment",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation (TEST-NET)",
        (192, 88, 99) => "6to4 relay anycast",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved or broadcast",
        _ => return None,
    };
    Some(kind)
}

fn non_global_v6(address: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = address.to_ipv4_mapped() {
        return non_global_v4(v4);
    }
    let segments = address.segments();
    let kind = match segments {
        [0, 0, 0, 0, 0, 0, 0, 0] => "unspecified",
        [0, 0, 0, 0, 0, 0, 0, 1] => "loopback",
        [0, 0, 0, 0, 0, 0, _, _] => "IPv4-compatible (deprecated)",
        [0, 0, 0, 0, 0xffff, 0, _, _] => "IPv4-translated (::ffff:0:0/96)",
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => {
            // NAT64: judge the IPv4 address it translates to.
            let [_, _, _, _, _, _, high, low] = segments;
            let v4 = Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
            return non_global_v4(v4).map(|_| "NAT64 to a non-global IPv4");
        }
        [0x64, 0xff9b, 1, ..] => "local-use NAT64",
        [0x100, 0, 0, 0, ..] => "discard-only",
        [0x2001, 0xdb8, ..] | [0x3fff, 0..=0x0fff, ..] => "documentation",
        [0x2001, 0..=0x1ff, ..] => "IETF protocol assignment (Teredo and others)",
        [0x2002, ..] => "6to4",
        [0x5f00, ..] => "segment routing",
        [first, ..] if first & 0xfe00 == 0xfc00 => "unique local (private)",
        [first, ..] if first & 0xffc0 == 0xfe80 => "link-local",
        [first, ..] if first & 0xffc0 == 0xfec0 => "site-local (deprecated)",
        [first, ..] if first & 0xff00 == 0xff00 => "multicast",
        // Only 2000::/3 holds global unicast addresses; the rest is reserved
        // or special, and some of it embeds IPv4 addresses.
        [first, ..] if first & 0xe000 != 0x2000 => "reserved (outside the global unicast range 2000::/3)",
        _ => return None,
    };
    Some(kind)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn non_global_ranges_are_recognised() {
        for address in [
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "127.0.0.1",
            "127.255.255.254",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "::ffff:0:127.0.0.1",
            "::ffff:0:8.8.8.8",
            "::1:0:0:1",
            "1::1",
            "4000::1",
            "64:ff9b::10.0.0.1",
            "64:ff9b:1::1",
            "100::1",
            "2001::1",
            "2001:db8::1",
            "2002:7f00:1::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
        ] {
            assert!(non_global(ip(address)).is_some(), "{address} should be non-global");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
        ] {
            assert_eq!(non_global(ip(address)), None, "{address} should be global");
        }
    }

    #[test]
    fn patterns_parse_and_match() {
        let domain = HostPattern::parse("*.Example.com").unwrap();
        assert!(domain.matches_domain("example.com"));
        assert!(domain.matches_domain("docs.example.com"));
        assert!(!domain.matches_domain("badexample.com"));
        let network = HostPattern::parse("10.0.0.0/8").unwrap();
        assert!(network.matches_address(ip("10.20.30.40")));
        assert!(network.matches_address(ip("::ffff:10.0.0.1")));
        assert!(!network.matches_address(ip("11.0.0.1")));
        let single = HostPattern::parse("[::1]").unwrap();
        assert!(single.matches_address(ip("::1")));
        let everything = HostPattern::parse("0.0.0.0/0").unwrap();
        assert!(everything.matches_address(ip("8.8.8.8")));
        assert!(HostPattern::parse("10.0.0.0/33").is_err());
        assert!(HostPattern::parse("http://x").is_err());
    }

    #[test]
    fn policy_refuses_schemes_and_private_literals() {
        let policy = UrlPolicy::default();
        let check = |url: &str| policy.check_url(&Url::parse(url).unwrap());
        assert!(check("https://example.com/").is_ok());
        assert!(
            check("ftp://example.com/")
                .unwrap_err()
                .0
                .contains("only http and https")
        );
        assert!(
            check("file:///etc/passwd")
                .unwrap_err()
                .0
                .contains("only http and https")
        );
        assert!(check("http://127.0.0.1:8080/").unwrap_err().0.contains("loopback"));
        assert!(check("http://2130706433/").unwrap_err().0.contains("loopback"));
        assert!(check("http://[::ffff:7f00:1]/").unwrap_err().0.contains("loopback"));
        // Found by the property test: IPv4-translated addresses were taken
        // for public ones.
        assert!(
            check("http://[::ffff:0:127.0.0.1]/")
                .unwrap_err()
                .0
                .contains("IPv4-translated")
        );
        assert!(
            check("http://169.254.169.254/latest/meta-data/")
                .unwrap_err()
                .0
                .contains("link-local")
        );
        assert!(check("http://8.8.8.8/").is_ok());
    }

    #[test]
    fn lists_apply_to_names_and_addresses() {
        let policy = UrlPolicy {
            allowed: vec![
                HostPattern::parse("example.com").unwrap(),
                HostPattern::parse("127.0.0.1").unwrap(),
            ],
            denied: vec![HostPattern::parse("secret.example.com").unwrap()],
            allow_private_addresses: false,
        };
        let check = |url: &str| policy.check_url(&Url::parse(url).unwrap());
        assert!(check("http://127.0.0.1:9000/").is_ok());
        assert!(check("http://127.0.0.2/").unwrap_err().0.contains("loopback"));
        assert!(check("http://8.8.4.4/").unwrap_err().0.contains("not on the allowlist"));
        assert!(check("https://secret.example.com/").unwrap_err().0.contains("denylist"));
        assert!(
            policy
                .check_resolved("docs.example.com", &[ip("93.184.216.34")])
                .is_ok()
        );
        assert!(policy.check_resolved("docs.example.com", &[ip("10.0.0.1")]).is_err());
        assert!(policy.check_resolved("other.org", &[ip("93.184.216.34")]).is_err());
        assert!(policy.check_resolved("nowhere.example.com", &[]).is_err());
    }
}
