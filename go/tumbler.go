// Package tumbler starts a Tumbler server (a Redis-compatible server with native lock
// primitives, written in Rust) from Go tests, with the habits of miniredis and the
// semantics of Redis 7:
//
//	func TestLease(t *testing.T) {
//		s := tumbler.RunT(t)                  // stopped by t.Cleanup
//		rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
//		rdb.Set(ctx, "lease", "me", 30*time.Second)
//		s.FastForward(30 * time.Second)       // the lease lapses now
//	}
//
// The server is a child process: the executable named by WithBinary, else $TUMBLER_BINARY,
// else `tumbler` on PATH. It listens on loopback on free ports and exits when the test
// binary does, even if that is killed: it watches its stdin, a pipe only this process holds.
// The package uses the standard library only; control commands go over its own small RESP
// connection.
package tumbler

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ErrNoBinary is wrapped by the error Start returns when no tumbler executable is found.
var ErrNoBinary = errors.New("tumbler: no server binary")

const howToGet = "set TUMBLER_BINARY to a tumbler executable, or put `tumbler` on PATH " +
	"(from a checkout of the Tumbler repository: `cargo install --path server`, or " +
	"`bash scripts/static-build.sh` for the static Linux binary)"

const cmdTimeout = 5 * time.Second

// Server is a running tumbler process with one or more nodes.
type Server struct {
	cfg   config
	tb    testing.TB
	bin   string
	cmd   *exec.Cmd
	stdin interface{ Close() error }
	ports []int
	tls   *tlsFiles
	dir   string
	// ctrlUser and ctrlPass authenticate the control connections.
	ctrlUser, ctrlPass string

	exited  chan struct{}
	waitErr error
	stderr  *tailBuffer

	mu      sync.Mutex
	conns   map[int]*conn
	down    map[int]bool
	pending map[int]int64 // ms of FastForward a down node missed
	frozen  bool
	closed  bool
	saved   map[string]bool // tests whose failure artifacts were written
	dbs     int             // databases per node, once asked
}

// Run starts a server and stops it when the test ends (t.Cleanup). On error it fails the
// test at once (t.Fatal), as miniredis.RunT does; call it from the test's goroutine.
func Run(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := Start(opts...)
	if err != nil {
		tb.Fatalf("%v", err)
		return nil
	}
	s.tb = tb
	tb.Cleanup(func() { _ = s.Close() })
	if dir := s.artifactsDir(); dir != "" {
		// Runs before Close (cleanups run last-in first-out).
		tb.Cleanup(func() { s.saveIfFailed(tb, dir) })
	}
	return s
}

// RunT is Run, under miniredis' name.
func RunT(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	return Run(tb, opts...)
}

var (
	providerMu sync.Mutex
	provider   func() (string, error)
)

// RegisterBinary installs a source of the server binary used when neither WithBinary nor
// $TUMBLER_BINARY names one, before PATH is searched. The companion module
// tumbler.dev/tumbler/embedded calls it from init, so a blank import of that module is
// enough to run the binary it carries.
func RegisterBinary(p func() (string, error)) {
	providerMu.Lock()
	provider = p
	providerMu.Unlock()
}

// BinaryPath is the executable Start runs: path if not empty, else $TUMBLER_BINARY, else
// the one of a registered companion (RegisterBinary), else `tumbler` on PATH. The error
// wraps ErrNoBinary and says how to get one.
func BinaryPath(path string) (string, error) {
	from := "WithBinary"
	if path == "" {
		path, from = os.Getenv("TUMBLER_BINARY"), "TUMBLER_BINARY"
	}
	if path == "" {
		providerMu.Lock()
		p := provider
		providerMu.Unlock()
		if p != nil {
			got, err := p()
			if err != nil {
				return "", fmt.Errorf("%w: the embedded binary: %v; %s", ErrNoBinary, err, howToGet)
			}
			path, from = got, "the embedded binary"
		}
	}
	if path == "" {
		p, err := exec.LookPath("tumbler")
		if err != nil {
			return "", fmt.Errorf("%w: TUMBLER_BINARY is not set and there is no `tumbler` on PATH; %s", ErrNoBinary, howToGet)
		}
		return p, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%w: %s=%s: %v; %s", ErrNoBinary, from, path, err, howToGet)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%w: %s=%s is not an executable file; %s", ErrNoBinary, from, path, howToGet)
	}
	return path, nil
}

