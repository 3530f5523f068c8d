//! Property tests of the URL [`UrlPolicy`]: random URLs built from schemes,
//! hosts written in every form a URL parser or resolver accepts (decimal,
//! octal and hex IPv4, short forms, IPv4 inside IPv6, full-width digits,
//! percent-encoding, trailing dots), user info, ports and paths. A URL whose
//! host is private, loopback, link-local or unspecified, or whose scheme is
//! not http(s), is never allowed unless the configuration says so; nothing
//! panics.
//!
//! A URL is judged the way `fetch_url` judges it: parsed, checked, and, for
//! a host name, its resolved addresses checked. Resolution is faked by a
//! table plus the lenient numeric parsing of `inet_aton`, so no test touches
//! the network.

#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use proptest::sample::select;
use url::{Host, Url};

use crate::policy::{HostPattern, UrlPolicy};

/// Whether the host as generated is public or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Private,
    Public,
}

/// A host written out, what it is, and whether it is written plainly
/// (so a public one must be allowed).
#[derive(Debug, Clone)]
struct HostCase {
    text: String,
    class: Class,
    plain: bool,
}

/// Judges `text` as `fetch_url` does (see `Fetcher::check`), with fake DNS.
fn judge(policy: &UrlPolicy, text: &str) -> Result<(), String> {
    let url = Url::parse(text.trim()).map_err(|error| error.to_string())?;
    policy.check_url(&url).map_err(|refusal| refusal.0)?;
    if let Some(Host::Domain(domain)) = url.host() {
        policy
            .check_resolved(&domain.to_ascii_lowercase(), &fake_resolve(domain))
            .map_err(|refusal| refusal.0)?;
    }
    Ok(())
}

/// A stand-in for the system resolver: a few known names, and numeric
/// names parsed the way `inet_aton` does.
fn fake_resolve(name: &str) -> Vec<IpAddr> {
    let name = name.to_ascii_lowercase();
    let name = name.strip_suffix('.').unwrap_or(&name);
    let v4 = |a, b, c, d| IpAddr::V4(Ipv4Addr::new(a, b, c, d));
    match name {
        "localhost" => vec![v4(127, 0, 0, 1), IpAddr::V6(Ipv6Addr::LOCALHOST)],
        "metadata.google.internal" => vec![v4(169, 254, 169, 254)],
        "db.internal.example" => vec![v4(10, 0, 0, 7)],
        "mixed.example" => vec![v4(93, 184, 216, 34), v4(192, 168, 0, 8)],
        "example.com" | "docs.rs" | "www.example.com" => vec![v4(93, 184, 216, 34)],
        other => inet_aton(other).map(IpAddr::V4).into_iter().collect(),
    }
}

/// `inet_aton`'s reading of 1 to 4 numbers in decimal, octal (leading 0)
/// or hex (leading 0x).
fn inet_aton(text: &str) -> Option<Ipv4Addr> {
    let parts: Vec<u64> = text
        .split('.')
        .map(|part| {
            if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
                u64::from_str_radix(hex, 16).ok()
            } else if part.len() > 1 && part.starts_with('0') {
                u64::from_str_radix(&part[1..], 8).ok()
            } else {
                part.parse().ok()
            }
        })
        .collect::<Option<_>>()?;
    let (last, first) = parts.split_last()?;
    if first.len() > 3 || first.iter().any(|&part| part > 255) || *last >= 1 << (8 * (4 - first.len())) {
        return None;
    }
    let high = first
        .iter()
        .enumerate()
        .fold(0u64, |acc, (i, &part)| acc | part << (24 - 8 * i));
    u32::try_from(high | last).ok().map(Ipv4Addr::from)
}

