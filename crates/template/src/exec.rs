//! Execution: walks a parsed template as Go's `text/template` `state` does
//! (variables, dot, pipelines, control structures, function calls with
//! Go's argument typing), and words errors as Go's `ExecError`:
//! `template: NAME:LINE:COL: executing "NAME" at <NODE>: message`.

use std::sync::Arc;

use ferrite_model::goquote::quote as go_quote;

use crate::funcs;
use crate::parse::{Arg, Branch, BranchKind, Command, Node, Number, Pipe, Templates};
use crate::parse::{RED_ZONE, STACK_SEGMENT};
use crate::prometheus::{self, Env};
use crate::value::Value;

/// Go's `maxExecDepth`: the deepest nesting of `{{template}}` calls.
pub(crate) const MAX_EXEC_DEPTH: usize = 100_000;

/// Why a walk stopped early.
pub(crate) enum Flow {
    /// An execution error (the full text).
    Err(String),
    Break,
    Continue,
}

type R<T> = Result<T, Flow>;

/// A parameter's Go type, for argument evaluation and checking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Param {
    /// `string`.
    Str,
    /// `interface {}`.
    Any,
    /// `reflect.Value` (the built-ins that take any value).
    Val,
    /// `*template.sample`.
    Sample,
    /// `template.queryResult`.
    QueryResult,
}

impl Param {
    fn type_name(self) -> &'static str {
        match self {
            Param::Str => "string",
            Param::Any => "interface {}",
            Param::Val => "reflect.Value",
            Param::Sample => "*template.sample",
            Param::QueryResult => "template.queryResult",
        }
    }

    fn can_be_nil(self) -> bool {
        !matches!(self, Param::Str)
    }
}

/// A function's signature: fixed parameters and the variadic one.
pub(crate) struct Sig {
    pub(crate) fixed: &'static [Param],
    pub(crate) variadic: Option<Param>,
}

