//! What decoding a body will cost, known before it is decoded.
//!
//! prost turns a message into structs, and a few bytes of wire can become
//! hundreds of bytes of them: an empty `Histogram` is 2 bytes on the wire
//! (`22 00`) and over 200 in memory, so a 32 MiB body of them (which
//! snappy compresses to about 1.5 MiB) would take gigabytes. And a 2.0
//! request names its label text by reference: one large symbol, referenced
//! by every series, would be copied once per series. So every decoder here
//! works within a [`Budget`] of memory proportional to the decompressed
//! body ([`Budget::for_body`]): [`decoded_size`] estimates, from the wire
//! form alone and without allocating, what prost will allocate for a body,
//! and the body is refused before decoding if that is over the budget; a
//! 2.0 request's references are charged to what is left as they are
//! resolved (`crate::decode`).
//!
//! The estimate counts the struct of every message held in a vector, the
//! bytes of every `bytes` field, and every element of a repeated scalar
//! (a packed run as if each element took its smallest wire size, an upper
//! bound). It leaves out vectors' spare capacity, so the real figure can
//! be up to about twice the estimate. Unknown fields and groups count
//! nothing: prost skips them (and refuses groups nested deeper than its
//! recursion limit of 100). The walk recurses only along the [`Shape`]s,
//! never deeper than [`MAX_SHAPE_DEPTH`], whatever the body's nesting;
//! groups are skipped by a loop with a depth counter.
//!
//! Legitimate requests stay far below the default budget (16 bytes per
//! body byte): their structs take about 2 to 6 bytes per wire byte, and a
//! 2.0 request's resolved label text about as much again.

use std::mem::size_of;

use crate::proto::{read, v1, v2};
use crate::view::varint;

/// Decoding may take this many bytes per byte of decompressed body.
pub const DEFAULT_BYTES_PER_BODY_BYTE: usize = 16;

/// Whatever its size, a body may take this much (so that small bodies of
/// empty messages, 2 wire bytes for a struct of 100, stay decodable).
pub const MIN_BUDGET: usize = 1 << 20;

/// Memory a request may still make its decoder allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    limit: usize,
    left: usize,
}

/// A [`Budget`] ran out: `limit` is what it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("decoding the request would take more than {limit} bytes of memory")]
pub struct OverBudget {
    pub limit: usize,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Budget {
        Budget { limit, left: limit }
    }

    /// `per_byte` bytes per byte of a decompressed body of `len` bytes, and
    /// at least [`MIN_BUDGET`].
    pub fn for_body(len: usize, per_byte: usize) -> Budget {
        Budget::new(len.saturating_mul(per_byte).max(MIN_BUDGET))
    }

    /// Takes `n` bytes from the budget, or fails if fewer are left.
    pub fn charge(&mut self, n: usize) -> Result<(), OverBudget> {
        match self.left.checked_sub(n) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => {
                self.left = 0;
                Err(OverBudget { limit: self.limit })
            }
        }
    }

    /// What is left.
    pub fn left(&self) -> usize {
        self.left
    }

    /// What the budget was.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

