package tumblerexample

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	"tumbler.dev/tumbler"
)

func TestRueidisCommandsAndClientSideCache(t *testing.T) {
	s := tumbler.RunT(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Do(ctx, c.B().Set().Key("lease").Value("me").Px(30*time.Second).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	get := func() rueidis.RedisResult {
		return c.DoCache(ctx, c.B().Get().Key("lease").Cache(), time.Minute)
	}
	if v, err := get().ToString(); v != "me" || err != nil {
		t.Fatalf("GET: %q %v", v, err)
	}
	if r := get(); !r.IsCacheHit() {
		t.Fatal("the second DoCache was not served from the client-side cache")
	}
	// The lease lapses on the server; the tracking invalidation drops the cached value.
	s.FastForward(30 * time.Second)
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, err := get().ToString()
		if rueidis.IsRedisNil(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cached value outlived the key's expiry: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newLocker(t *testing.T, s *tumbler.Server) rueidislock.Locker {
	t.Helper()
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{s.Addr()}},
		KeyMajority:  1,
		// rueidislock's default SET PXAT takes its deadline from the client's wall clock,
		// which FastForward leaves behind; SET PX is relative to the server's clock.
		FallbackSETPX: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func TestRueidisLockHandOverAndLapse(t *testing.T) {
	s := tumbler.RunT(t)
	a, b := newLocker(t, s), newLocker(t, s)
	actx, acancel, err := a.WithContext(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.TryWithContext(ctx, "job"); !errors.Is(err, rueidislock.ErrNotLocked) {
		t.Fatalf("TryWithContext while held: %v", err)
	}
	// b waits; a's release reaches it through the client-side-caching invalidation.
	got := make(chan error, 1)
	var bcancel context.CancelFunc
	var bctx context.Context
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var err error
		bctx, bcancel, err = b.WithContext(wctx, "job")
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	acancel()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("b.WithContext after a released: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("b did not get the lock within 5 s of a's release")
	}
	if actx.Err() == nil {
		t.Fatal("a's context is still live after its release")
	}
	// b's holder stalls past its 5 s lease (time jumps on the server): the key expires,
	// the invalidation tells b's locker, and b's context is cancelled.
	s.FastForward(6 * time.Second)
	select {
	case <-bctx.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("b's context outlived its lease on the server")
	}
	bcancel()
}