// Start starts a server; the caller stops it with Close. Methods that fail call panic
// instead of t.Fatal on such a server (Run sets the test).
func Start(opts ...Option) (*Server, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.nodes < 1 {
		return nil, fmt.Errorf("tumbler: %d nodes", cfg.nodes)
	}
	if cfg.tls && cfg.nodes > 1 {
		// The server serves TLS on one node only; with --nodes it ignores the tls-*
		// directives and serves plaintext, so refuse rather than hand out a wrong URL.
		return nil, errors.New("tumbler: WithTLS serves one node; it cannot be combined with WithNodes or WithCluster")
	}
	bin, err := BinaryPath(cfg.binary)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, bin: bin, conns: map[int]*conn{}, down: map[int]bool{},
		pending: map[int]int64{}, exited: make(chan struct{}), stderr: &tailBuffer{max: 16 << 10}}
	args := []string{"--bind", "127.0.0.1", "--port", "0", "--watch-stdin", "yes",
		"--save", "", "--appendonly", "no"}
	if cfg.nodes > 1 || cfg.cluster {
		args = append(args, "--nodes", strconv.Itoa(cfg.nodes))
	}
	if cfg.cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-replicas", strconv.Itoa(cfg.replicas))
	}
	if cfg.timeControl {
		args = append(args, "--enable-time-control", "yes")
	}
	if cfg.testControl {
		args = append(args, "--enable-test-control", "yes")
	}
	if cfg.lockdep != "" {
		args = append(args, "--lockdep", cfg.lockdep)
	}
	if cfg.personality != "" {
		args = append(args, "--personality", cfg.personality)
	}
	if cfg.tls {
		dir, err := os.MkdirTemp("", "tumbler-tls-")
		if err != nil {
			return nil, fmt.Errorf("tumbler: %v", err)
		}
		s.dir = dir
		if s.tls, err = makeTLS(dir); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("tumbler: generating certificates: %v", err)
		}
		args = append(args, "--tls-port", "0", "--tls-cert-file", s.tls.certFile,
			"--tls-key-file", s.tls.keyFile, "--tls-ca-cert-file", s.tls.caFile)
	}
	if cfg.password != "" {
		args = append(args, "--requirepass", cfg.password)
		s.ctrlPass = cfg.password
	}
	for _, u := range cfg.users {
		args = append(args, "--user", u.directive())
		if u.name == "default" && u.pass != "" {
			s.ctrlUser, s.ctrlPass = "default", u.pass
		}
	}
	args = append(args, cfg.args...)

	if err := s.spawn(args); err != nil {
		s.cleanupFiles()
		return nil, err
	}
	return s, nil
}

func (s *Server) spawn(args []string) error {
	cmd := exec.Command(s.bin, args...)
	// No Setpgid: the server stays in the test's process group, so Ctrl-C reaches it too.
	cmd.Stderr = s.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("tumbler: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("tumbler: %v", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("tumbler: cannot run %s: %v; %s", s.bin, err, howToGet)
	}
	s.cmd, s.stdin = cmd, stdin
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			// The server logs to stdout, as redis-server does (older builds: stderr).
			_, _ = s.stderr.Write(append(sc.Bytes(), '\n'))
			select {
			case lines <- sc.Text():
			default: // nobody reads any more: keep draining the pipe
			}
		}
		close(lines)
	}()
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()

	want := "port="
	if s.cfg.tls {
		want = "tls-port="
	}
	ports := map[int]int{}
	deadline := time.NewTimer(s.cfg.startTimeout)
	defer deadline.Stop()
	for len(ports) < s.cfg.nodes {
		select {
		case line, ok := <-lines:
			if !ok {
				<-s.exited
				return fmt.Errorf("tumbler: %s exited (%v) before listening; command: %s; log:\n%s",
					s.bin, s.waitErr, strings.Join(cmd.Args, " "), s.stderr.String())
			}
			if !strings.HasPrefix(line, "tumbler listening on ") {
				continue
			}
			kv := fields(line)
			p, ok := kv[strings.TrimSuffix(want, "=")]
			if !ok {
				continue
			}
			port, err := strconv.Atoi(p)
			if err != nil {
				continue
			}
			node := 0
			if n, ok := kv["node"]; ok {
				node, _ = strconv.Atoi(n)
			}
			ports[node] = port
		case <-deadline.C:
			s.kill()
			return fmt.Errorf("tumbler: %s did not report %d listening port(s) within %v; log:\n%s",
				s.bin, s.cfg.nodes, s.cfg.startTimeout, s.stderr.String())
		}
	}
	idx := make([]int, 0, len(ports))
	for i := range ports {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		s.ports = append(s.ports, ports[i])
	}
	return nil
}

