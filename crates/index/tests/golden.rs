//! Prometheus-written index files (see testdata/README.md): Ferrite reads
//! them exactly as Prometheus' reader does, and writes the same bytes.

use std::path::PathBuf;

use ferrite_index::postings::{expand, intersect, merge, without};
use ferrite_index::text::{dump, Spec};
use ferrite_index::IndexReader;

const GOLDEN: [&str; 4] = ["basic", "empty", "sampled", "unicode"];

fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

#[test]
fn reader_dumps_prometheus_indexes_as_prometheus_does() {
    for name in GOLDEN {
        let r = IndexReader::open(testdata(&format!("{name}.index"))).unwrap();
        let want = std::fs::read_to_string(testdata(&format!("{name}.dump"))).unwrap();
        assert_eq!(dump(&r).unwrap(), want, "{name}");
    }
}

#[test]
fn writer_reproduces_prometheus_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for name in GOLDEN {
        let spec =
            Spec::parse(&std::fs::read_to_string(testdata(&format!("{name}.spec"))).unwrap())
                .unwrap();
        let out = dir.path().join(format!("{name}.index"));
        spec.write_index(&out).unwrap();
        let got = std::fs::read(&out).unwrap();
        let want = std::fs::read(testdata(&format!("{name}.index"))).unwrap();
        assert!(
            got == want,
            "{name}: {} bytes written, Prometheus wrote {}",
            got.len(),
            want.len()
        );
        assert!(!dir.path().join(format!("{name}.index_tmp_po")).exists());
    }
}

#[test]
fn queries_on_the_sampled_index() {
    let r = IndexReader::open(testdata("sampled.index")).unwrap();
    assert_eq!(r.label_names(), vec![&b"__name__"[..], b"code", b"pod"]);
    let pods = r.label_values(b"pod").unwrap();
    assert_eq!(pods.len(), 70);
    assert_eq!(pods[0], b"pod-00");
    assert_eq!(pods[69], b"pod-69");
    // Values across sample boundaries, unknown and duplicated values.
    let p = |vals: &[&[u8]]| expand(&mut *r.postings(b"pod", vals).unwrap());
    for v in [
        &b"pod-00"[..],
        b"pod-31",
        b"pod-32",
        b"pod-33",
        b"pod-63",
        b"pod-64",
        b"pod-69",
    ] {
        assert_eq!(p(&[v]).len(), 1, "{}", String::from_utf8_lossy(v));
    }
    assert!(p(&[b"pod-70"]).is_empty());
    assert!(p(&[b"aaa", b"pod-0", b"zzz"]).is_empty());
    assert_eq!(p(&[b"pod-33", b"pod-01", b"pod-33", b"pod-64"]).len(), 3);
    assert!(expand(&mut *r.postings(b"nope", &[b"x"]).unwrap()).is_empty());

    // Combinators over on-disk lists: code=200 is every third pod.
    let code200 = r.postings(b"code", &[b"200"]).unwrap();
    let some_pods = r
        .postings(b"pod", &[b"pod-00", b"pod-01", b"pod-03", b"pod-69"])
        .unwrap();
    assert_eq!(expand(&mut *intersect(vec![code200, some_pods])).len(), 3);
    let all = r.all_postings().unwrap();
    let mut not200 = without(all, r.postings(b"code", &[b"200"]).unwrap());
    let mut others = merge(vec![
        r.postings(b"code", &[b"404"]).unwrap(),
        r.postings(b"code", &[b"500"]).unwrap(),
    ]);
    let (a, b) = (expand(&mut *not200), expand(&mut *others));
    assert_eq!(a, b);
    assert_eq!(a.len(), 46);

    let mut odd = r
        .postings_for_label_matching(b"pod", |v| v.ends_with(b"1"))
        .unwrap();
    assert_eq!(expand(&mut *odd).len(), 7);
    assert!(expand(&mut *r.postings_for_label_matching(b"nope", |_| true).unwrap()).is_empty());

    let mut labels = Vec::new();
    let mut chunks = Vec::new();
    r.series(a[0], &mut labels, Some(&mut chunks)).unwrap();
    assert_eq!(labels[0].name, b"__name__");
    assert_eq!(
        r.reverse_lookup(b"pod-42")
            .map(|id| r.lookup_symbol(id).unwrap())
            .unwrap(),
        b"pod-42"
    );
}
