package embedded_test

import (
	"os"
	"testing"

	"tumbler.dev/tumbler"
	"tumbler.dev/tumbler/embedded"
)

func TestRunUsesTheEmbeddedBinary(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // extract into the test's directory
	p, err := embedded.Path()
	if err != nil {
		// No binary embedded (go/embedded/build.sh puts one in): fails, or skips under
		// TUMBLER_SKIP_MISSING=1 (docs/testing.md).
		if os.Getenv("TUMBLER_SKIP_MISSING") != "1" {
			t.Fatalf("%v (run go/embedded/build.sh, or set TUMBLER_SKIP_MISSING=1 to skip)", err)
		}
		t.Skipf("%v (TUMBLER_SKIP_MISSING=1)", err)
	}
	// Neither TUMBLER_BINARY nor PATH: only the blank import can provide the binary.
	t.Setenv("TUMBLER_BINARY", "")
	t.Setenv("PATH", t.TempDir())
	got, err := tumbler.BinaryPath("")
	if err != nil || got != p {
		t.Fatalf("BinaryPath: %q %v, want %q", got, err, p)
	}
	s := tumbler.RunT(t)
	if v, err := s.Do("PING"); err != nil || v != "PONG" {
		t.Fatalf("PING: %v %v", v, err)
	}
	s.FastForward(1)
	if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("the extracted binary: %v %v", st, err)
	}
}
