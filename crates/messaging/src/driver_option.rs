//! Driver settings by name, as `aeronmd` takes them from the environment and the probe's
//! `--driver-opt KEY=VALUE`: [`DriverOption::parse`] checks a name and value before anything
//! starts, [`EmbeddedDriverBuilder::option`](crate::EmbeddedDriverBuilder::option) applies it
//! after the environment (so an option wins over `AERON_*`, as a builder setter does).

use std::fmt;

/// How a setting's value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A duration: a number with `ns`, `us`, `ms` or `s` (a bare number is ns, as in Aeron).
    Duration,
    /// Bytes, with optional `k`, `m`, `g` (binary).
    Size,
    /// A plain count.
    Count,
    /// `SHARED`, `SHARED_NETWORK` or `DEDICATED`.
    Threading,
}

/// The settings an option may name: Aeron's property names.
const SETTINGS: [(&str, Kind); 15] = [
    ("aeron.nak.multicast.max.backoff", Kind::Duration),
    ("aeron.nak.multicast.group.size", Kind::Count),
    ("aeron.nak.unicast.delay", Kind::Duration),
    ("aeron.nak.unicast.retry.delay.ratio", Kind::Count),
    ("aeron.retransmit.unicast.linger", Kind::Duration),
    ("aeron.socket.so_rcvbuf", Kind::Size),
    ("aeron.socket.so_sndbuf", Kind::Size),
    ("aeron.rcv.initial.window.length", Kind::Size),
    ("aeron.mtu.length", Kind::Size),
    ("aeron.ipc.mtu.length", Kind::Size),
    ("aeron.term.buffer.length", Kind::Size),
    ("aeron.ipc.term.buffer.length", Kind::Size),
    ("aeron.publication.linger.timeout", Kind::Duration),
    ("aeron.threading.mode", Kind::Threading),
    ("aeron.file.page.size", Kind::Size),
];

/// `aeron.nak.unicast.delay` -> `AERON_NAK_UNICAST_DELAY`.
#[must_use]
pub fn env_name(property: &str) -> String {
    property.replace('.', "_").to_ascii_uppercase()
}

