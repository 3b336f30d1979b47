package compare

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"tumbler.dev/tumbler"
)

var ctx = context.Background()

// backend is one way to get n Redis nodes for a test: Tumbler (a child process, one for
// all n nodes) or miniredis (n in-process servers).
type backend interface {
	Addrs() []string
	FastForward(d time.Duration)
	NodeDown(i int)
	Close()
}

type tumblerBackend struct{ s *tumbler.Server }

func (b tumblerBackend) Addrs() []string             { return b.s.Addrs() }
func (b tumblerBackend) FastForward(d time.Duration) { b.s.FastForward(d) }
func (b tumblerBackend) NodeDown(i int)              { b.s.NodeDown(i) }
func (b tumblerBackend) Close()                      { _ = b.s.Close() }

type miniBackend struct{ ms []*miniredis.Miniredis }

func (b miniBackend) Addrs() []string {
	var out []string
	for _, m := range b.ms {
		out = append(out, m.Addr())
	}
	return out
}
func (b miniBackend) FastForward(d time.Duration) {
	for _, m := range b.ms {
		m.FastForward(d)
	}
}
func (b miniBackend) NodeDown(i int) { b.ms[i].Close() }
func (b miniBackend) Close() {
	for _, m := range b.ms {
		m.Close()
	}
}

// startBackend starts one, the way a test would (RunT), and records how long that took.
func startBackend(t *testing.T, kind string, nodes int) backend {
	t.Helper()
	start := time.Now()
	var b backend
	switch kind {
	case "tumbler":
		var opts []tumbler.Option
		if nodes > 1 {
			opts = append(opts, tumbler.WithNodes(nodes))
		}
		s := tumbler.RunT(t, opts...)
		b = tumblerBackend{s}
	case "miniredis":
		var ms []*miniredis.Miniredis
		for i := 0; i < nodes; i++ {
			ms = append(ms, miniredis.RunT(t))
		}
		b = miniBackend{ms}
	default:
		t.Fatalf("backend %q", kind)
	}
	took := time.Since(start)
	recordStart(kind, took)
	recordStart(fmt.Sprintf("%s, %d node(s)", kind, nodes), took)
	return b
}

// redisServer starts the reference redis-server on a Unix socket in a temporary directory
// (no port to race for) and returns a client. Without redis-server the test fails, or skips
// under TUMBLER_SKIP_MISSING=1 (docs/testing.md).
func redisServer(t *testing.T) *redis.Client {
	t.Helper()
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "/usr/bin/redis-server"
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("TUMBLER_SKIP_MISSING") != "1" {
			t.Fatalf("redis-server (the reference) is missing at %s (set REDIS_SERVER, or TUMBLER_SKIP_MISSING=1 to skip)", bin)
		}
		t.Skipf("no redis-server at %s (TUMBLER_SKIP_MISSING=1)", bin)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--save", "",
		"--appendonly", "no", "--dir", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for i := 0; ; i++ {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if i > 500 {
			t.Fatalf("redis-server did not open %s in 5 s", sock)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, Protocol: 2})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func reply(v interface{}, err error) string {
	if err != nil {
		if err == redis.Nil {
			return "(nil)"
		}
		return "ERR: " + err.Error()
	}
	return fmt.Sprintf("%#v", v)
}
