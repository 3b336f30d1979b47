package tumblerexample

import (
	"errors"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
	"tumbler.dev/tumbler"
)

// Redlock over three independent nodes of one tumbler process.
func newRedsync(t *testing.T, s *tumbler.Server) *redsync.Redsync {
	t.Helper()
	var pools []redis.Pool
	for _, addr := range s.Addrs() {
		c := goredislib.NewClient(&goredislib.Options{Addr: addr, MaxRetries: -1,
			DialTimeout: time.Second, DialerRetries: 1})
		t.Cleanup(func() { _ = c.Close() })
		pools = append(pools, goredis.NewPool(c))
	}
	return redsync.New(pools...)
}

func TestRedlockAcquireExtendExpire(t *testing.T) {
	s := tumbler.RunT(t, tumbler.WithNodes(3))
	rs := newRedsync(t, s)
	s.Freeze()
	a := rs.NewMutex("redlock:invoice", redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	b := rs.NewMutex("redlock:invoice", redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	if err := a.Lock(); err != nil {
		t.Fatalf("a.Lock: %v", err)
	}
	var taken *redsync.ErrTaken
	if err := b.Lock(); !errors.As(err, &taken) {
		t.Fatalf("b.Lock while a holds it: %v", err)
	}
	s.FastForward(6 * time.Second)
	if ok, err := a.Extend(); !ok || err != nil {
		t.Fatalf("a.Extend at 6 s: %v %v", ok, err)
	}
	s.FastForward(6 * time.Second) // 12 s after Lock, 6 s after Extend
	if err := b.Lock(); !errors.As(err, &taken) {
		t.Fatalf("b.Lock after the extension: %v", err)
	}
	s.FastForward(2 * time.Second) // the extended lease ran out on every node
	if err := b.Lock(); err != nil {
		t.Fatalf("b.Lock after a's lease ran out: %v", err)
	}
	if ok, err := a.Unlock(); ok || err == nil {
		t.Fatalf("a.Unlock after losing the lock: %v %v", ok, err)
	}
	if ok, err := b.Unlock(); !ok || err != nil {
		t.Fatalf("b.Unlock: %v %v", ok, err)
	}
}

func TestRedlockSurvivesOneNodeDown(t *testing.T) {
	s := tumbler.RunT(t, tumbler.WithNodes(3))
	rs := newRedsync(t, s)
	s.NodeDown(2)
	a := rs.NewMutex("redlock:job", redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	if err := a.Lock(); err != nil {
		t.Fatalf("Lock with 2 of 3 nodes up: %v", err)
	}
	s.NodeDown(1) // no quorum for anyone now
	b := rs.NewMutex("redlock:job2", redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	if err := b.Lock(); err == nil {
		t.Fatal("Lock with 1 of 3 nodes up succeeded")
	}
	s.NodeUp(1)
	s.NodeUp(2)
	// a's key is on nodes 0 and 1 (node 1 kept its data), so a still holds a majority.
	c := rs.NewMutex("redlock:job", redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
	var taken *redsync.ErrTaken
	if err := c.Lock(); !errors.As(err, &taken) {
		t.Fatalf("c.Lock while a holds 2 of 3: %v", err)
	}
	if ok, err := a.Unlock(); !ok || err != nil {
		t.Fatalf("a.Unlock: %v %v", ok, err)
	}
}