/// One driver setting, checked: its Aeron property name and its value in Aeron's units (ns for
/// durations, bytes for sizes).
///
/// Guarantees: only settings the embedded driver can apply parse; a bad name or value is one
/// sentence that lists the names or gives an example; the driver applies it after `AERON_*`
/// and reads it back in [`DriverSettings`] (feature `embedded-driver`).
///
/// ```
/// # #[cfg(feature = "embedded-driver")]
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use messaging::{DriverOption, EmbeddedDriver};
/// let backoff = DriverOption::parse("aeron.nak.multicast.max.backoff", "500us")?;
/// let linger = DriverOption::parse("AERON_RETRANSMIT_UNICAST_LINGER", "2ms")?;
/// assert!(DriverOption::parse("aeron.nak.bogus", "1").is_err());
/// let driver = EmbeddedDriver::builder()
///     .private_dir()
///     .ipc_term_length(64 * 1024)
///     .option(backoff)
///     .option(linger)
///     .spawn()?;
/// assert_eq!(driver.settings().nak_multicast_max_backoff_ns, 500_000);
/// assert_eq!(driver.settings().retransmit_unicast_linger_ns, 2_000_000);
/// # Ok(()) }
/// # #[cfg(not(feature = "embedded-driver"))]
/// # fn main() {}
/// ```
///
#[cfg_attr(feature = "embedded-driver", doc = "[`DriverSettings`]: crate::DriverSettings")]
#[cfg_attr(not(feature = "embedded-driver"), doc = "[`DriverSettings`]: crate#features")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverOption {
    property: &'static str,
    value: OptionValue,
    given: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OptionValue {
    Number(u64),
    Threading(&'static str),
}

impl DriverOption {
    /// Checks `key` (a property name such as `aeron.nak.unicast.delay`, with or without
    /// `aeron.`, or its variable `AERON_NAK_UNICAST_DELAY`) and `value`.
    ///
    /// # Errors
    /// One sentence: the name is not one of the settings an option may set (listing them), or
    /// the value does not parse for it (with an example).
    pub fn parse(key: &str, value: &str) -> Result<DriverOption, String> {
        let k = key.trim();
        let found = SETTINGS
            .iter()
            .find(|(p, _)| *p == k || p.strip_prefix("aeron.") == Some(k) || env_name(p) == k);
        let Some(&(property, kind)) = found else {
            let names: Vec<&str> = SETTINGS.iter().map(|(p, _)| *p).collect();
            return Err(format!(
                "{key}: not a driver setting an option can set; use one of {} (others: set AERON_* in the \
                 environment, which the embedded driver reads when it starts)",
                names.join(", ")
            ));
        };
        let v = value.trim();
        let parsed = match kind {
            Kind::Duration => parse_duration(v).map(OptionValue::Number),
            Kind::Size => parse_size(v).map(OptionValue::Number),
            Kind::Count => v.parse::<u64>().ok().map(OptionValue::Number),
            Kind::Threading => ["SHARED", "SHARED_NETWORK", "DEDICATED"]
                .into_iter()
                .find(|m| m.eq_ignore_ascii_case(v))
                .map(OptionValue::Threading),
        };
        let example = match kind {
            Kind::Duration => "a duration such as 500us, 2ms or 1000000 (ns)",
            Kind::Size => "bytes such as 131072, 128k or 4m",
            Kind::Count => "a whole number",
            Kind::Threading => "SHARED, SHARED_NETWORK or DEDICATED",
        };
        let parsed = parsed.ok_or_else(|| format!("{key}={value}: {property} takes {example}"))?;
        Ok(DriverOption {
            property,
            value: parsed,
            given: format!("{key}={value}"),
        })
    }

    /// The Aeron property name it sets.
    #[must_use]
    pub fn property(&self) -> &'static str {
        self.property
    }

    // Read by the embedded driver only.
    #[cfg_attr(not(feature = "embedded-driver"), allow(dead_code))]
    pub(crate) fn value(&self) -> &OptionValue {
        &self.value
    }
}

impl fmt::Display for DriverOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.given)
    }
}

fn parse_duration(v: &str) -> Option<u64> {
    let (num, mult) = [("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000)]
        .into_iter()
        .find_map(|(u, m)| v.strip_suffix(u).map(|n| (n, m)))
        .unwrap_or((v, 1));
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// Bytes as Aeron's driver reads them ([`parse_bytes`](crate::channel::parse_bytes)).
fn parse_size(v: &str) -> Option<u64> {
    crate::channel::parse_bytes(v).and_then(|n| u64::try_from(n).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_take_the_property_the_short_form_or_the_variable() {
        for key in [
            "aeron.nak.unicast.delay",
            "nak.unicast.delay",
            "AERON_NAK_UNICAST_DELAY",
        ] {
            let o = DriverOption::parse(key, "2ms").unwrap();
            assert_eq!(o.property(), "aeron.nak.unicast.delay");
            assert_eq!(o.value(), &OptionValue::Number(2_000_000));
        }
        assert_eq!(
            DriverOption::parse("aeron.socket.so_rcvbuf", "128k").unwrap().value(),
            &OptionValue::Number(131_072)
        );
        assert_eq!(
            DriverOption::parse("AERON_THREADING_MODE", "dedicated")
                .unwrap()
                .value(),
            &OptionValue::Threading("DEDICATED")
        );
    }

    #[test]
    fn bad_names_and_values_say_what_to_give() {
        let e = DriverOption::parse("aeron.nak.bogus", "1").unwrap_err();
        assert!(
            e.contains("not a driver setting") && e.contains("aeron.nak.multicast.max.backoff"),
            "{e}"
        );
        let e = DriverOption::parse("aeron.retransmit.unicast.linger", "soon").unwrap_err();
        assert!(e.contains("a duration such as 500us"), "{e}");
        let e = DriverOption::parse("aeron.threading.mode", "INVOKER").unwrap_err();
        assert!(e.contains("SHARED, SHARED_NETWORK or DEDICATED"), "{e}");
    }
}
