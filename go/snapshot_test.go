package tumbler

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func bulk(v interface{}) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	if v == nil {
		return "<nil>"
	}
	return "<not a bulk string>"
}

func TestSnapshotRestoresEveryDatabase(t *testing.T) {
	s := Run(t)
	c := client(t, s, 0, "", "")
	must(t, c, "SET", "a", "1")
	must(t, c, "RPUSH", "list", "x", "y")
	must(t, c, "SET", "ttl", "t", "PX", "60000")
	must(t, c, "SELECT", "5")
	must(t, c, "SET", "five", "5")
	s.Snapshot("seed")
	if got := s.Snapshots(); !reflect.DeepEqual(got, []string{"seed"}) {
		t.Fatalf("Snapshots() = %v, want [seed]: one name, whatever the databases", got)
	}
	if raw, _ := s.Do("TUMBLER.SNAPSHOT", "LIST"); !strings.Contains(fmt.Sprintf("%s", raw), "seed@db5") {
		t.Errorf("database 5 has no snapshot of its own on the server: %s", raw)
	}

	must(t, c, "DEL", "five")
	must(t, c, "SET", "extra", "e")
	must(t, c, "SELECT", "0")
	must(t, c, "SET", "a", "changed")
	must(t, c, "DEL", "list")
	must(t, c, "SET", "new", "n")
	must(t, c, "PERSIST", "ttl")

	s.Restore("seed")
	if v := bulk(must(t, c, "GET", "a")); v != "1" {
		t.Errorf("a = %s after Restore, want 1", v)
	}
	if n := must(t, c, "LLEN", "list"); n != int64(2) {
		t.Errorf("LLEN list = %v after Restore, want 2", n)
	}
	if n := must(t, c, "EXISTS", "new"); n != int64(0) {
		t.Errorf("a key written after the snapshot survived Restore")
	}
	if ms, _ := must(t, c, "PTTL", "ttl").(int64); ms <= 0 || ms > 60000 {
		t.Errorf("PTTL ttl = %d after Restore, want the TTL back", ms)
	}
	must(t, c, "SELECT", "5")
	if v := bulk(must(t, c, "GET", "five")); v != "5" {
		t.Errorf("database 5's key = %s after Restore, want 5", v)
	}
	if n := must(t, c, "EXISTS", "extra"); n != int64(0) {
		t.Errorf("database 5 kept a key written after the snapshot")
	}
	must(t, c, "SELECT", "0")

	// The control connection stayed in database 0.
	if v, err := s.Do("GET", "a"); err != nil || bulk(v) != "1" {
		t.Errorf("Do(GET a) = %v, %v: the control connection left database 0", v, err)
	}

	if !s.DropSnapshot("seed") {
		t.Error("DropSnapshot(seed) = false for a snapshot that exists")
	}
	if s.DropSnapshot("seed") {
		t.Error("DropSnapshot(seed) = true the second time")
	}
	err := s.restore("seed")
	if err == nil || !strings.Contains(err.Error(), "no such snapshot") {
		t.Errorf("restore of a dropped snapshot: %v, want \"no such snapshot\"", err)
	}
}

func TestSnapshotDBLeavesTheOtherDatabases(t *testing.T) {
	s := Run(t)
	c := client(t, s, 0, "", "")
	must(t, c, "SELECT", "3")
	must(t, c, "SET", "mine", "1")
	s.SnapshotDB(3, "worker3")
	must(t, c, "SET", "mine", "2")
	if _, err := s.Do("SET", "other-worker", "x"); err != nil {
		t.Fatal(err)
	}
	if err := s.RestoreDB(3, "worker3"); err != nil {
		t.Fatal(err)
	}
	if v := bulk(must(t, c, "GET", "mine")); v != "1" {
		t.Errorf("database 3: mine = %s after RestoreDB, want 1", v)
	}
	if v, _ := s.Do("GET", "other-worker"); bulk(v) != "x" {
		t.Errorf("database 0 was restored too: other-worker = %s", bulk(v))
	}
	if got := s.Snapshots(); !reflect.DeepEqual(got, []string{"worker3"}) {
		t.Errorf("Snapshots() = %v, want [worker3]", got)
	}
	if err := s.RestoreDB(3, "nope"); err == nil || !strings.Contains(err.Error(), "no such snapshot") {
		t.Errorf("RestoreDB of an unknown name: %v", err)
	}
}

