package tumbler

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// client is a plain connection made the way a user's client would connect.
func client(t *testing.T, s *Server, node int, user, pass string) *conn {
	t.Helper()
	c, err := dialConn(s.NodeAddr(node), s.TLSConfig(), user, pass, 5*time.Second)
	if err != nil {
		t.Fatalf("dial node %d: %v", node, err)
	}
	t.Cleanup(c.close)
	return c
}

func must(t *testing.T, c *conn, args ...string) interface{} {
	t.Helper()
	v, err := c.do(5*time.Second, args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

func TestRunAddrURLAndCommands(t *testing.T) {
	s := RunT(t)
	if s.Port() <= 0 || s.Addr() != fmt.Sprintf("127.0.0.1:%d", s.Port()) {
		t.Fatalf("Addr %q Port %d", s.Addr(), s.Port())
	}
	if want := "redis://" + s.Addr() + "/0"; s.URL() != want {
		t.Fatalf("URL %q, want %q", s.URL(), want)
	}
	if got := s.Addrs(); len(got) != 1 || got[0] != s.Addr() {
		t.Fatalf("Addrs %v", got)
	}
	c := client(t, s, 0, "", "")
	if v := must(t, c, "PING"); v != "PONG" {
		t.Fatalf("PING: %v", v)
	}
	must(t, c, "SET", "k", "v")
	if v, _ := s.Do("GET", "k"); string(v.([]byte)) != "v" {
		t.Fatalf("GET via Do: %v", v)
	}
	if _, err := s.Do("NOSUCHCOMMAND"); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("unknown command: %v", err)
	}
	s.FlushAll()
	if v := must(t, c, "DBSIZE"); v != int64(0) {
		t.Fatalf("DBSIZE after FlushAll: %v", v)
	}
}

func TestPersonality(t *testing.T) {
	s := RunT(t, WithPersonality("valkey-9.1"))
	info, err := s.Do("INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"server_name:valkey", "valkey_version:9.1.2", "redis_version:7.2.4"} {
		if !strings.Contains(string(info.([]byte)), "\r\n"+line+"\r\n") {
			t.Fatalf("INFO server lacks %q:\n%s", line, info)
		}
	}
	old := RunT(t, WithPersonality("redis-7.0"))
	old.Do("ZADD", "z", "1", "a")
	if _, err := old.Do("ZRANK", "z", "a", "WITHSCORE"); err == nil || !strings.Contains(err.Error(), "wrong number of arguments") {
		t.Fatalf("ZRANK WITHSCORE under redis-7.0: %v", err)
	}
	if v, err := s.Do("ZADD", "z", "1", "a"); err != nil || v != int64(1) {
		t.Fatalf("ZADD: %v %v", v, err)
	}
	if v, err := s.Do("ZRANK", "z", "a", "WITHSCORE"); err != nil || fmt.Sprint(v) != "[0 [49]]" {
		t.Fatalf("ZRANK WITHSCORE under valkey-9.1: %v %v", v, err)
	}
}

func TestFastForwardExpiresLeases(t *testing.T) {
	s := RunT(t)
	c := client(t, s, 0, "", "")
	s.Freeze() // no real milliseconds slip in between the steps below
	must(t, c, "SET", "lease", "me", "PX", "30000")
	before := s.Now()
	s.FastForward(29999 * time.Millisecond)
	if v := must(t, c, "GET", "lease"); v == nil {
		t.Fatal("the lease lapsed 1 ms early")
	}
	s.FastForward(time.Millisecond)
	if v := must(t, c, "GET", "lease"); v != nil {
		t.Fatalf("the lease outlived its TTL: %q", v)
	}
	if d := s.Now().Sub(before); d < 30*time.Second || d > 40*time.Second {
		t.Fatalf("the clock moved %v", d)
	}
	// SetTime moves the clock to an instant ahead.
	target := s.Now().Add(time.Hour)
	s.SetTime(target)
	if got := s.Now(); got.Before(target) || got.Sub(target) > 5*time.Second {
		t.Fatalf("SetTime(%v): now %v", target, got)
	}
}

func TestSetTimeBackwardsFails(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "only moves forward") {
			t.Fatalf("SetTime into the past: %v", r)
		}
	}()
	s.SetTime(time.Unix(0, 0))
}

