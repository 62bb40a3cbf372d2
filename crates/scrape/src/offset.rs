//! When in its interval a target is scraped: Prometheus spreads targets
//! over the interval by a hash of each target and of the server, so that a
//! Ferrite and a Prometheus scraping the same target from the same host
//! with the same external labels scrape it at the same moments.
//!
//! - a target's hash: FNV-1a (64) of its labels' hash (xxHash64 of each
//!   name and value with its length before it), written as a 16-digit
//!   decimal, then of its scrape URL (Prometheus' `Target.hash`);
//! - the server's seed: FNV-1a of the host's fully qualified name and the
//!   external labels as `{a="1", b="2"}` (`Manager.setOffsetSeed`);
//! - the first scrape is at the next instant, in absolute time, that is
//!   `(hash ^ seed) % interval` past a multiple of the interval.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrite_model::Labels;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a, 64 bits (Go's `hash/fnv.New64a`).
#[derive(Debug, Clone, Copy)]
pub struct Fnv64a(u64);

impl Default for Fnv64a {
    fn default() -> Self {
        Fnv64a(FNV_OFFSET)
    }
}

impl Fnv64a {
    /// Hashes more bytes.
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    /// The hash so far.
    pub fn sum(self) -> u64 {
        self.0
    }
}

/// Prometheus' `labels.Labels.Hash()` as its release builds compute it
/// (see [`Labels::prometheus_hash`]).
pub fn labels_hash(labels: &Labels) -> u64 {
    labels.prometheus_hash()
}

/// A target's hash from its labels (all of them, `__address__` and the
/// other `__` labels included) and its scrape URL.
pub fn target_hash(labels: &Labels, url: &str) -> u64 {
    let mut h = Fnv64a::default();
    h.write(format!("{:016}", labels_hash(labels)).as_bytes());
    h.write(url.as_bytes());
    h.sum()
}

/// The server's seed from its host name and external labels.
pub fn offset_seed(fqdn: &str, external_labels: &Labels) -> u64 {
    let mut h = Fnv64a::default();
    h.write(fqdn.as_bytes());
    h.write(external_labels.to_string().as_bytes());
    h.sum()
}

/// The wall-clock instant of a target's first scrape after `now`: the
/// next point of its phase in the interval grid (at most one interval
/// away; a phase of exactly now is an interval away, as in Prometheus).
pub fn first_scrape_at(now: SystemTime, interval: Duration, hash: u64, seed: u64) -> SystemTime {
    let interval_ns = interval.as_nanos().max(1);
    let now_ns = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let base = interval_ns - now_ns % interval_ns;
    let phase = u128::from(hash ^ seed) % interval_ns;
    let mut next = base + phase;
    if next > interval_ns {
        next -= interval_ns;
    }
    let next = u64::try_from(next).unwrap_or(u64::MAX);
    now + Duration::from_nanos(next)
}

/// The host's fully qualified name as Go's `osutil.GetFQDN` finds it: the
/// host name, resolved to addresses, the first IPv4 then IPv6 address
/// resolved back to a name (a dotted name with the trailing dot Go's
/// resolver adds); the host name itself when none resolves.
pub fn fqdn() -> String {
    let host = host_name();
    if host.is_empty() {
        return host;
    }
    match reverse_name(&host) {
        Some(name) => name,
        None => host,
    }
}

/// The host name (`gethostname(2)`, Go's `os.Hostname`).
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its length; gethostname writes a
    // NUL-terminated name (truncated if longer).
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The name of `host`'s first address (IPv4 first), resolved back.
fn reverse_name(host: &str) -> Option<String> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<std::net::SocketAddr> = (host, 0).to_socket_addrs().ok()?.collect();
    let ordered = addrs
        .iter()
        .filter(|a| a.is_ipv4())
        .chain(addrs.iter().filter(|a| a.is_ipv6()));
    for addr in ordered {
        if let Some(name) = name_of(addr) {
            // Go's resolver makes a dotted name absolute (`absDomainName`).
            return Some(if name.contains('.') && !name.ends_with('.') {
                format!("{name}.")
            } else {
                name
            });
        }
    }
    None
}

/// `getnameinfo(3)` with a name required.
fn name_of(addr: &std::net::SocketAddr) -> Option<String> {
    let (storage, len) = sockaddr(addr);
    let mut host = [0u8; 1025];
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes; `host` is
    // writable for its length; no service buffer is asked for.
    let rc = unsafe {
        libc::getnameinfo(
            (&storage as *const libc::sockaddr_storage).cast(),
            len,
            host.as_mut_ptr().cast(),
            host.len() as libc::socklen_t,
            std::ptr::null_mut(),
            0,
            libc::NI_NAMEREQD,
        )
    };
    if rc != 0 {
        return None;
    }
    let end = host.iter().position(|&c| c == 0).unwrap_or(host.len());
    let name = String::from_utf8_lossy(&host[..end]).into_owned();
    (!name.is_empty()).then_some(name)
}

fn sockaddr(addr: &std::net::SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero sockaddr_storage is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        std::net::SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is large enough and aligned for any
            // sockaddr.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        std::net::SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_and_xxhash_known_values() {
        // FNV-1a test vectors.
        let mut h = Fnv64a::default();
        h.write(b"a");
        assert_eq!(h.sum(), 0xaf63dc4c8601ec8c);
        assert_eq!(Fnv64a::default().sum(), 0xcbf29ce484222325);
        // xxHash64("", 0).
        assert_eq!(labels_hash(&Labels::empty()), 0xef46db3751d8e999);
    }

    #[test]
    fn first_scrape_is_on_the_targets_phase() {
        let interval = Duration::from_secs(15);
        for now_ms in [0u64, 1, 14_999, 15_000, 1_700_000_000_123] {
            let now = UNIX_EPOCH + Duration::from_millis(now_ms);
            let at = first_scrape_at(now, interval, 7_000_000_000, 0);
            let gap = at.duration_since(now).expect("after now");
            assert!(gap > Duration::ZERO && gap <= interval, "{now_ms}: {gap:?}");
            let ns = at.duration_since(UNIX_EPOCH).expect("epoch").as_nanos();
            assert_eq!(ns % interval.as_nanos(), 7_000_000_000);
        }
    }
}