fn private_v4() -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>().prop_map(|x| 0x7f00_0000 | (x & 0x00ff_ffff)), // 127.0.0.0/8
        any::<u32>().prop_map(|x| 0x0a00_0000 | (x & 0x00ff_ffff)), // 10.0.0.0/8
        any::<u32>().prop_map(|x| 0xac10_0000 | (x & 0x000f_ffff)), // 172.16.0.0/12
        any::<u32>().prop_map(|x| 0xc0a8_0000 | (x & 0x0000_ffff)), // 192.168.0.0/16
        any::<u32>().prop_map(|x| 0xa9fe_0000 | (x & 0x0000_ffff)), // 169.254.0.0/16
        any::<u32>().prop_map(|x| x & 0x00ff_ffff),                 // 0.0.0.0/8
        Just(0u32),
        Just(0x7f00_0001u32),
        any::<u32>().prop_map(|x| 0x6440_0000 | (x & 0x003f_ffff)), // 100.64.0.0/10
        any::<u32>().prop_map(|x| 0xe000_0000 | (x & 0x1fff_ffff)), // 224.0.0.0/3
    ]
}

fn public_v4() -> impl Strategy<Value = u32> {
    select(vec![
        [8, 8, 8, 8],
        [1, 1, 1, 1],
        [93, 184, 216, 34],
        [172, 32, 0, 1],
        [100, 128, 0, 1],
        [11, 0, 0, 1],
        [198, 20, 0, 1],
        [223, 255, 255, 254],
    ])
    .prop_map(u32::from_be_bytes)
}

/// A number in radix `style`: 0 decimal, 1 octal, 2 hex, 3 upper-case hex.
fn number(value: u32, style: u8) -> String {
    match style % 4 {
        0 => value.to_string(),
        1 if value == 0 => "0".to_owned(),
        1 => format!("0{value:o}"),
        2 => format!("0x{value:x}"),
        _ => format!("0X{value:X}"),
    }
}

/// `address` as 1 to 4 dot-separated numbers, each in its own radix.
fn render_v4(address: u32, parts: u8, styles: [u8; 4]) -> String {
    let [a, b, c, d] = address.to_be_bytes().map(u32::from);
    let numbers = match parts % 4 {
        0 => vec![address],
        1 => vec![a, address & 0x00ff_ffff],
        2 => vec![a, b, address & 0xffff],
        _ => vec![a, b, c, d],
    };
    numbers
        .iter()
        .zip(styles)
        .map(|(&value, style)| number(value, style))
        .collect::<Vec<_>>()
        .join(".")
}

/// ASCII letters and digits in their full-width forms, dots as ideographic
/// or full-width full stops: IDNA maps them back.
fn full_width(text: &str, dot: u8) -> String {
    text.chars()
        .map(|c| match c {
            '.' => ['\u{3002}', '\u{ff0e}', '\u{ff61}', '.'][usize::from(dot % 4)],
            c if c.is_ascii_alphanumeric() => char::from_u32(u32::from(c) - 0x21 + 0xff01).unwrap_or(c),
            c => c,
        })
        .collect()
}

