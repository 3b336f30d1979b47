package tumbler

import (
	"strings"
	"time"
)

// Option configures a server started by Run, RunT or Start.
type Option func(*config)

type user struct {
	name, pass string
	rules      []string
}

type config struct {
	binary       string
	nodes        int
	cluster      bool
	replicas     int
	tls          bool
	users        []user
	password     string
	lockdep      string
	personality  string
	args         []string
	startTimeout time.Duration
	timeControl  bool
	testControl  bool
	artifacts    string
}

func defaultConfig() config {
	return config{nodes: 1, startTimeout: 10 * time.Second, timeControl: true, testControl: true}
}

// WithArtifacts turns failure artifacts on, writing them to dir (relative to the test's
// working directory, the package's): when a test of Run fails, or one that called
// RestoreAfter or SaveOnFailure, its server's state is saved as <dir>/<test>.rdb and
// <dir>/<test>.txt. The environment variable TUMBLER_ARTIFACTS=dir does the same for
// every server without this option.
func WithArtifacts(dir string) Option { return func(c *config) { c.artifacts = dir } }

// WithBinary runs this tumbler executable instead of $TUMBLER_BINARY or `tumbler` on PATH.
func WithBinary(path string) Option { return func(c *config) { c.binary = path } }

// WithNodes serves n independent nodes in one process (the server's --nodes n), for
// Redlock: Addrs() lists their addresses, node i is Addrs()[i].
func WithNodes(n int) Option {
	return func(c *config) {
		c.nodes = n
		c.cluster = false
		c.replicas = 0
	}
}

// WithCluster makes one Redis Cluster of primaries shards with replicas replicas each
// (primaries*(1+replicas) nodes; --cluster-enabled yes). Nodes 0..primaries-1 start as the
// primaries; give any address to a cluster client.
func WithCluster(primaries, replicas int) Option {
	return func(c *config) {
		c.nodes = primaries * (1 + replicas)
		c.cluster = true
		c.replicas = replicas
	}
}

// WithTLS serves TLS only (no plaintext port), with a CA, server and client certificate
// generated for this run. Clients connect with TLSConfig(); the server requires the client
// certificate, as redis-server does by default (tls-auth-clients yes). One node only:
// Start refuses WithTLS together with WithNodes or WithCluster.
func WithTLS() Option { return func(c *config) { c.tls = true } }

// WithUser adds an ACL user (the server's `user` directive): `name on >pass rules...`.
// Without rules the user may run every command on every key and channel (~* &* +@all).
// WithUser("default", pass) makes the default user require that password.
func WithUser(name, pass string, rules ...string) Option {
	return func(c *config) { c.users = append(c.users, user{name, pass, rules}) }
}

// WithPassword sets requirepass: the default user needs AUTH pass.
func WithPassword(pass string) Option { return func(c *config) { c.password = pass } }

// WithLockdep turns the lock-order checker on: mode "yes" reports inversions, "strict"
// also refuses the acquisition that closes a cycle (docs/lockdep.md).
func WithLockdep(mode string) Option { return func(c *config) { c.lockdep = mode } }

// WithPersonality chooses the server release tumbler imitates: "redis-7.0", "redis-7.2"
// (the default), "redis-7.4", "redis-8.0", "valkey-8.1", "valkey-9.0" or "valkey-9.1". It
// sets what INFO and HELLO announce and which commands exist (docs/personalities.md).
func WithPersonality(name string) Option { return func(c *config) { c.personality = name } }

// WithArgs passes more server arguments as they are: any redis.conf directive as
// "--name", "value" (e.g. WithArgs("--maxmemory", "10mb")). They come last.
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// WithStartTimeout bounds how long the server may take to report its ports (default 10 s).
func WithStartTimeout(d time.Duration) Option { return func(c *config) { c.startTimeout = d } }

// WithoutTimeControl starts the server without TUMBLER.TIME (FastForward, Freeze, Resume
// and SetTime then fail), as a production server runs.
func WithoutTimeControl() Option { return func(c *config) { c.timeControl = false } }

// WithoutTestControl starts the server without TUMBLER.NODE and TUMBLER.CLUSTER (NodeDown,
// NodeUp and Failover then fail).
func WithoutTestControl() Option { return func(c *config) { c.testControl = false } }

func (u user) directive() string {
	rules := u.rules
	if len(rules) == 0 {
		rules = []string{"~*", "&*", "+@all"}
	}
	parts := []string{u.name, "reset", "on"}
	if u.pass == "" {
		parts = append(parts, "nopass")
	} else {
		parts = append(parts, ">"+u.pass)
	}
	return strings.Join(append(parts, rules...), " ")
}
