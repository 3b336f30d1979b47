package tumblerexample

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"tumbler.dev/tumbler"
)

var ctx = context.Background()

func newClient(t *testing.T, s *tumbler.Server) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func TestLockExcludesAndReleasesByOwnerOnly(t *testing.T) {
	s := tumbler.RunT(t)
	rdb := newClient(t, s)
	a, ok, err := Acquire(ctx, rdb, "lock:order:42", 30*time.Second)
	if err != nil || !ok {
		t.Fatalf("first Acquire: %v %v", ok, err)
	}
	if _, ok, err := Acquire(ctx, rdb, "lock:order:42", 30*time.Second); err != nil || ok {
		t.Fatalf("second Acquire while held: %v %v", ok, err)
	}
	// Another owner's token cannot release it (the Lua compare-and-delete).
	forged := &Lock{rdb: rdb, key: a.key, token: "not-the-owner"}
	if err := forged.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release with a wrong token: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if n := rdb.Exists(ctx, "lock:order:42").Val(); n != 0 {
		t.Fatalf("the key survived Release: %d", n)
	}
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second Release: %v", err)
	}
}

func TestLeaseExpiresWithFastForward(t *testing.T) {
	s := tumbler.RunT(t)
	rdb := newClient(t, s)
	s.Freeze() // the server clock moves only when the test says so
	a, ok, err := Acquire(ctx, rdb, "lock:report", 30*time.Second)
	if err != nil || !ok {
		t.Fatalf("Acquire: %v %v", ok, err)
	}
	s.FastForward(20 * time.Second)
	if err := a.Extend(ctx, 30*time.Second); err != nil {
		t.Fatalf("Extend at 20 s: %v", err)
	}
	if pttl := rdb.PTTL(ctx, "lock:report").Val(); pttl != 30*time.Second {
		t.Fatalf("PTTL after Extend: %v", pttl)
	}
	s.FastForward(29*time.Second + 999*time.Millisecond)
	if _, ok, _ := Acquire(ctx, rdb, "lock:report", time.Second); ok {
		t.Fatal("taken 1 ms before the extended lease ran out")
	}
	s.FastForward(time.Millisecond)
	// The holder stalled past its lease: another owner takes the lock, the old one cannot
	// release or extend it any more.
	b, ok, err := Acquire(ctx, rdb, "lock:report", 30*time.Second)
	if err != nil || !ok {
		t.Fatalf("Acquire after the lease ran out: %v %v", ok, err)
	}
	if err := a.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("stale Release: %v", err)
	}
	if err := a.Extend(ctx, time.Minute); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("stale Extend: %v", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("Release by the new holder: %v", err)
	}
}

func TestScriptRepliesAsRedis(t *testing.T) {
	s := tumbler.RunT(t)
	rdb := newClient(t, s)
	// Lua numbers become integers (truncated), false becomes nil, a table stops at its
	// first nil: Redis' conversions, which a Lua re-implementation has to copy.
	v, err := rdb.Eval(ctx, `return {1, 3.99, "x", false, nil, 7}`, nil).Result()
	if err != nil {
		t.Fatal(err)
	}
	got := v.([]interface{})
	if len(got) != 4 || got[0] != int64(1) || got[1] != int64(3) || got[2] != "x" || got[3] != nil {
		t.Fatalf("EVAL reply: %#v", got)
	}
	_, err = rdb.Eval(ctx, `return redis.call("INCR", KEYS[1], "extra")`, []string{"k"}).Result()
	if err == nil {
		t.Fatal("a wrong arity in a script was not an error")
	}
}

func TestLockOrderInversionIsFound(t *testing.T) {
	s := tumbler.RunT(t, tumbler.WithLockdep("yes"))
	// Two workers, each its own connection (SET NX locks are owned by the connection).
	worker := func(name string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), PoolSize: 1, ClientName: name})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	w1, w2 := worker("worker-1"), worker("worker-2")
	take := func(rdb *redis.Client, keys ...string) {
		var held []*Lock
		for _, k := range keys {
			l, ok, err := Acquire(ctx, rdb, k, 30*time.Second)
			if err != nil || !ok {
				t.Fatalf("Acquire %s: %v %v", k, ok, err)
			}
			held = append(held, l)
		}
		for i := len(held) - 1; i >= 0; i-- {
			if err := held[i].Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	take(w1, "order:{1}", "stock:{7}")
	s.AssertNoLockInversions(t)
	take(w2, "stock:{8}", "order:{2}") // the opposite order: never deadlocked, still a bug
	r, err := s.LockdepReport()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Inversions) != 1 || len(r.Inversions[0].Cycle) != 2 {
		t.Fatalf("inversions: %+v", r.Inversions)
	}
	owners := map[string]bool{}
	for _, e := range r.Inversions[0].Edges {
		owners[e.Owner] = true
	}
	if !owners["worker-1"] || !owners["worker-2"] {
		t.Fatalf("the edges name %v, want worker-1 and worker-2", owners)
	}
}