func fields(line string) map[string]string {
	kv := map[string]string{}
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

func (s *Server) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.stdin.Close()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func (s *Server) cleanupFiles() {
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// Close stops the server (SIGTERM, then SIGKILL after 5 s) and removes its files. It is
// safe to call more than once; Run calls it at the end of the test.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for i, c := range s.conns {
		c.close()
		delete(s.conns, i)
	}
	s.mu.Unlock()
	s.kill()
	s.cleanupFiles()
	return nil
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Host is 127.0.0.1.
func (s *Server) Host() string { return "127.0.0.1" }

// Port is node 0's port (the TLS port under WithTLS).
func (s *Server) Port() int { return s.ports[0] }

// Addr is node 0's "127.0.0.1:port", for redis.Options{Addr: s.Addr()}.
func (s *Server) Addr() string { return s.NodeAddr(0) }

// NodeAddr is node i's "127.0.0.1:port".
func (s *Server) NodeAddr(i int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.ports[i]))
}

// Addrs lists every node's address, node 0 first (WithNodes, WithCluster).
func (s *Server) Addrs() []string {
	out := make([]string, len(s.ports))
	for i := range s.ports {
		out[i] = s.NodeAddr(i)
	}
	return out
}

// URL is "redis://127.0.0.1:port/0" ("rediss://" under WithTLS), for redis.ParseURL.
func (s *Server) URL() string {
	scheme := "redis"
	if s.tls != nil {
		scheme = "rediss"
	}
	return scheme + "://" + s.Addr() + "/0"
}

// TLSConfig is a client configuration that trusts this server and presents the client
// certificate (nil without WithTLS). Each call returns a new copy.
func (s *Server) TLSConfig() *tls.Config {
	if s.tls == nil {
		return nil
	}
	return s.tls.client.Clone()
}

// CACertFile is the PEM file of the CA that signed the server and client certificates
// (empty without WithTLS), for clients configured by file.
func (s *Server) CACertFile() string {
	if s.tls == nil {
		return ""
	}
	return s.tls.caFile
}

// Log is the end of the server's output (its log, on stdout and stderr), for failure
// messages.
func (s *Server) Log() string { return s.stderr.String() }

func (s *Server) fail(err error) {
	if s.tb != nil {
		s.tb.Helper()
		s.tb.Fatalf("tumbler: %v", err)
		return
	}
	panic(fmt.Sprintf("tumbler: %v", err))
}

// Do sends one command to node 0 over the package's control connection and returns the
// reply: string, int64, []byte, nil or []interface{}; an error reply is a RedisError.
func (s *Server) Do(args ...string) (interface{}, error) { return s.DoNode(0, args...) }

// DoNode is Do on node i.
func (s *Server) DoNode(i int, args ...string) (interface{}, error) {
	if i < 0 || i >= len(s.ports) {
		return nil, fmt.Errorf("no node %d (the server has %d)", i, len(s.ports))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the server is closed")
	}
	for attempt := 0; ; attempt++ {
		c, reused := s.conns[i], true
		if c == nil {
			var tlsConf *tls.Config
			if s.tls != nil {
				tlsConf = s.tls.client
			}
			var err error
			c, err = dialConn(s.NodeAddr(i), tlsConf, s.ctrlUser, s.ctrlPass, cmdTimeout)
			if err != nil {
				return nil, fmt.Errorf("node %d: %v", i, err)
			}
			s.conns[i], reused = c, false
		}
		v, err := c.do(cmdTimeout, args...)
		var re RedisError
		if err != nil && !errors.As(err, &re) {
			c.close()
			delete(s.conns, i)
			if reused && attempt == 0 {
				continue // a connection the server dropped (NodeDown/UP): dial again
			}
			return nil, fmt.Errorf("node %d: %v", i, err)
		}
		return v, err
	}
}

// upNode is a node that is not down, to send node-wide control commands to.
func (s *Server) upNode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.ports {
		if !s.down[i] {
			return i
		}
	}
	return 0
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if extra := b.buf.Len() - b.max; extra > 0 {
		b.buf.Next(extra)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
