package interop_test

// Remote write requests encoded by Prometheus' own protobuf types
// (interop/cmd/promremote, random specs) are answered by client_golang's
// real receiver handler with Prometheus' decoding and validation, and by
// Ferrite's crates/remote (`rwdump`, from RWDUMP_BIN). Both dumps — status,
// error message lines, 2.0 count headers, and every sample, exemplar and
// metadata committed — must be identical.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestRemoteWriteMatchesPrometheus(t *testing.T) {
	rwdump := exampleBin(t, "RWDUMP_BIN", "ferrite-remote", "rwdump")
	tmp := t.TempDir()
	prom := filepath.Join(tmp, "promremote")
	if out, err := exec.Command("go", "build", "-o", prom, "./cmd/promremote").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/promremote: %v\n%s", err, out)
	}
	const count = 1500
	dir := filepath.Join(tmp, "req")
	if out, err := exec.Command(prom, "random", "20260101", fmt.Sprint(count), dir).CombinedOutput(); err != nil {
		t.Fatalf("promremote random: %v\n%s", err, out)
	}
	statuses := map[string]int{}
	for i := 0; i < count; i++ {
		base := filepath.Join(dir, fmt.Sprintf("r%04d", i))
		want, err := os.ReadFile(base + ".prom.txt")
		if err != nil {
			t.Fatal(err)
		}
		got, err := exec.Command(rwdump, base+".bin", base+".headers").Output()
		if err != nil {
			t.Fatalf("%s: rwdump: %v", base, err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: dumps differ\n--- Prometheus\n%s--- Ferrite\n%s", base, want, got)
			continue
		}
		statuses[strings.SplitN(string(want), "\n", 2)[0]]++
	}
	t.Logf("%d requests agree: %v", count, statuses)
}
