// Package tumblerexample is a user's project: a lease lock on go-redis, the kind of code a
// Go team tests with miniredis, and its tests, which start Tumbler with tumbler.RunT.
package tumblerexample

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotHeld is returned by Release and Extend when the lock is not held by this owner
// (its lease ran out, or another owner holds it).
var ErrNotHeld = errors.New("lock not held")

// The usual compare-and-delete and compare-and-extend scripts: only the owner's token may
// release or extend the lease.
var (
	releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)
	extendScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)
)

// Lock is one held lease.
type Lock struct {
	rdb   redis.Cmdable
	key   string
	token string
}

// Acquire takes key for ttl with SET NX PX; ok is false if another owner holds it.
func Acquire(ctx context.Context, rdb redis.Cmdable, key string, ttl time.Duration) (*Lock, bool, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, false, err
	}
	token := hex.EncodeToString(b[:])
	ok, err := rdb.SetNX(ctx, key, token, ttl).Result()
	if err != nil || !ok {
		return nil, false, err
	}
	return &Lock{rdb: rdb, key: key, token: token}, true, nil
}

// Release deletes the lock if this owner still holds it.
func (l *Lock) Release(ctx context.Context) error {
	n, err := releaseScript.Run(ctx, l.rdb, []string{l.key}, l.token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// Extend sets the lease to ttl from now if this owner still holds it.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	n, err := extendScript.Run(ctx, l.rdb, []string{l.key}, l.token, ttl.Milliseconds()).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
