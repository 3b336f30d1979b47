// Package seeded shows one server for a package, seeded once in TestMain: each test calls
// RestoreAfter, so it starts from the seed whatever the tests before it changed, without
// a new server or a re-seed. With TUMBLER_ARTIFACTS=dir a failed test leaves the server's
// state there (<test>.rdb and <test>.txt).
package seeded

import (
	"context"
	"fmt"
	"os"
	"testing"

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
	rdb.HSet(ctx, "stock", "apple", 10, "pear", 4)
	rdb.Set(ctx, "banner", "autumn sale", 0)
	srv.Snapshot("seed")
	code := m.Run()
	_ = rdb.Close()
	_ = srv.Close()
	os.Exit(code)
}

// The tests run in file order; each would see the one before it without RestoreAfter.

func TestBuyApples(t *testing.T) {
	srv.RestoreAfter(t, "seed")
	if n := rdb.HIncrBy(ctx, "stock", "apple", -3).Val(); n != 7 {
		t.Fatalf("apples after buying 3 of the seeded 10: %d", n)
	}
	rdb.Set(ctx, "order:1", "3 apples", 0)
}

func TestSeedIsBack(t *testing.T) {
	srv.RestoreAfter(t, "seed")
	if n, _ := rdb.HGet(ctx, "stock", "apple").Int(); n != 10 {
		t.Fatalf("apples: %d, want the seeded 10", n)
	}
	if rdb.Exists(ctx, "order:1").Val() != 0 {
		t.Fatal("the previous test's order is still there")
	}
	rdb.FlushAll(ctx)
}

func TestSeedIsBackAfterAFlush(t *testing.T) {
	srv.RestoreAfter(t, "seed")
	if v := rdb.Get(ctx, "banner").Val(); v != "autumn sale" {
		t.Fatalf("banner: %q", v)
	}
}
