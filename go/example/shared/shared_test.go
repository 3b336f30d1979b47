// Package shared shows one server for a whole package: started in TestMain, emptied
// between tests. Cheaper than a server per test when there are hundreds of tests.
package shared

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"tumbler.dev/tumbler"
)

var (
	srv *tumbler.Server
	rdb *redis.Client
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	var err error
	if srv, err = tumbler.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rdb = redis.NewClient(&redis.Options{Addr: srv.Addr()})
	code := m.Run()
	_ = rdb.Close()
	_ = srv.Close()
	os.Exit(code)
}

// fresh empties the server and restarts a frozen clock before a test.
func fresh(t *testing.T) {
	t.Helper()
	srv.FlushAll()
	srv.Resume()
}

func TestCounterStartsEmpty(t *testing.T) {
	fresh(t)
	if n := rdb.Incr(ctx, "visits").Val(); n != 1 {
		t.Fatalf("INCR on a fresh server: %d", n)
	}
}

func TestCounterStartsEmptyAgain(t *testing.T) {
	fresh(t)
	if n := rdb.Incr(ctx, "visits").Val(); n != 1 {
		t.Fatalf("INCR after FlushAll: %d", n)
	}
}

func TestRateLimitWindow(t *testing.T) {
	fresh(t)
	srv.Freeze()
	allow := func() bool {
		n := rdb.Incr(ctx, "rl:user:7").Val()
		if n == 1 {
			rdb.PExpire(ctx, "rl:user:7", time.Minute)
		}
		return n <= 3
	}
	for i := 0; i < 3; i++ {
		if !allow() {
			t.Fatalf("request %d refused", i+1)
		}
	}
	if allow() {
		t.Fatal("the fourth request in the window was allowed")
	}
	srv.FastForward(time.Minute)
	if !allow() {
		t.Fatal("refused after the window ended")
	}
}