func TestFreezeResume(t *testing.T) {
	s := RunT(t)
	c := client(t, s, 0, "", "")
	s.Freeze()
	must(t, c, "SET", "k", "v", "PX", "50")
	time.Sleep(120 * time.Millisecond)
	if v := must(t, c, "PTTL", "k"); v != int64(50) {
		t.Fatalf("PTTL on a frozen clock: %v", v)
	}
	s.Resume()
	s.FastForward(50 * time.Millisecond)
	if v := must(t, c, "EXISTS", "k"); v != int64(0) {
		t.Fatalf("EXISTS after resume and 50 ms: %v", v)
	}
}

func TestNodesFaultsAndMissedTime(t *testing.T) {
	s := RunT(t, WithNodes(3))
	addrs := s.Addrs()
	if len(addrs) != 3 || addrs[0] == addrs[1] || addrs[1] == addrs[2] {
		t.Fatalf("Addrs %v", addrs)
	}
	c0, c1 := client(t, s, 0, "", ""), client(t, s, 1, "", "")
	must(t, c0, "SET", "k", "zero")
	if v := must(t, c1, "GET", "k"); v != nil {
		t.Fatalf("nodes share data: %q", v)
	}
	must(t, c1, "SET", "lease", "one", "PX", "10000")
	s.NodeDown(1)
	if _, err := net.DialTimeout("tcp", addrs[1], time.Second); err == nil {
		t.Fatal("a down node accepted a connection")
	}
	s.FastForward(5 * time.Second) // node 1 misses this while down
	s.NodeUp(1)
	c1 = client(t, s, 1, "", "")
	if v := must(t, c1, "PTTL", "lease"); v.(int64) > 5000 || v.(int64) < 4000 {
		t.Fatalf("node 1 came back with PTTL %v, want about 5000 (it caught up)", v)
	}
	s.NodeDown(2)
	s.NodeUpEmpty(2)
	c2 := client(t, s, 2, "", "")
	if v := must(t, c2, "DBSIZE"); v != int64(0) {
		t.Fatalf("NodeUpEmpty kept data: %v", v)
	}
}

func TestClusterAndFailover(t *testing.T) {
	s := RunT(t, WithCluster(3, 1))
	if n := len(s.Addrs()); n != 6 {
		t.Fatalf("%d nodes, want 6", n)
	}
	info, err := s.Do("CLUSTER", "INFO")
	if err != nil || !strings.Contains(string(info.([]byte)), "cluster_state:ok") {
		t.Fatalf("CLUSTER INFO: %s %v", info, err)
	}
	myRole := func(i int) string {
		v, err := s.DoNode(i, "CLUSTER", "NODES")
		if err != nil {
			t.Fatalf("CLUSTER NODES on node %d: %v", i, err)
		}
		for _, line := range strings.Split(string(v.([]byte)), "\n") {
			if f := strings.Fields(line); len(f) > 2 && strings.Contains(f[2], "myself") {
				return strings.TrimPrefix(f[2], "myself,")
			}
		}
		t.Fatalf("no myself line in CLUSTER NODES:\n%s", v)
		return ""
	}
	for i := 0; i < 6; i++ {
		want := "master"
		if i >= 3 {
			want = "slave"
		}
		if r := myRole(i); r != want {
			t.Fatalf("node %d is %s, want %s", i, r, want)
		}
	}
	s.Failover(3)
	if r := myRole(3); r != "master" {
		t.Fatalf("after Failover(3) node 3 is %s", r)
	}
}

