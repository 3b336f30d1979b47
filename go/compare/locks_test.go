package compare

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// The same lock tests, run against Tumbler and against miniredis: each test starts its own
// server(s), as a test calling RunT does, and uses only what both offer (FastForward,
// nodes, a node going down). COMPARE_BACKENDS=tumbler or =miniredis runs one side only.

type lockCase struct {
	name  string
	nodes int
	run   func(t *testing.T, b backend)
}

var lockCases = []lockCase{
	{"setnx_and_compare_and_delete", 1, caseSetNXRelease},
	{"lease_expiry_and_extend", 1, caseLeaseExpiry},
	{"fencing_token_script", 1, caseFencingToken},
	{"watch_multi_compare_and_set", 1, caseWatchMulti},
	{"rueidis_set_nx_px", 1, caseRueidis},
	{"redsync_acquire_extend_expire", 3, caseRedsync},
	{"redsync_one_node_down", 3, caseRedsyncNodeDown},
}

func backends() []string {
	if v := os.Getenv("COMPARE_BACKENDS"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"tumbler", "miniredis"}
}

func TestLocks(t *testing.T) {
	for _, kind := range backends() {
		kind := kind
		t.Run(kind, func(t *testing.T) {
			start := time.Now()
			for _, c := range lockCases {
				c := c
				t.Run(c.name, func(t *testing.T) {
					b := startBackend(t, kind, c.nodes)
					c.run(t, b)
				})
			}
			recordSuite(kind, time.Since(start))
		})
	}
}

func client(t *testing.T, b backend, i int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: b.Addrs()[i], MaxRetries: -1, DialTimeout: time.Second,
		DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

const release = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`
const extend = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`

func caseSetNXRelease(t *testing.T, b backend) {
	rdb := client(t, b, 0)
	if ok := rdb.SetNX(ctx, "lock:a", "tok-1", 30*time.Second).Val(); !ok {
		t.Fatal("first SET NX failed")
	}
	if ok := rdb.SetNX(ctx, "lock:a", "tok-2", 30*time.Second).Val(); ok {
		t.Fatal("second SET NX succeeded while held")
	}
	if n, err := rdb.Eval(ctx, release, []string{"lock:a"}, "tok-2").Int(); err != nil || n != 0 {
		t.Fatalf("release with another token: %v %v", n, err)
	}
	if n, err := rdb.Eval(ctx, release, []string{"lock:a"}, "tok-1").Int(); err != nil || n != 1 {
		t.Fatalf("release by the owner: %v %v", n, err)
	}
	if ok := rdb.SetNX(ctx, "lock:a", "tok-2", 30*time.Second).Val(); !ok {
		t.Fatal("SET NX after release failed")
	}
}

func caseLeaseExpiry(t *testing.T, b backend) {
	rdb := client(t, b, 0)
	rdb.SetNX(ctx, "lock:b", "tok-1", 30*time.Second)
	b.FastForward(20 * time.Second)
	if n, err := rdb.Eval(ctx, extend, []string{"lock:b"}, "tok-1", 30000).Int(); err != nil || n != 1 {
		t.Fatalf("extend at 20 s: %v %v", n, err)
	}
	b.FastForward(25 * time.Second)
	if ok := rdb.SetNX(ctx, "lock:b", "tok-2", 30*time.Second).Val(); ok {
		t.Fatal("taken 25 s after a 30 s extension")
	}
	b.FastForward(6 * time.Second)
	if ok := rdb.SetNX(ctx, "lock:b", "tok-2", 30*time.Second).Val(); !ok {
		t.Fatal("not free after the extended lease ran out")
	}
	if n, _ := rdb.Eval(ctx, extend, []string{"lock:b"}, "tok-1", 30000).Int(); n != 0 {
		t.Fatal("a stale owner extended the new holder's lock")
	}
}

// A fencing token: the lock and a monotonic counter in one script.
func caseFencingToken(t *testing.T, b backend) {
	rdb := client(t, b, 0)
	acquire := `if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return redis.call("INCR", KEYS[2]) end return false`
	var last int64
	for i := 0; i < 3; i++ {
		tok, err := rdb.Eval(ctx, acquire, []string{"lock:c", "lock:c:fence"}, fmt.Sprint("owner-", i), 10000).Int64()
		if err != nil || tok <= last {
			t.Fatalf("acquire %d: token %d after %d: %v", i, tok, last, err)
		}
		last = tok
		if _, err := rdb.Eval(ctx, acquire, []string{"lock:c", "lock:c:fence"}, "intruder", 10000).Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("acquire while held: %v", err)
		}
		b.FastForward(11 * time.Second)
	}
}