/// How prost decodes one field of a message, as far as memory goes.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// A repeated message: one struct of the shape per occurrence.
    Repeated(&'static Shape),
    /// A singular message held inline in its parent: only what it holds.
    Inline(&'static Shape),
    /// A `bytes` field: its length (last value wins, but the sum bounds it).
    Bytes,
    /// A repeated `bytes` field: its length plus a `Vec` per element.
    RepeatedBytes,
    /// A repeated scalar of `size` bytes in memory, at least `wire` bytes
    /// per element on the wire when packed.
    Scalars { size: usize, wire: usize },
}

/// A message as prost holds it: its struct's size and the fields that
/// allocate.
pub(crate) struct Shape {
    size: usize,
    fields: &'static [(u64, Kind)],
}

impl Shape {
    fn kind(&self, field: u64) -> Option<Kind> {
        self.fields
            .iter()
            .find(|(f, _)| *f == field)
            .map(|&(_, k)| k)
    }
}

/// No chain of [`Shape`]s is deeper (the deepest is 3: a request, its
/// series, their exemplars' labels or histograms' spans).
pub const MAX_SHAPE_DEPTH: usize = 4;

const VARINT: usize = 1;

const LABEL: Shape = Shape {
    size: size_of::<v1::Label>(),
    fields: &[(1, Kind::Bytes), (2, Kind::Bytes)],
};

const V1_SAMPLE: Shape = Shape {
    size: size_of::<v1::Sample>(),
    fields: &[],
};

const V1_EXEMPLAR: Shape = Shape {
    size: size_of::<v1::Exemplar>(),
    fields: &[(1, Kind::Repeated(&LABEL))],
};

const V1_SPAN: Shape = Shape {
    size: size_of::<v1::BucketSpan>(),
    fields: &[],
};

const DELTAS: Kind = Kind::Scalars {
    size: size_of::<i64>(),
    wire: VARINT,
};

const COUNTS: Kind = Kind::Scalars {
    size: size_of::<f64>(),
    wire: 8,
};

const V1_HISTOGRAM: Shape = Shape {
    size: size_of::<v1::Histogram>(),
    fields: &[
        (8, Kind::Repeated(&V1_SPAN)),
        (9, DELTAS),
        (10, COUNTS),
        (11, Kind::Repeated(&V1_SPAN)),
        (12, DELTAS),
        (13, COUNTS),
        (16, COUNTS),
    ],
};

const V1_SERIES: Shape = Shape {
    size: size_of::<v1::TimeSeries>(),
    fields: &[
        (1, Kind::Repeated(&LABEL)),
        (2, Kind::Repeated(&V1_SAMPLE)),
        (3, Kind::Repeated(&V1_EXEMPLAR)),
        (4, Kind::Repeated(&V1_HISTOGRAM)),
    ],
};

const V1_METADATA: Shape = Shape {
    size: size_of::<v1::MetricMetadata>(),
    fields: &[(2, Kind::Bytes), (4, Kind::Bytes), (5, Kind::Bytes)],
};

/// `prometheus.WriteRequest`.
pub(crate) const V1_REQUEST: Shape = Shape {
    size: size_of::<v1::WriteRequest>(),
    fields: &[
        (1, Kind::Repeated(&V1_SERIES)),
        (3, Kind::Repeated(&V1_METADATA)),
    ],
};

const REFS: Kind = Kind::Scalars {
    size: size_of::<u32>(),
    wire: VARINT,
};

const V2_SAMPLE: Shape = Shape {
    size: size_of::<v2::Sample>(),
    fields: &[],
};

const V2_EXEMPLAR: Shape = Shape {
    size: size_of::<v2::Exemplar>(),
    fields: &[(1, REFS)],
};

const V2_SPAN: Shape = Shape {
    size: size_of::<v2::BucketSpan>(),
    fields: &[],
};

const V2_HISTOGRAM: Shape = Shape {
    size: size_of::<v2::Histogram>(),
    fields: &[
        (8, Kind::Repeated(&V2_SPAN)),
        (9, DELTAS),
        (10, COUNTS),
        (11, Kind::Repeated(&V2_SPAN)),
        (12, DELTAS),
        (13, COUNTS),
        (16, COUNTS),
    ],
};

/// `Metadata` is held inline and allocates nothing.
const V2_METADATA: Shape = Shape {
    size: 0,
    fields: &[],
};

const V2_SERIES: Shape = Shape {
    size: size_of::<v2::TimeSeries>(),
    fields: &[
        (1, REFS),
        (2, Kind::Repeated(&V2_SAMPLE)),
        (3, Kind::Repeated(&V2_HISTOGRAM)),
        (4, Kind::Repeated(&V2_EXEMPLAR)),
        (5, Kind::Inline(&V2_METADATA)),
    ],
};

/// `io.prometheus.write.v2.Request`.
pub(crate) const V2_REQUEST: Shape = Shape {
    size: size_of::<v2::Request>(),
    fields: &[(4, Kind::RepeatedBytes), (5, Kind::Repeated(&V2_SERIES))],
};

const MATCHER: Shape = Shape {
    size: size_of::<read::LabelMatcher>(),
    fields: &[(2, Kind::Bytes), (3, Kind::Bytes)],
};

const QUERY: Shape = Shape {
    size: size_of::<read::Query>(),
    fields: &[(3, Kind::Repeated(&MATCHER))],
};

/// `prometheus.ReadRequest`.
pub(crate) const READ_REQUEST: Shape = Shape {
    size: size_of::<read::ReadRequest>(),
    fields: &[
        (1, Kind::Repeated(&QUERY)),
        (
            2,
            Kind::Scalars {
                size: size_of::<i32>(),
                wire: VARINT,
            },
        ),
    ],
};

/// The bytes prost will allocate decoding `body` as a `shape` message
/// (see the module's documentation for what is counted). Where the body
/// is malformed, the estimate stops: prost fails there too, having
/// allocated no more.
pub(crate) fn decoded_size(body: &[u8], shape: &Shape) -> usize {
    let mut total = 0usize;
    walk(body, shape, 0, &mut total);
    total
}

fn walk(msg: &[u8], shape: &Shape, depth: usize, total: &mut usize) -> Option<()> {
    if depth >= MAX_SHAPE_DEPTH {
        return None;
    }
    fn add(total: &mut usize, n: usize) {
        *total = total.saturating_add(n);
    }
    let mut pos = 0;
    while pos < msg.len() {
        let key = varint(msg, &mut pos)?;
        let kind = shape.kind(key >> 3);
        let scalar = match key & 7 {
            0 => {
                varint(msg, &mut pos)?;
                true
            }
            1 => {
                pos = skip(msg, pos, 8)?;
                true
            }
            5 => {
                pos = skip(msg, pos, 4)?;
                true
            }
            2 => {
                let len = usize::try_from(varint(msg, &mut pos)?).ok()?;
                let end = skip(msg, pos, len)?;
                let inner = &msg[pos..end];
                pos = end;
                match kind {
                    Some(Kind::Repeated(s)) => {
                        add(total, s.size);
                        walk(inner, s, depth + 1, total)?;
                    }
                    Some(Kind::Inline(s)) => walk(inner, s, depth + 1, total)?,
                    Some(Kind::Bytes) => add(total, len),
                    Some(Kind::RepeatedBytes) => {
                        add(total, len.saturating_add(size_of::<Vec<u8>>()))
                    }
                    Some(Kind::Scalars { size, wire }) => add(total, len / wire * size),
                    None => {}
                }
                false
            }
            3 => {
                pos = skip_group(msg, pos)?;
                false
            }
            _ => return None,
        };
        if let (true, Some(Kind::Scalars { size, .. })) = (scalar, kind) {
            add(total, size);
        }
    }
    Some(())
}

/// The position `n` bytes on, if there are that many.
fn skip(msg: &[u8], pos: usize, n: usize) -> Option<usize> {
    let end = pos.checked_add(n)?;
    (end <= msg.len()).then_some(end)
}

/// The position after the group whose start key ended at `pos`, however
/// deeply groups nest in it (counted, not recursed into).
fn skip_group(msg: &[u8], mut pos: usize) -> Option<usize> {
    let mut open = 1usize;
    while open > 0 {
        let key = varint(msg, &mut pos)?;
        match key & 7 {
            0 => {
                varint(msg, &mut pos)?;
            }
            1 => pos = skip(msg, pos, 8)?,
            5 => pos = skip(msg, pos, 4)?,
            2 => {
                let len = usize::try_from(varint(msg, &mut pos)?).ok()?;
                pos = skip(msg, pos, len)?;
            }
            3 => open += 1,
            4 => open -= 1,
            _ => return None,
        }
    }
    Some(pos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn budgets() {
        assert_eq!(Budget::for_body(10, 16).limit(), MIN_BUDGET);
        assert_eq!(Budget::for_body(1 << 20, 16).limit(), 16 << 20);
        let mut b = Budget::new(10);
        assert_eq!(b.charge(4), Ok(()));
        assert_eq!(b.left(), 6);
        assert_eq!(b.charge(7), Err(OverBudget { limit: 10 }));
        assert_eq!(b.left(), 0);
    }

    #[test]
    fn estimates_what_prost_holds() {
        let req = v1::WriteRequest {
            timeseries: vec![v1::TimeSeries {
                labels: vec![v1::Label {
                    name: b"__name__".to_vec(),
                    value: b"up".to_vec(),
                }],
                samples: vec![v1::Sample::default(); 3],
                histograms: vec![v1::Histogram {
                    positive_counts: vec![1.0, 2.0],
                    positive_spans: vec![v1::BucketSpan::default()],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            metadata: vec![],
        };
        let want = size_of::<v1::TimeSeries>()
            + size_of::<v1::Label>()
            + 10
            + 3 * size_of::<v1::Sample>()
            + size_of::<v1::Histogram>()
            + 2 * size_of::<f64>()
            + size_of::<v1::BucketSpan>();
        assert_eq!(decoded_size(&req.encode_to_vec(), &V1_REQUEST), want);

        let req = v2::Request {
            symbols: vec![b"".to_vec(), b"__name__".to_vec(), b"up".to_vec()],
            timeseries: vec![v2::TimeSeries {
                labels_refs: vec![1, 2],
                samples: vec![v2::Sample::default()],
                metadata: Some(v2::Metadata::default()),
                ..Default::default()
            }],
        };
        let want = 3 * size_of::<Vec<u8>>()
            + 10
            + size_of::<v2::TimeSeries>()
            + 2 * size_of::<u32>()
            + size_of::<v2::Sample>();
        assert_eq!(decoded_size(&req.encode_to_vec(), &V2_REQUEST), want);
    }

    #[test]
    fn empty_messages_cost_their_structs() {
        // 100,000 empty histograms in one series: 200 KB on the wire.
        let mut series = Vec::new();
        for _ in 0..100_000 {
            series.extend_from_slice(&[0x22, 0x00]);
        }
        let mut body = vec![0x0a];
        prost::encoding::encode_varint(series.len() as u64, &mut body);
        body.extend_from_slice(&series);
        let est = decoded_size(&body, &V1_REQUEST);
        assert_eq!(
            est,
            size_of::<v1::TimeSeries>() + 100_000 * size_of::<v1::Histogram>()
        );
        assert!(est > Budget::for_body(body.len(), DEFAULT_BYTES_PER_BODY_BYTE).limit());
    }

    #[test]
    fn groups_are_skipped_without_recursion() {
        // A series holding an unknown field 9 of 1,000,000 nested groups
        // and then a label: the label still counts.
        let depth = 1_000_000;
        let mut series = Vec::new();
        series.extend(std::iter::repeat_n(0x4b, depth)); // field 9, start group
        series.extend(std::iter::repeat_n(0x4c, depth)); // field 9, end group
        series.extend_from_slice(&[0x0a, 0x00]);
        let mut body = vec![0x0a];
        prost::encoding::encode_varint(series.len() as u64, &mut body);
        body.extend_from_slice(&series);
        assert_eq!(
            decoded_size(&body, &V1_REQUEST),
            size_of::<v1::TimeSeries>() + size_of::<v1::Label>()
        );
        // Unclosed: the walk stops where prost will fail.
        let unclosed = vec![0x4b; depth];
        let mut body = vec![0x0a];
        prost::encoding::encode_varint(unclosed.len() as u64, &mut body);
        body.extend_from_slice(&unclosed);
        body.extend_from_slice(&[0x0a, 0x00]);
        assert_eq!(
            decoded_size(&body, &V1_REQUEST),
            size_of::<v1::TimeSeries>()
        );
    }

    /// `depth` levels of `key` (a length-delimited field), each holding
    /// the next, built from the inside out.
    pub(crate) fn nested(key: u8, depth: usize) -> Vec<u8> {
        let mut headers: Vec<Vec<u8>> = Vec::with_capacity(depth);
        let mut len = 0usize;
        for _ in 0..depth {
            let mut h = vec![key];
            prost::encoding::encode_varint(len as u64, &mut h);
            len += h.len();
            headers.push(h);
        }
        headers.into_iter().rev().flatten().collect()
    }

    #[test]
    fn nested_length_delimited_fields_are_opaque() {
        // 100,000 levels of field 1 inside field 1: only the schema's own
        // levels (request, series, label, its name) are walked.
        let msg = nested(0x0a, 100_000);
        let mut pos = 0;
        for _ in 0..3 {
            pos += 1;
            varint(&msg, &mut pos).unwrap();
        }
        assert_eq!(
            decoded_size(&msg, &V1_REQUEST),
            size_of::<v1::TimeSeries>() + size_of::<v1::Label>() + (msg.len() - pos)
        );
    }
}