func TestTLSRoundTrip(t *testing.T) {
	s := RunT(t, WithTLS())
	if !strings.HasPrefix(s.URL(), "rediss://") || s.TLSConfig() == nil || s.CACertFile() == "" {
		t.Fatalf("URL %q TLSConfig %v", s.URL(), s.TLSConfig())
	}
	c := client(t, s, 0, "", "")
	if v := must(t, c, "PING"); v != "PONG" {
		t.Fatalf("PING over TLS: %v", v)
	}
	s.FastForward(time.Second) // control commands go over TLS too
	// Without the client certificate the handshake is refused.
	cfg := s.TLSConfig()
	cfg.Certificates = nil
	if bad, err := dialConn(s.Addr(), cfg, "", "", 3*time.Second); err == nil {
		_, err = bad.do(3*time.Second, "PING")
		bad.close()
		if err == nil {
			t.Fatal("a client without a certificate was served")
		}
	}
	// A plaintext client gets no reply either.
	if raw, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		_ = raw.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = raw.Write([]byte("PING\r\n"))
		line, _ := bufio.NewReader(raw).ReadString('\n')
		raw.Close()
		if strings.Contains(line, "PONG") {
			t.Fatal("the TLS port answered plaintext")
		}
	}
}

func TestACLUsers(t *testing.T) {
	s := RunT(t, WithUser("default", "admin-pw"), WithUser("app", "app-pw", "~app:*", "+@all"))
	anon, err := dialConn(s.Addr(), nil, "", "", 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer anon.close()
	if _, err := anon.do(3*time.Second, "PING"); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("PING without AUTH: %v", err)
	}
	app := client(t, s, 0, "app", "app-pw")
	must(t, app, "SET", "app:x", "1")
	if _, err := app.do(3*time.Second, "SET", "other", "1"); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("SET outside ~app:*: %v", err)
	}
	if v := must(t, app, "ACL", "WHOAMI"); string(v.([]byte)) != "app" {
		t.Fatalf("WHOAMI: %v", v)
	}
	if _, err := dialConn(s.Addr(), nil, "app", "wrong", 3*time.Second); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("a wrong password: %v", err)
	}
	s.FastForward(time.Second) // the control connection authenticates as default
}

// recorder is a testing.TB that records failures instead of failing the test.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(f string, a ...interface{}) {
	r.mu.Lock()
	r.failed = append(r.failed, fmt.Sprintf(f, a...))
	r.mu.Unlock()
}
func (r *recorder) Fatalf(f string, a ...interface{}) { r.Errorf(f, a...) }

func TestLockdepFindsInversion(t *testing.T) {
	s := RunT(t, WithLockdep("yes"))
	c := client(t, s, 0, "", "")
	s.AssertNoLockInversions(t)
	must(t, c, "LOCK.ACQUIRE", "order:{1}", "worker-a", "30000")
	must(t, c, "LOCK.ACQUIRE", "stock:{7}", "worker-a", "30000")
	must(t, c, "LOCK.RELEASE", "stock:{7}", "worker-a")
	must(t, c, "LOCK.RELEASE", "order:{1}", "worker-a")
	must(t, c, "LOCK.ACQUIRE", "stock:{8}", "worker-b", "30000")
	must(t, c, "LOCK.ACQUIRE", "order:{2}", "worker-b", "30000")
	r, err := s.LockdepReport()
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != "yes" || len(r.Inversions) != 1 {
		t.Fatalf("report: %+v", r)
	}
	rec := &recorder{TB: t}
	s.AssertNoLockInversions(rec)
	if len(rec.failed) != 1 || !strings.Contains(rec.failed[0], "order:{*}") ||
		!strings.Contains(rec.failed[0], "worker-b") {
		t.Fatalf("AssertNoLockInversions reported %q", rec.failed)
	}
	if err := s.LockdepReset(); err != nil {
		t.Fatal(err)
	}
	s.AssertNoLockInversions(t)
}

func TestAssertNoLockInversionsNeedsLockdep(t *testing.T) {
	s := RunT(t)
	rec := &recorder{TB: t}
	s.AssertNoLockInversions(rec)
	if len(rec.failed) != 1 || !strings.Contains(rec.failed[0], "lockdep is off") {
		t.Fatalf("got %q", rec.failed)
	}
}

