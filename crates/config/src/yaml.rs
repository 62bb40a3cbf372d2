//! YAML decoding (serde-saphyr) with Prometheus' error texts, and the
//! scalar types Prometheus' configuration uses.
//!
//! Prometheus reads its configuration with Go's yaml.v2 into structs whose
//! `UnmarshalYAML` go through a local `plain` type, so an unknown key is
//! reported as `field <key> not found in type config.plain` (or the Go
//! struct's name where there is no such method). The structs here refuse
//! unknown keys; [`go_type_of`] names the Go type from the set of keys the
//! struct knows.

use serde::de::{self, Deserialize, Deserializer, Visitor};

use ferrite_model::goquote::quote as go_quote;
use ferrite_model::units::{parse_base2_bytes, parse_duration_ms};
use ferrite_model::ValidationScheme;

/// Decodes `source`; the error is the reason Prometheus would give.
pub(crate) fn from_str<'de, T: Deserialize<'de>>(source: &'de str) -> Result<T, String> {
    serde_saphyr::from_str(source).map_err(|e| reason(&e))
}

fn reason(e: &serde_saphyr::Error) -> String {
    match e.without_snippet() {
        serde_saphyr::Error::SerdeUnknownField {
            field,
            expected,
            location,
        } => format!(
            "yaml: unmarshal errors:\n  line {}: field {field} not found in type {}",
            location.line(),
            go_type_of(expected)
        ),
        // A message of ours (a validation in a deserializer) as it is.
        serde_saphyr::Error::Message { msg, .. } => msg.clone(),
        other => match other.location() {
            Some(l) if l.line() > 0 => {
                format!("yaml: line {}: {}", l.line(), other.without_snippet())
            }
            _ => format!("yaml: {}", other.without_snippet()),
        },
    }
}

/// The Go type Prometheus decodes a mapping with these keys into.
fn go_type_of(keys: &[&str]) -> &'static str {
    let has = |k: &str| keys.contains(&k);
    if has("modulus") {
        "relabel.plain"
    } else if has("floats") {
        "config.ChunkEncodingConfig"
    } else if has("max_exemplars") {
        "config.ExemplarsConfig"
    } else if has("tsdb") && has("exemplars") {
        "config.StorageConfig"
    } else if has("job_name") {
        "config.ScrapeConfig"
    } else if has("path_prefix") && has("api_version") {
        "config.AlertmanagerConfig"
    } else if has("files") && has("refresh_interval") {
        "file.plain"
    } else if has("names") && has("port") {
        "dns.plain"
    } else if has("url") && has("refresh_interval") && has("tls_config") {
        "http.plain"
    } else if keys == ["scrape_configs"] {
        // A `scrape_config_files` file.
        "config.ScrapeConfigs"
    } else if has("credentials_file") && has("type") {
        "config.Authorization"
    } else if has("values") && has("secrets") {
        "config.Header"
    } else {
        // The top level, `storage.tsdb`, `storage.tsdb.retention`,
        // `tls_config`, `basic_auth` and `oauth2` decode through a local
        // `plain` type.
        "config.plain"
    }
}

/// A `model.Duration` value in milliseconds: a YAML scalar such as `5m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DurationMs(pub i64);

/// A `units.Base2Bytes` value: a YAML scalar such as `512MB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Base2Bytes(pub i64);

/// A Go `string` field: any scalar, as its text (see [`ScalarText`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct GoString(pub String);

impl<'de> Deserialize<'de> for GoString {
    /// Asks for a string, so a plain scalar keeps its text as written
    /// (`y`, `on`, `0x10` stay themselves, as yaml.v2 keeps them for a Go
    /// string).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(ScalarText).map(GoString)
    }
}

/// Tells a null value (`Some(None)`) from an absent field (`None`, through
/// `#[serde(default)]`).
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A label name as Prometheus decodes one (`model.LabelName`): checked
/// while decoding, so its error comes in file order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct LabelNameField(pub String);

impl<'de> Deserialize<'de> for LabelNameField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let GoString(name) = GoString::deserialize(d)?;
        if !ValidationScheme::Utf8.is_valid_label_name(name.as_bytes()) {
            return Err(de::Error::custom(format!(
                "{} is not a valid label name",
                go_quote(&name)
            )));
        }
        Ok(LabelNameField(name))
    }
}

/// A `metric_name_validation_scheme` value, checked while decoding:
/// `None` for an empty one (the default applies).
pub(crate) struct SchemeField(pub Option<ValidationScheme>);

impl<'de> Deserialize<'de> for SchemeField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let GoString(text) = GoString::deserialize(d)?;
        match text.as_str() {
            "" => Ok(SchemeField(None)),
            "utf8" => Ok(SchemeField(Some(ValidationScheme::Utf8))),
            "legacy" => Ok(SchemeField(Some(ValidationScheme::Legacy))),
            other => Err(de::Error::custom(format!(
                "unrecognized ValidationScheme: {}",
                go_quote(other)
            ))),
        }
    }
}

/// Reads any scalar as its text, as yaml.v2 does for a Go string (`30`
/// becomes "30").
struct ScalarText;

impl Visitor<'_> for ScalarText {
    type Value = String;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(ferrite_model::gofloat::format_g(v))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }
}

impl<'de> Deserialize<'de> for DurationMs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = d.deserialize_any(ScalarText)?;
        parse_duration_ms(&text)
            .map(DurationMs)
            .map_err(de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for Base2Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = d.deserialize_any(ScalarText)?;
        parse_base2_bytes(&text)
            .map(Base2Bytes)
            .map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod go_string_tests {
    use super::*;

    #[test]
    fn plain_scalars_keep_their_text() {
        for (yaml, want) in [
            ("y", "y"),
            ("on", "on"),
            ("30", "30"),
            ("1.50", "1.50"),
            ("0x10", "0x10"),
            ("true", "true"),
            ("'q'", "q"),
        ] {
            let GoString(got) = from_str::<GoString>(yaml).expect(yaml);
            assert_eq!(got, want, "{yaml}");
        }
    }
}
