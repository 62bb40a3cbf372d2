//! Binary operators: arithmetic, comparison (with and without `bool`) and
//! set operators, with Prometheus' vector matching.
//!
//! Matching compares "signatures": with `on(l...)` the values of those
//! labels, otherwise all labels except the `ignoring` ones and `__name__`.
//! The "one" side of a match must be unique per signature; with
//! `group_left`/`group_right` the "many" side's results must still be unique.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::parser::{BinaryExpr, LabelModifier, VectorMatchCardinality};

use crate::annotations::{Annotations, HistOp, Note};
use crate::engine::{Ev, Evaluator, Hist, Samp};
use crate::storage::Labels;
use crate::{eval_err, Result};
use ferrite_model::histogram_trim::Trim;
use ferrite_model::is_metadata_label;
use ferrite_model::FloatHistogram;

/// Binary operators (the parser's).
pub use crate::parser::BinaryOp as Op;

/// Arithmetic on two floats, or for comparisons whether it holds.
pub fn arith(op: Op, l: f64, r: f64) -> f64 {
    match op {
        Op::Add => l + r,
        Op::Sub => l - r,
        Op::Mul => l * r,
        Op::Div => l / r,
        Op::Mod => l % r,
        Op::Pow => l.powf(r),
        Op::Atan2 => l.atan2(r),
        Op::Eq => bool_f(l == r),
        Op::Ne => bool_f(l != r),
        Op::Gt => bool_f(l > r),
        Op::Lt => bool_f(l < r),
        Op::Ge => bool_f(l >= r),
        Op::Le => bool_f(l <= r),
        Op::And | Op::Or | Op::Unless | Op::TrimUpper | Op::TrimLower => f64::NAN,
    }
}

fn bool_f(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// An element operation: the value and whether the sample is kept
/// (comparisons filter, keeping the left value).
fn elem(op: Op, l: f64, r: f64) -> (f64, bool) {
    if op.is_comparison() {
        (l, arith(op, l, r) == 1.0)
    } else {
        (arith(op, l, r), true)
    }
}

/// The annotations of one binary operation, which are about the
/// operation's place in the query.
pub(crate) struct BinNotes<'a> {
    pub annos: &'a mut Annotations,
    pub pos: Option<usize>,
}

impl BinNotes<'_> {
    fn info(&mut self, text: String) {
        self.annos.info(text, self.pos);
    }

    fn warn(&mut self, text: String) {
        self.annos.warn(text, self.pos);
    }

    fn note(&mut self, n: Note) {
        self.annos.note(n, "", self.pos);
    }
}

/// The outcome of an operation with a histogram operand.
enum HistElem {
    /// Keep the sample with this value (a comparison's `keep` says
    /// whether it held).
    Value(f64, Option<Hist>, bool),
    /// No result.
    Drop,
}

fn incompatible(op: Op, l: bool, r: bool, annos: &mut BinNotes<'_>) -> HistElem {
    let kind = |h: bool| if h { "histogram" } else { "float" };
    annos.info(format!(
        "PromQL info: incompatible sample types encountered for binary operator {:?}: {} {} {}",
        op.text(),
        kind(l),
        op.text(),
        kind(r)
    ));
    HistElem::Drop
}

