package tumbler_test

import (
	"fmt"
	"testing"
	"time"

	"tumbler.dev/tumbler"
)

// A lease that lapses without sleeping.
func ExampleRunT() {
	t := &testing.T{} // stands for the *testing.T of your test
	s := tumbler.RunT(t)
	_, _ = s.Do("SET", "lease", "me", "PX", "30000")
	s.FastForward(30 * time.Second)
	v, _ := s.Do("GET", "lease")
	fmt.Println(v)
}

// Three independent nodes for Redlock, one of them failing.
func ExampleWithNodes() {
	t := &testing.T{}
	s := tumbler.RunT(t, tumbler.WithNodes(3))
	fmt.Println(len(s.Addrs()))
	s.NodeDown(2)
	s.NodeUp(2)
}

// A cluster of three primaries with a replica each; a replica takes over.
func ExampleWithCluster() {
	t := &testing.T{}
	s := tumbler.RunT(t, tumbler.WithCluster(3, 1))
	fmt.Println(len(s.Addrs())) // give them to redis.NewClusterClient
	s.Failover(3)
}

// The lock-order checker fails the test on a lock order inversion.
func ExampleServer_AssertNoLockInversions() {
	t := &testing.T{}
	s := tumbler.RunT(t, tumbler.WithLockdep("yes"))
	// ... code under test takes locks ...
	s.AssertNoLockInversions(t)
}
