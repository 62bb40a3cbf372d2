//! DNS discovery (`dns_sd_configs`): targets from SRV, A, AAAA, MX or NS
//! records, looked up every `refresh_interval` through the system's
//! resolver configuration (`/etc/resolv.conf`: servers, search domains).
//!
//! As in Prometheus, each name is its own group; each answer is a target
//! (`host:port`, the record's name without its final dot) with
//! `__meta_dns_name` and, by record type, `__meta_dns_srv_record_target`
//! and `__meta_dns_srv_record_port`, `__meta_dns_mx_record_target` or
//! `__meta_dns_ns_record_target`; CNAMEs along the way are followed, not
//! targets. A failed lookup keeps the name's previous targets.

use std::collections::BTreeMap;

use ferrite_config::discovery::{DnsRecordType, DnsSdConfig};
use ferrite_config::TargetGroup;
use ferrite_model::Labels;
use hickory_resolver::proto::rr::{RData, RecordType};
use hickory_resolver::TokioResolver;
use tracing::warn;

use crate::discovery::metrics::DiscoveryMetrics;

/// One target found for a name, with its meta labels.
fn target(address: String, name: &str, meta: &[(&str, String)]) -> TargetGroup {
    let mut labels = vec![("__meta_dns_name", name.to_string())];
    labels.extend(meta.iter().map(|(k, v)| (*k, v.clone())));
    TargetGroup {
        targets: vec![address],
        labels: Labels::new(labels),
    }
}

/// `host:port` as Go's `net.JoinHostPort` writes it.
fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The targets of one answer record.
fn answer_target(data: &RData, name: &str, port: u16) -> Option<TargetGroup> {
    let trimmed = |n: &hickory_resolver::proto::rr::Name| {
        let s = n.to_string();
        (s.trim_end_matches('.').to_string(), s)
    };
    match data {
        RData::SRV(srv) => {
            let (host, full) = trimmed(&srv.target);
            let meta = [
                ("__meta_dns_srv_record_target", full),
                ("__meta_dns_srv_record_port", srv.port.to_string()),
            ];
            Some(target(join_host_port(&host, srv.port), name, &meta))
        }
        RData::MX(mx) => {
            let (host, full) = trimmed(&mx.exchange);
            let meta = [("__meta_dns_mx_record_target", full)];
            Some(target(join_host_port(&host, port), name, &meta))
        }
        RData::NS(ns) => {
            let (host, full) = trimmed(&ns.0);
            let meta = [("__meta_dns_ns_record_target", full)];
            Some(target(join_host_port(&host, port), name, &meta))
        }
        RData::A(a) => Some(target(join_host_port(&a.0.to_string(), port), name, &[])),
        RData::AAAA(a) => Some(target(join_host_port(&a.0.to_string(), port), name, &[])),
        _ => None,
    }
}

/// One job's DNS discovery: the targets found per name.
pub struct DnsDiscovery {
    configs: Vec<DnsSdConfig>,
    /// The config's name in the metrics.
    name: String,
    resolver: Option<TokioResolver>,
    /// Targets by (config index, name).
    found: BTreeMap<(usize, String), Vec<TargetGroup>>,
}

impl DnsDiscovery {
    /// Discovery for a job's `dns_sd_configs`, with the system's resolver
    /// configuration (an unreadable one is logged, and lookups fail).
    pub fn new(configs: Vec<DnsSdConfig>, name: String) -> Self {
        let resolver = match TokioResolver::builder_tokio().and_then(|b| b.build()) {
            Ok(r) => Some(r),
            Err(e) => {
                warn!(error = %e, "reading the system's DNS configuration failed");
                None
            }
        };
        DnsDiscovery {
            configs,
            name,
            resolver,
            found: BTreeMap::new(),
        }
    }

    /// The shortest `refresh_interval` of the configurations.
    pub fn refresh_interval(&self) -> std::time::Duration {
        let ms = self
            .configs
            .iter()
            .map(|c| c.refresh_interval_ms)
            .min()
            .unwrap_or(ferrite_config::discovery::DNS_SD_REFRESH_MS);
        std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0).max(1))
    }

    /// Looks every name up again; true if the targets changed.
    pub async fn refresh(&mut self) -> bool {
        let Some(resolver) = &self.resolver else {
            return false;
        };
        let metrics = DiscoveryMetrics::global();
        let started = std::time::Instant::now();
        let mut changed = false;
        let mut failed = false;
        for (i, c) in self.configs.iter().enumerate() {
            let record_type = match c.record_type {
                DnsRecordType::Srv => RecordType::SRV,
                DnsRecordType::A => RecordType::A,
                DnsRecordType::Aaaa => RecordType::AAAA,
                DnsRecordType::Mx => RecordType::MX,
                DnsRecordType::Ns => RecordType::NS,
            };
            for name in &c.names {
                let groups: Vec<TargetGroup> =
                    match resolver.lookup(name.as_str(), record_type).await {
                        Ok(lookup) => {
                            metrics.dns_lookup(false);
                            lookup
                                .answers()
                                .iter()
                                .filter_map(|r| answer_target(&r.data, name, c.port))
                                .collect()
                        }
                        // No such name or no records: no targets, as in
                        // Prometheus (not a failure).
                        Err(e) if e.is_no_records_found() => {
                            metrics.dns_lookup(false);
                            Vec::new()
                        }
                        Err(e) => {
                            metrics.dns_lookup(true);
                            failed = true;
                            warn!(name = %name, error = %e, "error refreshing DNS targets");
                            continue;
                        }
                    };
                let old = self.found.insert((i, name.clone()), groups.clone());
                changed |= old.as_ref() != Some(&groups);
            }
        }
        metrics.refreshed(&self.name, "dns", failed, started.elapsed().as_secs_f64());
        changed
    }

    /// Every target found, name by name.
    pub fn groups(&self) -> Vec<TargetGroup> {
        self.found.values().flatten().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_resolver::proto::rr::rdata::{A, MX, SRV};
    use hickory_resolver::proto::rr::Name;

    #[test]
    fn answers_become_targets_with_prometheus_labels() {
        let host = Name::from_ascii("node1.example.org.").expect("name");
        let srv = RData::SRV(SRV::new(0, 0, 9100, host.clone()));
        let g = answer_target(&srv, "_n._tcp.example.org", 0).expect("srv");
        assert_eq!(g.targets, ["node1.example.org:9100"]);
        assert_eq!(
            g.labels.get("__meta_dns_srv_record_target"),
            "node1.example.org."
        );
        assert_eq!(g.labels.get("__meta_dns_srv_record_port"), "9100");
        assert_eq!(g.labels.get("__meta_dns_name"), "_n._tcp.example.org");
        let a = RData::A(A::new(10, 0, 0, 1));
        assert_eq!(
            answer_target(&a, "x", 80).expect("a").targets,
            ["10.0.0.1:80"]
        );
        let mx = RData::MX(MX::new(10, host));
        let g = answer_target(&mx, "x", 25).expect("mx");
        assert_eq!(g.targets, ["node1.example.org:25"]);
        assert_eq!(
            g.labels.get("__meta_dns_mx_record_target"),
            "node1.example.org."
        );
        assert_eq!(join_host_port("::1", 9), "[::1]:9");
    }
}