/// An element operation where at least one side is a histogram.
fn hist_elem(
    op: Op,
    (fl, hl): (f64, Option<&Hist>),
    (fr, hr): (f64, Option<&Hist>),
    annos: &mut BinNotes<'_>,
) -> HistElem {
    let scaled = |h: &Hist, f: f64, div: bool| {
        let mut h = FloatHistogram::clone(h);
        if div {
            h.div(f);
        } else {
            h.mul(f);
        }
        h.compact();
        HistElem::Value(0.0, Some(Arc::new(h)), true)
    };
    match (hl, hr) {
        (None, Some(h)) => match op {
            Op::Mul => scaled(h, fl, false),
            _ => incompatible(op, false, true, annos),
        },
        (Some(h), None) => match op {
            Op::Mul => scaled(h, fr, false),
            Op::Div => scaled(h, fr, true),
            Op::TrimUpper | Op::TrimLower => {
                let trim = if op == Op::TrimUpper {
                    Trim::Upper
                } else {
                    Trim::Lower
                };
                let mut h = FloatHistogram::clone(h);
                h.trim_buckets(fr, trim);
                HistElem::Value(0.0, Some(Arc::new(h)), true)
            }
            _ => incompatible(op, true, false, annos),
        },
        (Some(a), Some(b)) => match op {
            Op::Add | Op::Sub => {
                let mut r = FloatHistogram::clone(a);
                let hop = if op == Op::Add {
                    HistOp::Add
                } else {
                    HistOp::Sub
                };
                let res = if op == Op::Add { r.add(b) } else { r.sub(b) };
                match res {
                    Err(_) => {
                        annos.warn(format!(
                            "PromQL warning: incompatible bucket layout encountered for binary operator {}",
                            op.text()
                        ));
                        HistElem::Drop
                    }
                    Ok(c) => {
                        if c.custom_bounds_reconciled {
                            annos.note(Note::CustomBucketsReconciled(hop));
                        }
                        if c.counter_reset_collision {
                            annos.note(Note::CounterResetCollision(hop));
                            return HistElem::Drop;
                        }
                        if op == Op::Sub {
                            r.counter_reset_hint = ferrite_model::CounterResetHint::Gauge;
                        }
                        r.compact();
                        HistElem::Value(0.0, Some(Arc::new(r)), true)
                    }
                }
            }
            Op::Eq => HistElem::Value(0.0, Some(a.clone()), a.equals(b)),
            Op::Ne => HistElem::Value(0.0, Some(a.clone()), !a.equals(b)),
            _ => incompatible(op, true, true, annos),
        },
        (None, None) if op.is_trim() => incompatible(op, false, false, annos),
        (None, None) => {
            let (v, keep) = elem(op, fl, fr);
            HistElem::Value(v, None, keep)
        }
    }
}

/// How two vectors match.
#[derive(Clone, Debug)]
pub struct Matching {
    pub card: Card,
    /// `on` (true) or `ignoring` (false) of `labels`.
    pub on: bool,
    pub labels: Vec<String>,
    /// `group_left`/`group_right` extra labels.
    pub include: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Card {
    OneToOne,
    ManyToOne,
    OneToMany,
    ManyToMany,
}

impl Matching {
    /// The matching signature of a label set.
    pub fn signature(&self, ls: &Labels) -> Vec<(String, String)> {
        self.match_labels(ls)
            .iter()
            .map(|l| (l.name.to_string(), l.value.to_string()))
            .collect()
    }