func TestSnapshotCoversEveryNode(t *testing.T) {
	s := Run(t, WithNodes(2))
	c0, c1 := client(t, s, 0, "", ""), client(t, s, 1, "", "")
	must(t, c0, "SET", "zero", "0")
	must(t, c1, "SET", "one", "1")
	s.Snapshot("s")
	must(t, c0, "DEL", "zero")
	must(t, c1, "SET", "one", "changed")
	s.Restore("s")
	if v := bulk(must(t, c0, "GET", "zero")); v != "0" {
		t.Errorf("node 0: zero = %s, want 0", v)
	}
	if v := bulk(must(t, c1, "GET", "one")); v != "1" {
		t.Errorf("node 1: one = %s, want 1", v)
	}
}

// Subtests share one seeded server; RestoreAfter gives each the seed, whatever the ones
// before it changed.
func TestRestoreAfterIsolatesTests(t *testing.T) {
	s := Run(t)
	c := client(t, s, 0, "", "")
	must(t, c, "SET", "stock:apple", "10")
	s.Snapshot("seed")

	seesOnlyTheSeed := func(t *testing.T) {
		t.Helper()
		if v := bulk(must(t, c, "GET", "stock:apple")); v != "10" {
			t.Errorf("stock:apple = %s, want the seeded 10", v)
		}
		for _, k := range []string{"order:1", "order:2"} {
			if n := must(t, c, "EXISTS", k); n != int64(0) {
				t.Errorf("%s, written by an earlier test, is still there", k)
			}
		}
	}
	t.Run("first", func(t *testing.T) {
		s.RestoreAfter(t, "seed")
		seesOnlyTheSeed(t)
		must(t, c, "SET", "order:1", "paid")
		must(t, c, "DECRBY", "stock:apple", "3")
	})
	t.Run("second", func(t *testing.T) {
		s.RestoreAfter(t, "seed")
		seesOnlyTheSeed(t)
		must(t, c, "SET", "order:2", "paid")
		must(t, c, "DEL", "stock:apple")
	})
	// The control case: without RestoreAfter, what a test writes stays for the next one.
	t.Run("unrestored", func(t *testing.T) {
		seesOnlyTheSeed(t)
		must(t, c, "SET", "order:1", "paid")
	})
	if n := must(t, c, "EXISTS", "order:1"); n != int64(1) {
		t.Errorf("without RestoreAfter the key should have stayed")
	}
}

func TestStateRDBAndWriteArtifacts(t *testing.T) {
	s := Run(t)
	c := client(t, s, 0, "", "")
	must(t, c, "SET", "user:1", "ada")
	must(t, c, "HSET", "cart:9", "sku", "42")
	must(t, c, "SELECT", "3")
	must(t, c, "SET", "in-three", "x")

	state, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"user:1", "ada", "cart:9", "sku", "in-three"} {
		if !strings.Contains(state, k) {
			t.Errorf("State() does not name %q:\n%s", k, state)
		}
	}
	rdb, err := s.RDB()
	if err != nil {
		t.Fatal(err)
	}
	checkRDB(t, "RDB()", rdb, "user:1", "in-three")

	dir := t.TempDir()
	files, err := s.WriteArtifacts(filepath.Join(dir, "out"), "case", "why: a note")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "out", "case.txt"), filepath.Join(dir, "out", "case.rdb")}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("WriteArtifacts wrote %v, want %v", files, want)
	}
	txt, _ := os.ReadFile(want[0])
	if !strings.HasPrefix(string(txt), "# why: a note\n") || !strings.Contains(string(txt), "cart:9") {
		t.Errorf("%s:\n%s", want[0], txt)
	}
	saved, _ := os.ReadFile(want[1])
	checkRDB(t, want[1], saved, "cart:9")
}

