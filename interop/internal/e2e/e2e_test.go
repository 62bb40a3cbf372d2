package e2e

import "testing"

func TestParseAndDiff(t *testing.T) {
	vec := `[{"metric":{"job":"b","__name__":"up"},"value":[1700000000,"1"]},{"metric":{"__name__":"up","job":"a"},"value":[1700000000,"0"]}]`
	v, err := ParseResult(vec)
	if err != nil || v.Kind != "vector" || len(v.Series) != 2 || v.Series[0].Labels != `{__name__="up", job="a"}` {
		t.Fatalf("vector: %+v %v", v, err)
	}
	mat := `[{"metric":{"job":"a"},"values":[[1700000000.5,"1.5"],[1700000001.5,"NaN"]]}]`
	m, err := ParseResult(mat)
	if err != nil || m.Kind != "matrix" || m.Samples() != 2 || m.Series[0].Points[0][0] != "1700000000.5" {
		t.Fatalf("matrix: %+v %v", m, err)
	}
	s, err := ParseResult(`[1700000000,"3"]`)
	if err != nil || s.Kind != "scalar" || s.Series[0].Points[0][1] != "3" {
		t.Fatalf("scalar: %+v %v", s, err)
	}
	if e, err := ParseResult("[]\n"); err != nil || e.Kind != "empty" {
		t.Fatalf("empty: %+v %v", e, err)
	}
	if d, _ := Diff(m, m, 0); d != "" {
		t.Fatalf("self diff: %s", d)
	}
	m2, _ := ParseResult(`[{"metric":{"job":"a"},"values":[[1700000000.5,"1.5000000000001"],[1700000001.5,"NaN"]]}]`)
	if d, n := Diff(m, m2, 1e-9); d != "" || n != 1 {
		t.Fatalf("tolerance: %q %d", d, n)
	}
	if d, _ := Diff(m, m2, 0); d == "" {
		t.Fatal("exact comparison accepted a different value")
	}
	if d, _ := Diff(v, m, 0); d == "" {
		t.Fatal("vector and matrix compared equal")
	}
	v2, _ := ParseResult(`[{"metric":{"__name__":"up","job":"a"},"value":[1700000000,"0"]}]`)
	if d, _ := Diff(v, v2, 0); d == "" {
		t.Fatal("a missing series went unnoticed")
	}
	if d, _ := Diff(v2, v, 0); d == "" {
		t.Fatal("an extra series went unnoticed")
	}
}