    /// The labels that take part in matching (Prometheus' `MatchLabels`).
    pub fn match_labels(&self, ls: &Labels) -> Labels {
        Labels::from_sorted(
            ls.iter()
                .filter(|l| {
                    if self.on {
                        self.labels.iter().any(|k| *k == l.name)
                    } else {
                        !is_metadata_label(&l.name) && !self.labels.iter().any(|k| *k == l.name)
                    }
                })
                .cloned()
                .collect(),
        )
    }
}

fn matching_of(be: &BinaryExpr, op: Op) -> Matching {
    let mut m = Matching {
        card: if op.is_set() {
            Card::ManyToMany
        } else {
            Card::OneToOne
        },
        on: false,
        labels: Vec::new(),
        include: Vec::new(),
    };
    if let Some(modifier) = &be.modifier {
        match &modifier.card {
            VectorMatchCardinality::OneToOne => {}
            VectorMatchCardinality::ManyToMany => m.card = Card::ManyToMany,
            VectorMatchCardinality::ManyToOne(ls) => {
                m.card = Card::ManyToOne;
                m.include = ls.clone();
            }
            VectorMatchCardinality::OneToMany(ls) => {
                m.card = Card::OneToMany;
                m.include = ls.clone();
            }
        }
        if op.is_set() {
            m.card = Card::ManyToMany;
        }
        match &modifier.matching {
            Some(LabelModifier::Include(ls)) => {
                m.on = true;
                m.labels = ls.clone();
            }
            Some(LabelModifier::Exclude(ls)) => m.labels = ls.clone(),
            None => {}
        }
    }
    m
}

pub(crate) fn eval_binary(ev: &mut Evaluator, be: &BinaryExpr, ts: &[i64]) -> Result<Ev> {
    let op = be.op;
    let return_bool = be.modifier.as_ref().is_some_and(|m| m.return_bool);
    let lhs = ev.eval(&be.lhs, ts)?;
    let rhs = ev.eval(&be.rhs, ts)?;
    let pos = Some(be.pos);
    let (v, s, swap) = match (lhs, rhs) {
        (Ev::Scalar(a), Ev::Scalar(b)) => {
            return Ok(Ev::Scalar(
                a.iter().zip(&b).map(|(&l, &r)| arith(op, l, r)).collect(),
            ))
        }
        (Ev::Vector(v), Ev::Scalar(s)) => (v, s, false),
        (Ev::Scalar(s), Ev::Vector(v)) => (v, s, true),
        (Ev::Vector(l), Ev::Vector(r)) => return vectors(ev, be, l, r).map(Ev::Vector),
        (l, r) => {
            return eval_err(format!(
            "binary expression must contain only scalar and instant vector types, got {} and {}",
            l.type_name(),
            r.type_name()
        ))
        }
    };
    let mut notes = BinNotes {
        annos: &mut ev.annos,
        pos,
    };
    Ok(Ev::Vector(
        v.into_iter()
            .zip(s)
            .map(|(vec, s)| vector_scalar(op, vec, s, swap, return_bool, &mut notes))
            .collect(),
    ))
}

/// Two instant vectors at every step, matched.
fn vectors(
    ev: &mut Evaluator,
    be: &BinaryExpr,
    l: Vec<Vec<Samp>>,
    r: Vec<Vec<Samp>>,
) -> Result<Vec<Vec<Samp>>> {
    let op = be.op;
    let return_bool = be.modifier.as_ref().is_some_and(|m| m.return_bool);
    let m = matching_of(be, op);
    let mut out = Vec::with_capacity(l.len());
    for (lv, rv) in l.into_iter().zip(r) {
        ev.check_deadline()?;
        out.push(match op {
            Op::And => set_and(lv, &rv, &m, true),
            Op::Unless => set_and(lv, &rv, &m, false),
            Op::Or => set_or(lv, rv, &m),
            _ => {
                let mut notes = BinNotes {
                    annos: &mut ev.annos,
                    pos: Some(be.pos),
                };
                vector_vector(op, lv, rv, &m, return_bool, &mut notes)?
            }
        });
    }
    Ok(out)
}

/// A vector with a scalar; `swap` when the scalar is on the left.
pub(crate) fn vector_scalar(
    op: Op,
    vec: Vec<Samp>,
    s: f64,
    swap: bool,
    return_bool: bool,
    annos: &mut BinNotes<'_>,
) -> Vec<Samp> {
    let mut out = Vec::with_capacity(vec.len());
    for mut smp in vec {
        if smp.h.is_some() || op.is_trim() {
            let h = smp.h.take();
            let (l, r) = if swap {
                ((s, None), (smp.f, h.as_ref()))
            } else {
                ((smp.f, h.as_ref()), (s, None))
            };
            let HistElem::Value(mut val, mut hv, mut keep) = hist_elem(op, l, r, annos) else {
                continue;
            };
            if op.is_comparison() && swap {
                hv = h.clone();
            }
            if return_bool {
                val = bool_f(keep);
                hv = None;
                keep = true;
            }
            if keep {
                smp.f = val;
                smp.h = hv;
                if op.is_arithmetic() || return_bool {
                    smp.drop_name = true;
                }
                out.push(smp);
            }
            continue;
        }
        let (l, r) = if swap { (s, smp.f) } else { (smp.f, s) };
        let (mut val, mut keep) = elem(op, l, r);
        if op.is_comparison() && swap {
            val = r;
        }
        if return_bool {
            val = bool_f(keep);
            keep = true;
        }
        if keep {
            smp.f = val;
            if op.is_arithmetic() || return_bool {
                smp.drop_name = true;
            }
            out.push(smp);
        }
    }
    out
}

fn set_and(lhs: Vec<Samp>, rhs: &[Samp], m: &Matching, keep_matching: bool) -> Vec<Samp> {
    let sigs: HashSet<Vec<(String, String)>> = rhs.iter().map(|s| m.signature(&s.labels)).collect();
    lhs.into_iter()
        .filter(|s| sigs.contains(&m.signature(&s.labels)) == keep_matching)
        .collect()
}

fn set_or(mut lhs: Vec<Samp>, rhs: Vec<Samp>, m: &Matching) -> Vec<Samp> {
    let sigs: HashSet<Vec<(String, String)>> = lhs.iter().map(|s| m.signature(&s.labels)).collect();
    lhs.extend(
        rhs.into_iter()
            .filter(|s| !sigs.contains(&m.signature(&s.labels))),
    );
    lhs
}

fn vector_vector(
    op: Op,
    lhs: Vec<Samp>,
    rhs: Vec<Samp>,
    m: &Matching,
    return_bool: bool,
    annos: &mut BinNotes<'_>,
) -> Result<Vec<Samp>> {
    if lhs.is_empty() || rhs.is_empty() {
        return Ok(Vec::new());
    }
    let (lhs, rhs) = if m.card == Card::OneToMany {
        (rhs, lhs)
    } else {
        (lhs, rhs)
    };
    // The "one" side, by signature.
    let mut right: HashMap<Vec<(String, String)>, usize> = HashMap::new();
    for (i, rs) in rhs.iter().enumerate() {
        let sig = m.signature(&rs.labels);
        if let Some(&j) = right.get(&sig) {
            let side = if m.card == Card::OneToMany {
                "left"
            } else {
                "right"
            };
            let (mut a, mut b) = (rs.labels.to_string(), rhs[j].labels.to_string());
            if a > b {
                std::mem::swap(&mut a, &mut b);
            }
            return eval_err(format!(
                "found duplicate series for the match group {} on the {side} hand-side of the operation: [{a}, {b}];many-to-many matching not allowed: matching labels must be unique on one side",
                m.match_labels(&rs.labels)
            ));
        }
        right.insert(sig, i);
    }
    let mut matched_one: HashSet<Vec<(String, String)>> = HashSet::new();
    let mut matched_many: HashMap<Vec<(String, String)>, HashSet<Labels>> = HashMap::new();
    let mut cache: HashMap<(usize, usize), Arc<Labels>> = HashMap::new();
    let mut out = Vec::new();
    for (li, ls) in lhs.iter().enumerate() {
        let sig = m.signature(&ls.labels);
        let Some(&ri) = right.get(&sig) else { continue };
        let rs = &rhs[ri];
        let (l, r) = if m.card == Card::OneToMany {
            ((rs.f, rs.h.as_ref()), (ls.f, ls.h.as_ref()))
        } else {
            ((ls.f, ls.h.as_ref()), (rs.f, rs.h.as_ref()))
        };
        let (mut val, mut hv, keep) = if l.1.is_none() && r.1.is_none() && !op.is_trim() {
            let (v, k) = elem(op, l.0, r.0);
            (v, None, k)
        } else {
            match hist_elem(op, l, r, annos) {
                HistElem::Value(v, h, k) => (v, h, k),
                HistElem::Drop => continue,
            }
        };
        if return_bool {
            val = bool_f(keep);
            hv = None;
        }
        let metric = cache
            .entry((li, ri))
            .or_insert_with(|| Arc::new(result_metric(&ls.labels, &rs.labels, op, m)))
            .clone();
        if m.card == Card::OneToOne {
            if !matched_one.insert(sig) {
                return eval_err("multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)");
            }
        } else if !matched_many
            .entry(sig)
            .or_default()
            .insert((*metric).clone())
        {
            return eval_err(
                "multiple matches for labels: grouping labels must ensure unique matches",
            );
        }
        if !keep && !return_bool {
            continue;
        }
        out.push(Samp {
            labels: metric,
            f: val,
            h: hv,
            drop_name: return_bool,
        });
    }
    Ok(out)
}

/// The labels of a vector-vector result.
pub fn result_metric(lhs: &Labels, rhs: &Labels, op: Op, m: &Matching) -> Labels {
    let mut l = lhs.clone();
    if op.is_arithmetic() {
        l.drop_metric_name();
    }
    if m.card == Card::OneToOne {
        if m.on {
            l.keep(&m.labels);
        } else {
            for n in &m.labels {
                l.remove(n);
            }
        }
    }
    for n in &m.include {
        l.set(n, rhs.get(n));
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Annotations nobody reads.
    fn notes() -> BinNotes<'static> {
        BinNotes {
            annos: Box::leak(Box::default()),
            pos: None,
        }
    }

    fn samp(pairs: &[(&str, &str)], f: f64) -> Samp {
        Samp::float(Arc::new(Labels::from_pairs(pairs)), f, false)
    }

    fn one_to_one(on: bool, labels: &[&str]) -> Matching {
        Matching {
            card: Card::OneToOne,
            on,
            labels: labels.iter().map(|s| s.to_string()).collect(),
            include: vec![],
        }
    }

    #[test]
    fn one_to_one_ignores_name() {
        let l = vec![samp(&[("__name__", "a"), ("i", "1")], 10.0)];
        let r = vec![samp(&[("__name__", "b"), ("i", "1")], 3.0)];
        let out =
            vector_vector(Op::Sub, l, r, &one_to_one(false, &[]), false, &mut notes()).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].f, 7.0);
        assert_eq!(*out[0].labels, Labels::from_pairs(&[("i", "1")]));
    }

    #[test]
    fn duplicate_on_one_side_is_an_error() {
        let l = vec![samp(&[("__name__", "a"), ("i", "1")], 1.0)];
        let r = vec![
            samp(&[("__name__", "b"), ("i", "1"), ("j", "x")], 1.0),
            samp(&[("__name__", "b"), ("i", "1"), ("j", "y")], 1.0),
        ];
        let err = vector_vector(
            Op::Add,
            l,
            r,
            &one_to_one(true, &["i"]),
            false,
            &mut notes(),
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with(
                "found duplicate series for the match group {i=\"1\"} on the right hand-side"
            ),
            "{err}"
        );
    }

    #[test]
    fn group_left_copies_include_labels() {
        let l = vec![
            samp(&[("__name__", "a"), ("i", "1"), ("k", "p")], 2.0),
            samp(&[("__name__", "a"), ("i", "1"), ("k", "q")], 4.0),
        ];
        let r = vec![samp(&[("__name__", "info"), ("i", "1"), ("v", "z")], 1.0)];
        let m = Matching {
            card: Card::ManyToOne,
            on: true,
            labels: vec!["i".into()],
            include: vec!["v".into()],
        };
        let out = vector_vector(Op::Mul, l, r, &m, false, &mut notes()).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(
            *out[0].labels,
            Labels::from_pairs(&[("i", "1"), ("k", "p"), ("v", "z")])
        );
        // many-to-one without group_left: error.
        let l = vec![
            samp(&[("i", "1"), ("k", "p")], 2.0),
            samp(&[("i", "1"), ("k", "q")], 4.0),
        ];
        let r = vec![samp(&[("i", "1")], 1.0)];
        let err = vector_vector(
            Op::Mul,
            l,
            r,
            &one_to_one(true, &["i"]),
            false,
            &mut notes(),
        )
        .unwrap_err();
        assert!(err
            .to_string()
            .contains("many-to-one matching must be explicit"));
    }

    #[test]
    fn comparison_filters_or_bools() {
        let v = vec![
            samp(&[("__name__", "a")], 1.0),
            samp(&[("__name__", "b")], 5.0),
        ];
        let out = vector_scalar(Op::Gt, v.clone(), 2.0, false, false, &mut notes());
        assert_eq!(out.len(), 1);
        assert!(!out[0].drop_name);
        let out = vector_scalar(Op::Gt, v, 2.0, false, true, &mut notes());
        assert_eq!(out.iter().map(|s| s.f).collect::<Vec<_>>(), vec![0.0, 1.0]);
        assert!(out[0].drop_name);
    }
}