/// The node errors are reported at (Go's `state.node`).
#[derive(Clone, Copy)]
enum At<'t> {
    Arg(&'t Arg),
    Cmd(&'t Command),
    Pipe(&'t Pipe),
    Node(&'t Node),
    Branch(&'t Branch),
}

impl At<'_> {
    fn pos(&self) -> usize {
        match self {
            At::Arg(a) => a.pos(),
            At::Cmd(c) => c.pos,
            At::Pipe(p) => p.pos,
            At::Node(n) => match n {
                Node::Text(_) => 0,
                Node::Action { pos, .. }
                | Node::Template { pos, .. }
                | Node::Break { pos }
                | Node::Continue { pos } => *pos,
                Node::Branch(b) => b.pos,
            },
            At::Branch(b) => b.pos,
        }
    }

    fn context(&self) -> String {
        match self {
            At::Arg(a) => a.to_string(),
            At::Cmd(c) => c.to_string(),
            At::Pipe(p) => p.to_string(),
            At::Node(n) => n.to_string(),
            At::Branch(b) => Node::Branch(Box::new((*b).clone())).to_string(),
        }
    }
}

/// The execution state.
pub(crate) struct State<'t> {
    templates: &'t Templates,
    /// The name the text was parsed under (error locations).
    parse_name: &'t str,
    text: &'t str,
    /// The executing template's name.
    tmpl: &'t str,
    node: Option<At<'t>>,
    vars: Vec<(String, Value)>,
    depth: usize,
    /// Whether the last field evaluated came out of an `interface {}`
    /// (a map[string]interface {} element, a struct's `Value`).
    iface: bool,
    pub(crate) out: String,
    env: &'t Env<'t>,
}

impl<'t> State<'t> {
    pub(crate) fn new(
        templates: &'t Templates,
        name: &'t str,
        text: &'t str,
        env: &'t Env<'t>,
        dot: Value,
    ) -> Self {
        State {
            templates,
            parse_name: name,
            text,
            tmpl: name,
            node: None,
            vars: vec![("$".to_string(), dot)],
            depth: 0,
            iface: false,
            out: String::new(),
            env,
        }
    }

    /// Runs the template `name` with `dot`.
    pub(crate) fn run(&mut self, dot: &Value) -> Result<(), String> {
        let Some(root) = self.templates.get(self.tmpl) else {
            return Err(format!(
                "template: no template {} associated with template {}",
                go_quote(self.tmpl),
                go_quote(self.tmpl)
            ));
        };
        match self.walk_list(dot, root) {
            Ok(()) => Ok(()),
            Err(Flow::Err(e)) => Err(e),
            // The parser refuses break and continue outside range.
            Err(_) => Ok(()),
        }
    }

    fn at(&mut self, at: At<'t>) {
        self.node = Some(at);
    }

    /// An execution error at the current node.
    fn error<T>(&self, msg: impl std::fmt::Display) -> R<T> {
        let Some(node) = self.node else {
            return Err(Flow::Err(format!("template: {}: {msg}", self.tmpl)));
        };
        let pos = node.pos().min(self.text.len());
        let before = self.text.get(..pos).unwrap_or(self.text);
        let line = 1 + before.matches('\n').count();
        let col = match before.rfind('\n') {
            Some(i) => pos - (i + 1),
            None => pos,
        };
        Err(Flow::Err(format!(
            "template: {}:{line}:{col}: executing {} at <{}>: {msg}",
            self.parse_name,
            go_quote(self.tmpl),
            node.context()
        )))
    }

    fn walk_list(&mut self, dot: &Value, list: &'t [Node]) -> R<()> {
        for n in list {
            self.walk(dot, n)?;
        }
        Ok(())
    }

    fn walk(&mut self, dot: &Value, node: &'t Node) -> R<()> {
        match node {
            Node::Text(t) => {
                self.out.push_str(t);
                Ok(())
            }
            Node::Action { pipe, .. } => {
                let v = self.eval_pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    self.at(At::Node(node));
                    let s = v.print();
                    self.out.push_str(&s);
                }
                Ok(())
            }
            Node::Branch(b) => stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || match b.kind {
                BranchKind::Range => self.walk_range(dot, b),
                _ => self.walk_if_or_with(dot, b),
            }),
            Node::Template { name, pipe, .. } => {
                self.at(At::Node(node));
                let Some(tree) = self.templates.get(name) else {
                    return self.error(format!("template {} not defined", go_quote(name)));
                };
                if self.depth == MAX_EXEC_DEPTH {
                    return self.error(format!(
                        "exceeded maximum template depth ({MAX_EXEC_DEPTH})"
                    ));
                }
                let new_dot = match pipe {
                    Some(p) => self.eval_pipeline(dot, p)?,
                    None => Value::Nil,
                };
                let saved_vars =
                    std::mem::replace(&mut self.vars, vec![("$".into(), new_dot.clone())]);
                let saved_tmpl = self.tmpl;
                // The name lives as long as the templates.
                let tname = self
                    .templates
                    .trees
                    .iter()
                    .find(|(n, _, _)| n == name)
                    .map(|(n, _, _)| n.as_str())
                    .unwrap_or(saved_tmpl);
                self.tmpl = tname;
                self.depth += 1;
                let r =
                    stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.walk_list(&new_dot, tree));
                self.depth -= 1;
                self.tmpl = saved_tmpl;
                self.vars = saved_vars;
                r
            }
            Node::Break { .. } => Err(Flow::Break),
            Node::Continue { .. } => Err(Flow::Continue),
        }
    }

    fn walk_if_or_with(&mut self, dot: &Value, b: &'t Branch) -> R<()> {
        let mark = self.vars.len();
        let r = (|| {
            let val = self.eval_pipeline(dot, &b.pipe)?;
            if val.truth() {
                if b.kind == BranchKind::With {
                    self.walk_list(&val, &b.list)
                } else {
                    self.walk_list(dot, &b.list)
                }
            } else if let Some(e) = &b.else_list {
                self.walk_list(dot, e)
            } else {
                Ok(())
            }
        })();
        self.vars.truncate(mark);
        r
    }

    fn walk_range(&mut self, dot: &Value, b: &'t Branch) -> R<()> {
        self.at(At::Branch(b));
        let mark0 = self.vars.len();
        let r = self.walk_range_inner(dot, b);
        self.vars.truncate(mark0);
        match r {
            Err(Flow::Break) => Ok(()),
            r => r,
        }
    }

    fn walk_range_inner(&mut self, dot: &Value, b: &'t Branch) -> R<()> {
        let val = self.eval_pipeline(dot, &b.pipe)?;
        let mark = self.vars.len();
        let mut items: Vec<(Value, Value)> = Vec::new();
        match &val {
            Value::QueryResult(v) => {
                for (i, s) in v.iter().enumerate() {
                    items.push((Value::Int(i as i64), Value::Sample(Arc::clone(s))));
                }
            }
            Value::StrMap(m) => {
                for (k, v) in m.iter() {
                    items.push((Value::str(k), Value::str(v)));
                }
            }
            Value::Map(m) => {
                for (k, v) in m.iter() {
                    items.push((Value::str(k), v.clone()));
                }
            }
            Value::Int(_) | Value::Duration(_) | Value::Uint8(_) => {
                let n = &match &val {
                    Value::Duration(ns) => *ns,
                    Value::Int(n) => *n,
                    Value::Uint8(n) => i64::from(*n),
                    _ => 0,
                };
                if b.pipe.decl.len() > 1 {
                    return self.error(format!(
                        "can't use {} to iterate over more than one variable",
                        val.fmt_v()
                    ));
                }
                for i in 0..(*n).max(0) {
                    let v = match &val {
                        Value::Uint8(_) => Value::Uint8(i as u8),
                        _ => Value::Int(i),
                    };
                    self.one_iteration(b, mark, v.clone(), v)?;
                }
                if *n > 0 {
                    return Ok(());
                }
            }
            Value::Nil => {}
            other => {
                let shown = match other {
                    Value::Sample(s) => Value::Sample(Arc::clone(s)).print(),
                    o => o.fmt_v(),
                };
                return self.error(format!("range can't iterate over {shown}"));
            }
        }
        if !items.is_empty() {
            for (k, v) in items {
                self.one_iteration(b, mark, k, v)?;
            }
            return Ok(());
        }
        if let Some(e) = &b.else_list {
            self.walk_list(dot, e)?;
        }
        Ok(())
    }

    fn one_iteration(&mut self, b: &'t Branch, mark: usize, index: Value, elem: Value) -> R<()> {
        let decl = &b.pipe.decl;
        if !decl.is_empty() {
            if b.pipe.is_assign {
                if decl.len() > 1 {
                    self.set_var(&decl[0], index.clone())?;
                } else {
                    self.set_var(&decl[0], elem.clone())?;
                }
            } else {
                self.set_top_var(1, elem.clone());
            }
        }
        if decl.len() > 1 {
            if b.pipe.is_assign {
                self.set_var(&decl[1], elem.clone())?;
            } else {
                self.set_top_var(2, index);
            }
        }
        let r = self.walk_list(&elem, &b.list);
        self.vars.truncate(mark);
        match r {
            Err(Flow::Continue) => Ok(()),
            r => r,
        }
    }

    fn set_top_var(&mut self, n: usize, v: Value) {
        let len = self.vars.len();
        if let Some(slot) = len.checked_sub(n).and_then(|i| self.vars.get_mut(i)) {
            slot.1 = v;
        }
    }

    fn set_var(&mut self, name: &str, v: Value) -> R<()> {
        for slot in self.vars.iter_mut().rev() {
            if slot.0 == name {
                slot.1 = v;
                return Ok(());
            }
        }
        self.error(format!("undefined variable: {name}"))
    }

    fn var_value(&self, name: &str) -> R<Value> {
        for slot in self.vars.iter().rev() {
            if slot.0 == name {
                return Ok(slot.1.clone());
            }
        }
        self.error(format!("undefined variable: {name}"))
    }

    fn eval_pipeline(&mut self, dot: &Value, pipe: &'t Pipe) -> R<Value> {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || {
            self.eval_pipeline_inner(dot, pipe)
        })
    }

    fn eval_pipeline_inner(&mut self, dot: &Value, pipe: &'t Pipe) -> R<Value> {
        self.at(At::Pipe(pipe));
        let mut value: Option<Value> = None;
        for cmd in &pipe.cmds {
            value = Some(self.eval_command(dot, cmd, value)?);
        }
        let value = value.unwrap_or_default();
        for v in &pipe.decl {
            if pipe.is_assign {
                self.set_var(v, value.clone())?;
            } else {
                self.vars.push((v.clone(), value.clone()));
            }
        }
        Ok(value)
    }

    fn not_a_function(&self, args: &[Arg], fin: &Option<Value>) -> R<()> {
        if args.len() > 1 || fin.is_some() {
            let first = args.first().map(|a| a.to_string()).unwrap_or_default();
            return self.error(format!("can't give argument to non-function {first}"));
        }
        Ok(())
    }

    fn eval_command(&mut self, dot: &Value, cmd: &'t Command, fin: Option<Value>) -> R<Value> {
        let Some(first) = cmd.args.first() else {
            return Ok(Value::Nil);
        };
        match first {
            Arg::Field(_, idents) => {
                self.at(At::Arg(first));
                self.eval_field_chain(dot, dot.clone(), first, idents, &cmd.args, fin)
            }
            Arg::Chain(_, node, fields) => {
                self.at(At::Arg(first));
                let recv = self.eval_chain_receiver(dot, first, node)?;
                self.eval_field_chain(dot, recv, first, fields, &cmd.args, fin)
            }
            Arg::Identifier(_, name) => {
                self.at(At::Arg(first));
                self.eval_call(dot, name, At::Cmd(cmd), &cmd.args[1..], fin)
            }
            Arg::Pipe(p) => {
                self.not_a_function(&cmd.args, &fin)?;
                self.eval_pipeline(dot, p)
            }
            Arg::Variable(_, idents) => {
                self.at(At::Arg(first));
                let v = self.var_value(&idents[0])?;
                if idents.len() == 1 {
                    self.not_a_function(&cmd.args, &fin)?;
                    return Ok(v);
                }
                self.eval_field_chain(dot, v, first, &idents[1..], &cmd.args, fin)
            }
            _ => {
                self.at(At::Arg(first));
                self.not_a_function(&cmd.args, &fin)?;
                match first {
                    Arg::Bool(_, b) => Ok(Value::Bool(*b)),
                    Arg::Dot(_) => Ok(dot.clone()),
                    Arg::Nil(_) => self.error("nil is not a command"),
                    Arg::Number(_, n) => self.ideal_constant(n),
                    Arg::String(_, _, s) => Ok(Value::str(s)),
                    _ => self.error(format!(
                        "can't evaluate command {}",
                        go_quote(&first.to_string())
                    )),
                }
            }
        }
    }

    fn eval_chain_receiver(&mut self, dot: &Value, chain: &'t Arg, node: &'t Arg) -> R<Value> {
        if let Arg::Nil(_) = node {
            return self.error(format!("indirection through explicit nil in {chain}"));
        }
        match node {
            Arg::Pipe(p) => self.eval_pipeline(dot, p),
            Arg::Identifier(_, name) => {
                self.at(At::Arg(node));
                self.eval_call(dot, name, At::Arg(node), &[], None)
            }
            other => self.eval_arg(dot, Param::Any, other),
        }
    }

    /// `Go's idealConstant`: a number literal where no type is known.
    fn ideal_constant(&self, n: &Number) -> R<Value> {
        if n.is_complex {
            return self.error("complex number literals are not supported");
        }
        let t = n.text.as_str();
        let hex_int = t.len() > 2
            && t.starts_with('0')
            && matches!(t.as_bytes()[1], b'x' | b'X')
            && !t.contains(['p', 'P']);
        if let Some(f) = n.float {
            if !hex_int && !n.is_rune && t.contains(['.', 'e', 'E', 'p', 'P']) {
                return Ok(Value::Float(f));
            }
        }
        if let Some(i) = n.int {
            return Ok(Value::Int(i));
        }
        if n.uint.is_some() {
            return self.error(format!("{t} overflows int"));
        }
        Ok(Value::Nil)
    }

    fn eval_field_chain(
        &mut self,
        dot: &Value,
        mut recv: Value,
        node: &'t Arg,
        idents: &[String],
        args: &'t [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        let n = idents.len();
        self.iface = false;
        for id in &idents[..n.saturating_sub(1)] {
            recv = self.eval_field(id, node, &[], None, recv)?;
        }
        match idents.last() {
            Some(last) => {
                let _ = dot;
                self.eval_field(last, node, args, fin, recv)
            }
            None => self.error("internal error: no fields in evalChainNode"),
        }
    }

    /// A field of the structs Prometheus hands templates (alert data, a
    /// query sample, a histogram) or a method without arguments of a time
    /// or duration: the value, and whether it is a method.
    fn struct_member(&mut self, recv: &Value, name: &str) -> Option<(Value, bool)> {
        match recv {
            Value::Alert(a) => match name {
                "Labels" => Some(Value::StrMap(Arc::new(a.labels.clone()))),
                "ExternalLabels" => Some(Value::StrMap(Arc::new(a.external_labels.clone()))),
                "ExternalURL" => Some(Value::str(&a.external_url)),
                "Value" => {
                    self.iface = true;
                    Some(a.value.clone())
                }
                _ => None,
            }
            .map(|v| (v, false)),
            Value::Sample(s) => match name {
                "Labels" => Some(Value::StrMap(Arc::new(s.labels.clone()))),
                "Value" => {
                    self.iface = true;
                    Some(s.value.clone())
                }
                _ => None,
            }
            .map(|v| (v, false)),
            Value::Histogram(h) => match name {
                "Count" => Some(Value::Float(h.count)),
                "Sum" => Some(Value::Float(h.sum)),
                "ZeroCount" => Some(Value::Float(h.zero_count)),
                "ZeroThreshold" => Some(Value::Float(h.zero_threshold)),
                "Schema" => Some(Value::Int(i64::from(h.schema))),
                "String" => Some(Value::str(&h.go_string())),
                _ => None,
            }
            .map(|v| (v, false)),
            Value::Time(ns) => match name {
                "Unix" => Some(Value::Int(ns.div_euclid(1_000_000_000))),
                "UnixMilli" => Some(Value::Int(ns.div_euclid(1_000_000))),
                "UnixNano" => Some(Value::Int(*ns)),
                "String" => Some(Value::str(&crate::value::time_string(*ns))),
                _ => None,
            }
            .map(|v| (v, true)),
            Value::Duration(ns) => match name {
                "Seconds" => Some(Value::Float(*ns as f64 / 1e9)),
                "Minutes" => Some(Value::Float(*ns as f64 / 6e10)),
                "Hours" => Some(Value::Float(*ns as f64 / 3.6e12)),
                "Milliseconds" => Some(Value::Int(ns / 1_000_000)),
                "Nanoseconds" => Some(Value::Int(*ns)),
                "String" => Some(Value::str(&crate::value::duration_string(*ns))),
                _ => None,
            }
            .map(|v| (v, true)),
            _ => None,
        }
    }

    fn eval_field(
        &mut self,
        name: &str,
        node: &'t Arg,
        args: &[Arg],
        fin: Option<Value>,
        recv: Value,
    ) -> R<Value> {
        let has_args = args.len() > 1 || fin.is_some();
        let typ = if std::mem::take(&mut self.iface) {
            "interface {}"
        } else {
            recv.type_name()
        };
        if let Some((v, method)) = self.struct_member(&recv, name) {
            if has_args {
                return self.error(if method {
                    format!(
                        "wrong number of args for {name}: want 0 got {}",
                        args.len().saturating_sub(1) + usize::from(fin.is_some())
                    )
                } else {
                    format!("{name} has arguments but cannot be invoked as function")
                });
            }
            return Ok(v);
        }
        match &recv {
            Value::Nil => return Ok(Value::Nil),
            Value::StrMap(m) => {
                if has_args {
                    return self.error(format!("{name} is not a method but has arguments"));
                }
                return Ok(Value::str(m.get(name).map(String::as_str).unwrap_or("")));
            }
            Value::Map(m) => {
                if has_args {
                    return self.error(format!("{name} is not a method but has arguments"));
                }
                self.iface = true;
                return Ok(m.get(name).cloned().unwrap_or(Value::Nil));
            }
            _ => {}
        }
        let _ = node;
        self.error(format!("can't evaluate field {name} in type {typ}"))
    }

    /// Evaluates a call of the function `name` with the argument nodes
    /// `args` (the function's own node excluded) and the piped `fin`.
    fn eval_call(
        &mut self,
        dot: &Value,
        name: &str,
        node: At<'t>,
        args: &'t [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        let Some(sig) = signature(name) else {
            return self.error(format!("{} is not a defined function", go_quote(name)));
        };
        let num_in = args.len() + usize::from(fin.is_some());
        let total = sig.fixed.len() + usize::from(sig.variadic.is_some());
        if sig.variadic.is_some() {
            if num_in < sig.fixed.len() {
                return self.error(format!(
                    "wrong number of args for {name}: want at least {} got {}",
                    sig.fixed.len(),
                    args.len()
                ));
            }
        } else if num_in != total {
            return self.error(format!(
                "wrong number of args for {name}: want {total} got {num_in}"
            ));
        }
        // and/or short-circuit.
        if name == "and" || name == "or" {
            let mut v = Value::Nil;
            for a in args {
                v = self.eval_arg(dot, Param::Val, a)?;
                if v.truth() == (name == "or") {
                    return Ok(v);
                }
            }
            if let Some(f) = fin {
                v = f;
            }
            return Ok(v);
        }
        let mut argv = Vec::with_capacity(num_in);
        let mut ifaces = Vec::with_capacity(num_in);
        for (i, a) in args.iter().enumerate() {
            let p = match sig.fixed.get(i) {
                Some(p) => *p,
                None => sig.variadic.unwrap_or(Param::Any),
            };
            self.iface = false;
            argv.push(self.eval_arg(dot, p, a)?);
            ifaces.push(
                self.iface && matches!(a, Arg::Field(..) | Arg::Variable(..) | Arg::Chain(..)),
            );
        }
        if let Some(f) = fin {
            let p = match sig.fixed.get(num_in - 1) {
                Some(p) => *p,
                None => sig.variadic.unwrap_or(Param::Any),
            };
            argv.push(self.validate_type(f, p)?);
        }
        let result = if name == "slice" {
            funcs::slice(&argv, &ifaces)
        } else if name == "call" {
            Err(match argv.first() {
                Some(Value::Nil) | None => "call of nil".to_string(),
                Some(v) => {
                    let callee = args
                        .first()
                        .map(|a| a.to_string())
                        .unwrap_or_else(|| v.fmt_v());
                    format!("non-function {callee} of type {}", v.type_name())
                }
            })
        } else if let Some(r) = funcs::call(name, &argv) {
            r
        } else {
            prometheus::call(self.env, name, &argv)
        };
        match result {
            Ok(v) => Ok(v),
            Err(e) => {
                self.at(node);
                self.error(format!("error calling {name}: {e}"))
            }
        }
    }

    fn validate_type(&self, v: Value, p: Param) -> R<Value> {
        match (p, &v) {
            (Param::Any | Param::Val, _) => Ok(v),
            (_, Value::Nil) if p.can_be_nil() => Ok(Value::Nil),
            (_, Value::Nil) => self.error(format!("invalid value; expected {}", p.type_name())),
            (Param::Str, Value::Str(_))
            | (Param::Sample, Value::Sample(_))
            | (Param::QueryResult, Value::QueryResult(_)) => Ok(v),
            _ => self.error(format!(
                "wrong type for value; expected {}; got {}",
                p.type_name(),
                v.type_name()
            )),
        }
    }

    fn eval_arg(&mut self, dot: &Value, p: Param, n: &'t Arg) -> R<Value> {
        self.at(At::Arg(n));
        match n {
            Arg::Dot(_) => return self.validate_type(dot.clone(), p),
            Arg::Nil(_) => {
                if p.can_be_nil() {
                    return Ok(Value::Nil);
                }
                return self.error(format!("cannot assign nil to {}", p.type_name()));
            }
            Arg::Field(_, idents) => {
                let v = self.eval_field_chain(
                    dot,
                    dot.clone(),
                    n,
                    idents,
                    std::slice::from_ref(n),
                    None,
                )?;
                return self.validate_type(v, p);
            }
            Arg::Variable(_, idents) => {
                let v = self.var_value(&idents[0])?;
                let v = if idents.len() > 1 {
                    self.eval_field_chain(dot, v, n, &idents[1..], &[], None)?
                } else {
                    v
                };
                return self.validate_type(v, p);
            }
            Arg::Pipe(pipe) => {
                let v = self.eval_pipeline(dot, pipe)?;
                return self.validate_type(v, p);
            }
            Arg::Identifier(_, name) => {
                let v = self.eval_call(dot, name, At::Arg(n), &[], None)?;
                return self.validate_type(v, p);
            }
            Arg::Chain(_, node, fields) => {
                let recv = self.eval_chain_receiver(dot, n, node)?;
                let v = self.eval_field_chain(dot, recv, n, fields, &[], None)?;
                return self.validate_type(v, p);
            }
            _ => {}
        }
        match p {
            Param::Any | Param::Val => match n {
                Arg::Bool(_, b) => Ok(Value::Bool(*b)),
                Arg::Number(_, num) => self.ideal_constant(num),
                Arg::String(_, _, s) => Ok(Value::str(s)),
                _ => self.error(format!(
                    "can't handle assignment of {n} to empty interface argument"
                )),
            },
            Param::Str => match n {
                Arg::String(_, _, s) => Ok(Value::str(s)),
                _ => self.error(format!("expected string; found {n}")),
            },
            Param::Sample | Param::QueryResult => self.error(format!(
                "can't handle {n} for arg of type {}",
                p.type_name()
            )),
        }
    }
}