func caseWatchMulti(t *testing.T, b backend) {
	rdb, other := client(t, b, 0), client(t, b, 0)
	rdb.Set(ctx, "stock", 10, 0)
	err := rdb.Watch(ctx, func(tx *redis.Tx) error {
		n, err := tx.Get(ctx, "stock").Int()
		if err != nil {
			return err
		}
		other.Decr(ctx, "stock") // a concurrent writer between WATCH and EXEC
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "stock", n-1, 0)
			return nil
		})
		return err
	}, "stock")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("EXEC after a concurrent write: %v", err)
	}
	if v := rdb.Get(ctx, "stock").Val(); v != "9" {
		t.Fatalf("stock %s, want 9", v)
	}
}

func caseRueidis(t *testing.T, b backend) {
	// DisableCache: miniredis has no CLIENT TRACKING, which rueidis' cache needs.
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: b.Addrs()[:1], DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	set := c.B().Set().Key("lock:r").Value("me").Nx().Px(5 * time.Second).Build()
	if err := c.Do(ctx, set).Error(); err != nil {
		t.Fatalf("SET NX PX: %v", err)
	}
	if err := c.Do(ctx, c.B().Set().Key("lock:r").Value("you").Nx().Px(5*time.Second).Build()).Error(); !rueidis.IsRedisNil(err) {
		t.Fatalf("second SET NX PX: %v", err)
	}
	b.FastForward(5 * time.Second)
	if err := c.Do(ctx, c.B().Set().Key("lock:r").Value("you").Nx().Px(5*time.Second).Build()).Error(); err != nil {
		t.Fatalf("SET NX PX after expiry: %v", err)
	}
}

func newRedsync(t *testing.T, b backend) *redsync.Redsync {
	var pools []rsredis.Pool
	for i := range b.Addrs() {
		pools = append(pools, goredis.NewPool(client(t, b, i)))
	}
	return redsync.New(pools...)
}

func caseRedsync(t *testing.T, b backend) {
	rs := newRedsync(t, b)
	m1 := rs.NewMutex("redlock", redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	m2 := rs.NewMutex("redlock", redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	if err := m1.Lock(); err != nil {
		t.Fatalf("m1.Lock: %v", err)
	}
	if err := m2.Lock(); err == nil {
		t.Fatal("m2.Lock while m1 holds it")
	}
	b.FastForward(6 * time.Second)
	if ok, err := m1.Extend(); !ok || err != nil {
		t.Fatalf("m1.Extend: %v %v", ok, err)
	}
	b.FastForward(6 * time.Second)
	if err := m2.Lock(); err == nil {
		t.Fatal("m2.Lock 6 s after m1's extension")
	}
	b.FastForward(3 * time.Second)
	if err := m2.Lock(); err != nil {
		t.Fatalf("m2.Lock after m1's lease: %v", err)
	}
	if ok, _ := m1.Unlock(); ok {
		t.Fatal("m1 unlocked m2's lock")
	}
}

func caseRedsyncNodeDown(t *testing.T, b backend) {
	rs := newRedsync(t, b)
	b.NodeDown(2)
	m := rs.NewMutex("redlock2", redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	if err := m.Lock(); err != nil {
		t.Fatalf("Lock with 2 of 3 nodes: %v", err)
	}
	b.NodeDown(1)
	n := rs.NewMutex("redlock3", redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	if err := n.Lock(); err == nil {
		t.Fatal("Lock with 1 of 3 nodes succeeded")
	}
}
