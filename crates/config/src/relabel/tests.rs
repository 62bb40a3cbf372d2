use proptest::prelude::*;

use super::*;

fn rules(yaml: &str) -> Vec<RelabelConfig> {
    parse_rules(yaml).expect("rules parse")
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::from_pairs(pairs)
}

fn relabel(pairs: &[(&str, &str)], yaml: &str) -> Option<Labels> {
    let rules = rules(yaml);
    for r in &rules {
        r.validate(ValidationScheme::Utf8).expect("valid rule");
    }
    apply(&labels(pairs), &rules, ValidationScheme::Utf8)
}

fn expand_with(re: &str, haystack: &str, template: &str) -> String {
    let re = compile_anchored(re).expect("regex");
    let caps = re.captures(haystack).expect("matches");
    expand(template, &re, haystack, &caps)
}

#[test]
fn defaults_are_prometheus_defaults() {
    let r = &rules("- target_label: t\n")[0];
    assert_eq!(r.separator, ";");
    assert_eq!(r.regex.as_str(), "(.*)");
    assert!(r.regex.default);
    assert_eq!(r.replacement, "$1");
    assert_eq!(r.action, Some(RelabelAction::Replace));
    assert!(r.source_labels.is_empty());
    let written = &rules("- {target_label: t, regex: '(.*)'}\n")[0];
    assert!(!written.regex.default, "a written (.*) is not the default");
    assert_ne!(r, written);
}

#[test]
fn null_fields_are_go_zero_values() {
    let r = &rules("- {separator: , regex: , replacement: , target_label: , action: }\n")[0];
    assert_eq!(r.separator, "");
    assert_eq!(r.regex.as_str(), "");
    assert!(r.regex.is_match("") && !r.regex.is_match("a"));
    assert_eq!(r.replacement, "");
    assert_eq!(r.action, None);
    assert_eq!(
        r.validate(ValidationScheme::Utf8),
        Err("relabel action cannot be empty".to_string())
    );
}

#[test]
fn decoding_errors_read_as_prometheus_errors() {
    let err = |yaml: &str| parse_rules(yaml).expect_err(yaml);
    assert_eq!(
        err("- action: rename\n"),
        "unknown relabel action \"rename\""
    );
    assert_eq!(
        err("- source_labels: ['']\n"),
        "\"\" is not a valid label name"
    );
    assert!(
        err("- targetlabel: x\n").contains("field targetlabel not found in type relabel.plain"),
        "{}",
        err("- targetlabel: x\n")
    );
    assert_eq!(
        rules("- action: LabelMap\n")[0].action,
        Some(RelabelAction::LabelMap)
    );
}

#[test]
fn validation_messages() {
    let check = |yaml: &str, names: ValidationScheme| rules(yaml)[0].validate(names);
    let utf8 = ValidationScheme::Utf8;
    let legacy = ValidationScheme::Legacy;
    for (yaml, names, want) in [
        ("- {action: hashmod, target_label: t}", utf8, "relabel configuration for hashmod requires non-zero modulus"),
        ("- {action: replace}", utf8, "relabel configuration for replace action requires 'target_label' value"),
        ("- {action: lowercase, target_label: t, replacement: x}", utf8, "'replacement' can not be set for lowercase action"),
        ("- {target_label: a-b}", legacy, "\"a-b\" is invalid 'target_label' for replace action"),
        ("- {target_label: 1$a}", legacy, "\"1$a\" is invalid 'target_label' for replace action"),
        ("- {target_label: '${1'}", legacy, "\"${1\" is invalid 'target_label' for replace action"),
        ("- {action: labelmap, replacement: a-$1}", legacy, "\"a-$1\" is invalid 'replacement' for labelmap action"),
        ("- {action: labelmap, replacement: ''}", utf8, "\"\" is invalid 'replacement' for labelmap action"),
        ("- {action: dropequal, target_label: t, separator: '-'}", utf8, "dropequal action requires only 'source_labels' and `target_label`, and no other fields"),
        ("- {action: labelkeep, source_labels: []}", utf8, "labelkeep action requires only 'regex', and no other fields"),
    ] {
        assert_eq!(check(yaml, names), Err(want.to_string()), "{yaml}");
    }
    for (yaml, names) in [
        ("- {target_label: a-b}", utf8),
        ("- {target_label: 'x_${1}_$name'}", legacy),
        ("- {action: labelkeep, source_labels: }", utf8),
        (
            "- {action: keepequal, source_labels: [a], target_label: b}",
            utf8,
        ),
        (
            "- {action: hashmod, target_label: t, modulus: 18446744073709551615}",
            utf8,
        ),
    ] {
        assert_eq!(check(yaml, names), Ok(()), "{yaml}");
    }
}

#[test]
fn templates_expand_as_go_expands_them() {
    let re = "(?P<first>[a-z]+)-([0-9]+)";
    for (template, want) in [
        ("$1", "ab"),
        ("${1}", "ab"),
        ("$2", "12"),
        ("$1x", ""), // group "1x"
        ("${1}x", "abx"),
        ("$first", "ab"),
        ("${first}_", "ab_"),
        ("$0", "ab-12"),
        ("$01", ""), // a name, not group 1
        ("$9", ""),  // no such group
        ("$$1", "$1"),
        ("$", "$"),
        ("${1", "${1"), // unclosed: the $ stays
        ("${ 1}", "${ 1}"),
        ("a$-b", "a$-b"),
        ("$é", ""),        // a name (Unicode letters count)
        ("x$1$2y", "xab"), // "$2y" is group "2y"
    ] {
        assert_eq!(
            expand_with(re, "ab-12", template),
            want,
            "template {template:?}"
        );
    }
}

