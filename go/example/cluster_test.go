package tumblerexample

import (
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"tumbler.dev/tumbler"
)

func TestClusterClientLocksAndFailover(t *testing.T) {
	s := tumbler.RunT(t, tumbler.WithCluster(3, 1))
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: s.Addrs()})
	defer cc.Close()
	for i := 0; i < 30; i++ { // keys in many slots, so every shard is used
		key := fmt.Sprintf("lock:item:%d", i)
		if _, ok, err := Acquire(ctx, cc, key, 30*time.Second); err != nil || !ok {
			t.Fatalf("Acquire %s: %v %v", key, ok, err)
		}
	}
	// Keys of one hash tag share a slot: a multi-key script works; others get CROSSSLOT.
	if err := cc.Eval(ctx, `return redis.call("MSET", KEYS[1], 1, KEYS[2], 2)`,
		[]string{"{order:1}:a", "{order:1}:b"}).Err(); err != nil {
		t.Fatalf("script on one slot: %v", err)
	}
	if err := cc.Do(ctx, "MSET", "a", 1, "b", 2).Err(); err == nil {
		t.Fatal("MSET across slots was not refused")
	}
	s.FastForward(30 * time.Second) // time moves on every node of the cluster
	for i := 0; i < 30; i++ {
		if n := cc.Exists(ctx, fmt.Sprintf("lock:item:%d", i)).Val(); n != 0 {
			t.Fatalf("lock:item:%d outlived its lease", i)
		}
	}
	// A replica takes over its shard; the client follows the -MOVED replies.
	s.Failover(3)
	for i := 0; i < 30; i++ {
		key := fmt.Sprintf("lock:item:%d", i)
		if _, ok, err := Acquire(ctx, cc, key, 30*time.Second); err != nil || !ok {
			t.Fatalf("Acquire %s after the failover: %v %v", key, ok, err)
		}
	}
}

func TestTLSAndACLUser(t *testing.T) {
	s := tumbler.RunT(t, tumbler.WithTLS(),
		tumbler.WithUser("default", "admin-secret"),
		tumbler.WithUser("locks", "locks-secret", "~lock:*", "+@all", "-@dangerous"))
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), TLSConfig: s.TLSConfig(),
		Username: "locks", Password: "locks-secret"})
	defer rdb.Close()
	if who := rdb.Do(ctx, "ACL", "WHOAMI").Val(); who != "locks" {
		t.Fatalf("WHOAMI: %v", who)
	}
	l, ok, err := Acquire(ctx, rdb, "lock:tls", 10*time.Second)
	if err != nil || !ok {
		t.Fatalf("Acquire over TLS as locks: %v %v", ok, err)
	}
	if err := rdb.Set(ctx, "other", 1, 0).Err(); err == nil {
		t.Fatal("a key outside ~lock:* was writable")
	}
	if err := rdb.FlushAll(ctx).Err(); err == nil {
		t.Fatal("-@dangerous let FLUSHALL through")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// The URL form, as a user's config would hold it.
	opt, err := redis.ParseURL(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if opt.TLSConfig == nil {
		t.Fatalf("%s did not turn TLS on", s.URL())
	}
	opt.TLSConfig = s.TLSConfig()
	opt.Username, opt.Password = "default", "admin-secret"
	admin := redis.NewClient(opt)
	defer admin.Close()
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING as default over %s: %v", s.URL(), err)
	}
	// A client without the client certificate is refused.
	bare := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1,
		TLSConfig: &tls.Config{RootCAs: s.TLSConfig().RootCAs, ServerName: "127.0.0.1"}})
	defer bare.Close()
	if err := bare.Ping(ctx).Err(); err == nil {
		t.Fatal("a TLS client without a certificate was served")
	}
}