/// Percent-encodes the characters of `text` picked by `mask`.
fn percent_encode(text: &str, mask: u64) -> String {
    text.chars()
        .enumerate()
        .map(|(i, c)| {
            let mut buffer = [0u8; 4];
            if mask >> (i % 64) & 1 == 1 {
                c.encode_utf8(&mut buffer)
                    .bytes()
                    .fold(String::new(), |mut encoded, byte| {
                        let _ = write!(encoded, "%{byte:02X}");
                        encoded
                    })
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A non-bracketed IPv4 host in one of its many spellings.
fn spelled_v4(address: impl Strategy<Value = u32>, class: Class) -> impl Strategy<Value = HostCase> {
    (address, any::<u8>(), any::<[u8; 4]>(), any::<u8>(), any::<u64>()).prop_map(
        move |(address, parts, styles, twist, mask)| {
            let dotted = parts % 4 == 3 && styles.iter().all(|style| style % 4 == 0);
            let mut text = render_v4(address, parts, styles);
            match twist % 6 {
                0 => text.push('.'),
                1 => text = full_width(&text, twist / 6),
                2 => text = percent_encode(&text, mask),
                _ => {}
            }
            HostCase {
                text,
                class,
                plain: dotted && twist % 6 >= 3,
            }
        },
    )
}

/// An IPv4 address inside an IPv6 literal: mapped, compatible, NAT64,
/// translated, 6to4.
fn embedded_v4() -> impl Strategy<Value = HostCase> {
    (private_v4(), any::<u8>(), any::<bool>()).prop_map(|(address, form, upper)| {
        let dotted = Ipv4Addr::from(address).to_string();
        let (high, low) = (address >> 16, address & 0xffff);
        let text = match form % 8 {
            0 => format!("[::ffff:{dotted}]"),
            1 => format!("[::ffff:{high:x}:{low:x}]"),
            2 => format!("[0:0:0:0:0:ffff:{dotted}]"),
            3 => format!("[::{dotted}]"),
            4 => format!("[64:ff9b::{dotted}]"),
            5 => format!("[::ffff:0:{dotted}]"),
            6 => format!("[2002:{high:x}:{low:x}::1]"),
            _ => format!("[0000:0000:0000:0000:0000:FFFF:{high:04x}:{low:04x}]"),
        };
        HostCase {
            text: if upper { text.to_ascii_uppercase() } else { text },
            class: Class::Private,
            plain: false,
        }
    })
}

fn private_v6() -> impl Strategy<Value = HostCase> {
    let address = prop_oneof![
        Just(0u128),
        Just(1u128),
        any::<u128>().prop_map(|x| (0xfe80u128 << 112) | (x & ((1 << 118) - 1))), // fe80::/10
        any::<u128>().prop_map(|x| (0xfc00u128 << 112) | (x & ((1 << 121) - 1))), // fc00::/7
        any::<u128>().prop_map(|x| (0xfec0u128 << 112) | (x & ((1 << 118) - 1))), // fec0::/10
        any::<u128>().prop_map(|x| (0xff00u128 << 112) | (x & ((1 << 120) - 1))), // ff00::/8
    ];
    (address, any::<bool>(), any::<bool>()).prop_map(|(address, expanded, upper)| {
        let address = Ipv6Addr::from(address);
        let text = if expanded {
            address.segments().map(|segment| format!("{segment:04x}")).join(":")
        } else {
            address.to_string()
        };
        let text = format!("[{text}]");
        HostCase {
            text: if upper { text.to_ascii_uppercase() } else { text },
            class: Class::Private,
            plain: !upper,
        }
    })
}

fn names() -> impl Strategy<Value = HostCase> {
    select(vec![
        ("localhost", Class::Private),
        ("LocalHost", Class::Private),
        ("localhost.", Class::Private),
        ("metadata.google.internal", Class::Private),
        ("db.internal.example", Class::Private),
        ("mixed.example", Class::Private),
        ("example.com", Class::Public),
        ("docs.rs", Class::Public),
        ("WWW.Example.com", Class::Public),
    ])
    .prop_map(|(name, class)| HostCase {
        text: name.to_owned(),
        class,
        plain: true,
    })
}

fn public_literals() -> impl Strategy<Value = HostCase> {
    prop_oneof![
        spelled_v4(public_v4(), Class::Public),
        select(vec![
            "[2606:4700::1111]",
            "[2a00:1450:4001::200e]",
            "[2001:4860:4860::8888]"
        ])
        .prop_map(|text| {
            HostCase {
                text: text.to_owned(),
                class: Class::Public,
                plain: true,
            }
        }),
    ]
}

fn host() -> impl Strategy<Value = HostCase> {
    prop_oneof![
        3 => spelled_v4(private_v4(), Class::Private),
        2 => embedded_v4(),
        2 => private_v6(),
        2 => names(),
        2 => public_literals(),
    ]
}

/// A URL around `host`, and whether it is written plainly (standard
/// separator, valid port).
fn url_around(host: HostCase) -> impl Strategy<Value = (String, String, HostCase, bool)> {
    let scheme = select(vec![
        "http",
        "https",
        "HTTP",
        "HtTpS",
        "file",
        "ftp",
        "data",
        "javascript",
        "gopher",
        "ws",
    ]);
    let separator = select(vec!["://", "://", "://", ":/", ":", ":\\\\", ":///"]);
    let userinfo = select(vec![
        "",
        "",
        "user@",
        "user:pass@",
        "8.8.8.8@",
        "example.com@",
        "a%40b:c@",
    ]);
    let port = select(vec![
        ("", true),
        (":80", true),
        (":8080", true),
        (":0", true),
        (":99999", false),
    ]);
    let path = select(vec![
        "",
        "/",
        "/a/b?c=d#e",
        "/%2e%2e/x",
        "/@8.8.8.8",
        "\\@example.com",
        "#@8.8.8.8",
    ]);
    (scheme, separator, userinfo, port, path).prop_map(move |(scheme, separator, userinfo, (port, valid), path)| {
        let text = match (scheme, separator) {
            ("data", ":") => format!("data:text/html,<a href=http://{}/>", host.text),
            ("javascript", ":") => format!("javascript:fetch('http://{}/')", host.text),
            _ => format!("{scheme}{separator}{userinfo}{}{port}{path}", host.text),
        };
        let plain = separator == "://" && valid && host.plain;
        (text, scheme.to_ascii_lowercase(), host.clone(), plain)
    })
}

fn any_url() -> impl Strategy<Value = (String, String, HostCase, bool)> {
    host().prop_flat_map(url_around)
}

/// Policies without `allow_private_addresses`: lists of public hosts only.
fn strict_policy() -> impl Strategy<Value = UrlPolicy> {
    let allowed = proptest::collection::vec(
        select(vec!["example.com", "docs.rs", "8.8.8.0/24", "*.example.com"]),
        0..3,
    );
    let denied = proptest::collection::vec(select(vec!["evil.example", "1.1.1.1", "2001:db8::/32"]), 0..2);
    (allowed, denied).prop_map(|(allowed, denied)| UrlPolicy {
        allowed: allowed.iter().map(|p| HostPattern::parse(p).unwrap()).collect(),
        denied: denied.iter().map(|p| HostPattern::parse(p).unwrap()).collect(),
        allow_private_addresses: false,
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 4096,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn private_hosts_and_other_schemes_are_never_allowed(
        (text, scheme, host, _plain) in any_url(),
        policy in strict_policy(),
    ) {
        let verdict = judge(&policy, &text);
        if host.class == Class::Private {
            prop_assert!(verdict.is_err(), "{text} was allowed; its host is not public");
        }
        if scheme != "http" && scheme != "https" {
            prop_assert!(verdict.is_err(), "{text} was allowed with the scheme {scheme}");
        }
    }

    #[test]
    fn plain_public_http_urls_are_allowed_by_default((text, scheme, host, plain) in any_url()) {
        let verdict = judge(&UrlPolicy::default(), &text);
        if plain && host.class == Class::Public && (scheme == "http" || scheme == "https") {
            prop_assert!(verdict.is_ok(), "{text} was refused: {verdict:?}");
        }
    }

    #[test]
    fn allowing_private_addresses_never_allows_other_schemes((text, scheme, host, plain) in any_url()) {
        let policy = UrlPolicy { allow_private_addresses: true, ..UrlPolicy::default() };
        let verdict = judge(&policy, &text);
        if scheme != "http" && scheme != "https" {
            prop_assert!(verdict.is_err(), "{text} was allowed with the scheme {scheme}");
        } else if plain {
            prop_assert!(verdict.is_ok(), "{text} was refused though private addresses are allowed ({:?}): {verdict:?}", host.class);
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,80}", prefix in select(vec!["http://", "https://", "", "http://[", "http://0x"])) {
        let _ = judge(&UrlPolicy::default(), &format!("{prefix}{text}"));
    }
}

#[test]
fn the_fake_resolver_reads_numbers_like_inet_aton() {
    assert_eq!(inet_aton("127.1"), Some(Ipv4Addr::LOCALHOST));
    assert_eq!(inet_aton("0x7f.1"), Some(Ipv4Addr::LOCALHOST));
    assert_eq!(inet_aton("2130706433"), Some(Ipv4Addr::LOCALHOST));
    assert_eq!(inet_aton("0177.0.0.01"), Some(Ipv4Addr::LOCALHOST));
    assert_eq!(inet_aton("256.0.0.1"), None);
    assert_eq!(inet_aton("example"), None);
    assert_eq!(render_v4(0x7f00_0001, 1, [2, 0, 0, 0]), "0x7f.1");
    assert_eq!(render_v4(0x7f00_0001, 3, [1, 0, 0, 0]), "0177.0.0.1");
}