#[test]
fn replace_writes_expanded_targets_and_deletes_on_empty() {
    let out = relabel(
        &[("__address__", "host:9100"), ("a", "1")],
        "- {source_labels: [__address__], regex: '([^:]+):(.*)', target_label: 'port_$1', replacement: '$2'}\n\
         - {source_labels: [b], target_label: a, replacement: ''}\n\
         - {source_labels: [nothing], regex: 'x', target_label: never}\n",
    )
    .expect("kept");
    assert_eq!(
        out,
        labels(&[("__address__", "host:9100"), ("port_host", "9100")])
    );
}

#[test]
fn keep_drop_and_equal_actions() {
    let base = [("a", "1"), ("b", "1"), ("c", "2")];
    assert!(relabel(&base, "- {source_labels: [a], regex: '1', action: keep}").is_some());
    assert!(relabel(&base, "- {source_labels: [a], regex: '2', action: keep}").is_none());
    assert!(relabel(
        &base,
        "- {source_labels: [a, c], regex: '1;2', action: drop}"
    )
    .is_none());
    assert!(relabel(
        &base,
        "- {source_labels: [a], target_label: b, action: keepequal}"
    )
    .is_some());
    assert!(relabel(
        &base,
        "- {source_labels: [a], target_label: c, action: keepequal}"
    )
    .is_none());
    assert!(relabel(
        &base,
        "- {source_labels: [a], target_label: b, action: dropequal}"
    )
    .is_none());
}

#[test]
fn labelmap_walks_original_labels_then_set_ones() {
    // Both `b` and `z` (set by the first rule, so walked last) map to `m`:
    // the last one walked wins, as in Prometheus' labels.Builder.
    let out = relabel(
        &[("b", "2"), ("a", "1")],
        "- {source_labels: [a], target_label: z, replacement: zz}\n\
         - {regex: '([bz])', replacement: m, action: labelmap}\n",
    )
    .expect("kept");
    assert_eq!(out.get("m"), "zz");
    let out = relabel(
        &[("__meta_x", "1"), ("job", "j")],
        "- {regex: '__meta_(.+)', action: labelmap}",
    )
    .expect("kept");
    assert_eq!(out, labels(&[("__meta_x", "1"), ("job", "j"), ("x", "1")]));
}

#[test]
fn labeldrop_and_labelkeep() {
    let base = [("__meta_a", "1"), ("job", "j"), ("x", "2")];
    let dropped = relabel(&base, "- {regex: '__meta_.*', action: labeldrop}").expect("kept");
    assert_eq!(dropped, labels(&[("job", "j"), ("x", "2")]));
    let kept = relabel(&base, "- {regex: 'job|x', action: labelkeep}").expect("kept");
    assert_eq!(kept, dropped);
}

#[test]
fn hashmod_takes_the_md5_tail() {
    // Prometheus' values (TestRelabelMatchesPrometheus checks many more).
    let out = relabel(
        &[("job", "node")],
        "- {source_labels: [job], target_label: s, modulus: 7, action: hashmod}",
    )
    .expect("kept");
    assert_eq!(out.get("s"), "6");
}

#[test]
fn case_mapping_is_per_character() {
    assert_eq!(go_to_upper("straße"), "STRAßE");
    assert_eq!(go_to_lower("İI"), "ii");
    assert_eq!(go_to_upper("ᾳ"), "ᾼ");
    assert_eq!(go_to_lower("ΣΑΣ"), "σασ", "no final sigma");
    assert_eq!(go_to_upper("abc"), "ABC");
}

#[test]
fn legacy_templates() {
    for ok in ["a", "_", "$1", "${1}", "a$1b", "x_${name}_1", "$a$b"] {
        assert!(is_legacy_template(ok), "{ok}");
    }
    for bad in ["", "1a", "1$a", "a-b", "$", "${}", "${1", "a$", "é"] {
        assert!(!is_legacy_template(bad), "{bad}");
    }
}

proptest! {
    #[test]
    fn relabeling_anything_never_panics(
        pairs in proptest::collection::vec(("[a-z_$é]{1,4}", "[a-z0-9;$é]{0,4}"), 0..5),
        template in "[a-z0-9${}é_-]{0,8}",
        regex in prop::sample::select(vec!["(.*)", "", "(a)(b)?", "(?P<n>.)(.*)", "[a-z]+"]),
        action in prop::sample::select(RelabelAction::ALL.to_vec()),
        modulus in 1u64..,
    ) {
        let base = Labels::new(pairs);
        let rule = RelabelConfig {
            source_labels: base.iter().map(|l| l.name.to_string()).collect(),
            regex: RelabelRegex::new(regex).expect("regex"),
            modulus,
            target_label: template.clone(),
            replacement: template,
            action: Some(action),
            ..RelabelConfig::default()
        };
        if let Some(out) = apply(&base, std::slice::from_ref(&rule), ValidationScheme::Utf8) {
            prop_assert!(out.iter().all(|l| !l.value.is_empty()), "{out:?}");
        }
    }
}

#[test]
fn steps_show_each_rule_and_stop_at_a_drop() {
    let rs = rules(
        "- {source_labels: [a], target_label: b}\n- {source_labels: [b], regex: 'x', action: drop}\n- {target_label: c, replacement: z}\n",
    );
    let steps = apply_steps(&labels(&[("a", "y")]), &rs, ValidationScheme::Utf8);
    assert_eq!(
        steps,
        [
            Some(labels(&[("a", "y"), ("b", "y")])),
            Some(labels(&[("a", "y"), ("b", "y")])),
            Some(labels(&[("a", "y"), ("b", "y"), ("c", "z")])),
        ]
    );
    let steps = apply_steps(&labels(&[("a", "x")]), &rs, ValidationScheme::Utf8);
    assert_eq!(steps, [Some(labels(&[("a", "x"), ("b", "x")])), None, None]);
}