/// The signature of a function the parser accepts.
fn signature(name: &str) -> Option<Sig> {
    use Param::*;
    let s = |fixed: &'static [Param], variadic: Option<Param>| Some(Sig { fixed, variadic });
    match name {
        "and" | "or" => s(&[Val], Some(Val)),
        "not" | "len" => s(&[Val], None),
        "index" | "slice" => s(&[Val], Some(Val)),
        "eq" => s(&[Val], Some(Val)),
        "ne" | "lt" | "le" | "gt" | "ge" => s(&[Val, Val], None),
        "call" => s(&[Val], Some(Val)),
        "print" | "println" | "html" | "js" | "urlquery" | "args" => s(&[], Some(Any)),
        "printf" => s(&[Str], Some(Any)),
        "query" | "safeHtml" | "title" | "toUpper" | "toLower" | "graphLink" | "tableLink"
        | "stripPort" | "stripDomain" | "parseDuration" | "urlQueryEscape" => s(&[Str], None),
        "first" => s(&[QueryResult], None),
        "label" => s(&[Str, Sample], None),
        "value" | "strvalue" => s(&[Sample], None),
        "reReplaceAll" => s(&[Str, Str, Str], None),
        "match" => s(&[Str, Str], None),
        "sortByLabel" => s(&[Str, QueryResult], None),
        "humanize" | "humanize1024" | "humanizeDuration" | "humanizePercentage"
        | "humanizeTimestamp" | "toTime" | "toDuration" => s(&[Any], None),
        "now" | "pathPrefix" | "externalURL" => s(&[], None),
        _ => None,
    }
}