func checkRDB(t *testing.T, what string, rdb []byte, keys ...string) {
	t.Helper()
	if !bytes.HasPrefix(rdb, []byte("REDIS")) || len(rdb) < 10 {
		t.Errorf("%s is not an RDB file: %q", what, rdb[:min(len(rdb), 16)])
	}
	for _, k := range keys {
		if !bytes.Contains(rdb, []byte(k)) {
			t.Errorf("%s does not hold %q", what, k)
		}
	}
}

func TestArtifactName(t *testing.T) {
	for in, want := range map[string]string{
		"TestX":                 "TestX",
		"TestX/sub_case#01":     "TestX.sub_case#01",
		`TestX/a:b\c*d?"e"<f>|`: "TestX.a_b_c_d__e__f__",
	} {
		if got := ArtifactName(in); got != want {
			t.Errorf("ArtifactName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestArtifactsHelper fails on purpose; TestFailedTestsLeaveArtifacts runs it in a child
// process and checks what it left.
func TestArtifactsHelper(t *testing.T) {
	if os.Getenv("TUMBLER_ARTIFACTS_HELPER") != "1" {
		t.Skip("the failing test that TestFailedTestsLeaveArtifacts runs in a child process")
	}
	s := Run(t) // artifacts on: TUMBLER_ARTIFACTS is set
	if _, err := s.Do("SET", "seeded", "yes"); err != nil {
		t.Fatal(err)
	}
	s.Snapshot("seed")
	t.Run("fails after changes", func(t *testing.T) {
		s.RestoreAfter(t, "seed")
		if _, err := s.Do("HSET", "cart:7", "sku", "apple"); err != nil {
			t.Fatal(err)
		}
		t.Error("deliberately")
	})
	t.Run("passes", func(t *testing.T) {
		s.RestoreAfter(t, "seed")
		if n, _ := s.Do("EXISTS", "cart:7"); n != int64(0) {
			t.Error("cart:7 survived the restore after the failed subtest")
		}
		if _, err := s.Do("SET", "passing", "1"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFailedTestsLeaveArtifacts(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestArtifactsHelper$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "TUMBLER_ARTIFACTS_HELPER=1", ArtifactsEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the helper's deliberately failing test passed:\n%s", out)
	}
	for _, line := range []string{
		"--- FAIL: TestArtifactsHelper ",
		"--- FAIL: TestArtifactsHelper/fails_after_changes ",
		"--- PASS: TestArtifactsHelper/passes ",
	} {
		if !strings.Contains(string(out), line) {
			t.Errorf("the helper's output lacks %q:\n%s", line, out)
		}
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	want := []string{
		"TestArtifactsHelper.fails_after_changes.rdb", "TestArtifactsHelper.fails_after_changes.txt",
		"TestArtifactsHelper.rdb", "TestArtifactsHelper.txt", // the parent failed with its subtest
	}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("artifacts %v, want %v (none for the passing subtest); helper output:\n%s", names, want, out)
	}

	// The failed subtest's state as it failed, before RestoreAfter put the seed back.
	sub, _ := os.ReadFile(filepath.Join(dir, "TestArtifactsHelper.fails_after_changes.txt"))
	for _, k := range []string{"tumbler state when TestArtifactsHelper/fails_after_changes failed", "cart:7", "apple", "seeded"} {
		if !strings.Contains(string(sub), k) {
			t.Errorf("the failed subtest's state lacks %q:\n%s", k, sub)
		}
	}
	rdb, _ := os.ReadFile(filepath.Join(dir, "TestArtifactsHelper.fails_after_changes.rdb"))
	checkRDB(t, "the failed subtest's .rdb", rdb, "cart:7", "seeded")

	// The parent's state at its end: the seed, restored after each subtest.
	parent, _ := os.ReadFile(filepath.Join(dir, "TestArtifactsHelper.txt"))
	if !strings.Contains(string(parent), "seeded") || strings.Contains(string(parent), "cart:7") ||
		strings.Contains(string(parent), "passing") {
		t.Errorf("the parent's state should hold the seed only:\n%s", parent)
	}
}