func TestMissingBinaryIsAClearError(t *testing.T) {
	_, err := Start(WithBinary("/nonexistent/tumbler"))
	if !errors.Is(err, ErrNoBinary) || !strings.Contains(err.Error(), "cargo install --path server") {
		t.Fatalf("WithBinary to a missing file: %v", err)
	}
	t.Setenv("TUMBLER_BINARY", "")
	t.Setenv("PATH", t.TempDir())
	_, err = Start()
	if !errors.Is(err, ErrNoBinary) || !strings.Contains(err.Error(), "TUMBLER_BINARY") {
		t.Fatalf("no binary anywhere: %v", err)
	}
	rec := &recorder{TB: t}
	if s := Run(rec); s != nil || len(rec.failed) != 1 {
		t.Fatalf("Run without a binary: %v %q", s, rec.failed)
	}
}

func TestStartFailureReportsTheLog(t *testing.T) {
	_, err := Start(WithArgs("--tls-key-file-pass", "x", "--tls-port", "0"))
	if err == nil {
		t.Fatal("a server with a bad configuration started")
	}
	if !strings.Contains(err.Error(), "exited") {
		t.Fatalf("error: %v", err)
	}
}

func TestReadReply(t *testing.T) {
	in := "*4\r\n+OK\r\n:-7\r\n$3\r\nabc\r\n*2\r\n$-1\r\n-ERR bad\r\n"
	v, err := readReply(bufio.NewReader(strings.NewReader(in)), 0)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%#v", v)
	arr := v.([]interface{})
	if arr[0] != "OK" || arr[1] != int64(-7) || string(arr[2].([]byte)) != "abc" {
		t.Fatalf("got %s", got)
	}
	inner := arr[3].([]interface{})
	if inner[0] != nil || inner[1] != RedisError("ERR bad") {
		t.Fatalf("got %s", got)
	}
	for _, bad := range []string{"?x\r\n", "$5\r\nab\r\n", "*x\r\n", ":1\n"} {
		if _, err := readReply(bufio.NewReader(strings.NewReader(bad)), 0); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
}

func TestTLSConfigIsACopy(t *testing.T) {
	s := RunT(t, WithTLS())
	a := s.TLSConfig()
	a.ServerName = "changed"
	if s.TLSConfig().ServerName == "changed" {
		t.Fatal("TLSConfig shares state")
	}
	var _ *tls.Config = a
	if _, err := os.Stat(s.CACertFile()); err != nil {
		t.Fatal(err)
	}
}

func TestTLSWithNodesIsRefused(t *testing.T) {
	if _, err := Start(WithTLS(), WithNodes(2)); err == nil || !strings.Contains(err.Error(), "one node") {
		t.Fatalf("WithTLS and WithNodes: %v", err)
	}
}

func TestLogHasTheServerOutput(t *testing.T) {
	s := RunT(t, WithArgs("--no-such-directive", "x"))
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(s.Log(), "no-such-directive") {
		if time.Now().After(deadline) {
			t.Fatalf("the log lacks the warning about an unknown directive:\n%s", s.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRegisteredBinaryComesAfterTheEnvironment(t *testing.T) {
	defer RegisterBinary(nil)
	env := os.Getenv("TUMBLER_BINARY")
	RegisterBinary(func() (string, error) { return "", errors.New("not in this build") })
	if env != "" {
		if got, err := BinaryPath(""); err != nil || got != env {
			t.Fatalf("TUMBLER_BINARY did not win over a registered binary: %q %v", got, err)
		}
	}
	t.Setenv("TUMBLER_BINARY", "")
	if _, err := BinaryPath(""); !errors.Is(err, ErrNoBinary) || !strings.Contains(err.Error(), "not in this build") {
		t.Fatalf("a failing registered binary: %v", err)
	}
	if env != "" {
		RegisterBinary(func() (string, error) { return env, nil })
		if got, err := BinaryPath(""); err != nil || got != env {
			t.Fatalf("the registered binary: %q %v", got, err)
		}
	}
}
