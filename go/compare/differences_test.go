package compare

import (
	"fmt"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"tumbler.dev/tumbler"
)

// Cases where miniredis answers differently from redis-server 7.0 and Tumbler does not.
// Each case runs on a flushed database of all three servers; the test asserts that Tumbler's
// replies equal redis-server's, byte for byte as go-redis decodes them (RESP2), and that
// miniredis' differ, so docs/go-vs-miniredis.md stays true for the pinned versions.
type diffCase struct {
	name string
	lock bool // matters to lock code
	cmds [][]interface{}
}

var diffCases = []diffCase{
	{"SET with NX and XX together", true, [][]interface{}{{"SET", "k", "v", "NX", "XX"}}},
	{"SET with KEEPTTL and PX together", true, [][]interface{}{{"SET", "k", "v", "KEEPTTL", "PX", 100}}},
	{"PEXPIRE beyond the largest time", true, [][]interface{}{{"SET", "k", "v"}, {"PEXPIRE", "k", "9223372036854775807"}}},
	{"EXPIRE beyond the largest time", true, [][]interface{}{{"EXPIRE", "k", "9223372036854775807"}}},
	{"SET PX 0 error text", true, [][]interface{}{{"SET", "k", "v", "PX", 0}}},
	{"GETEX PX 0 error text", true, [][]interface{}{{"SET", "k", "v"}, {"GETEX", "k", "PX", 0}}},
	{"error raised by redis.call in a script", true, [][]interface{}{{"SET", "s", "x"}, {"EVAL", "return redis.call('INCR', KEYS[1])", 1, "s"}}},
	{"wrong arity inside a script", true, [][]interface{}{{"EVAL", "return redis.call('DEL')", 0}}},
	{"unknown command inside a script", false, [][]interface{}{{"EVAL", "return redis.call('NOSUCH')", 0}}},
	{"error({err=...}) from a script", true, [][]interface{}{{"EVAL", "error({err='ERR lock lost'})", 0}}},
	{"error('...') from a script", false, [][]interface{}{{"EVAL", "error('boom')", 0}}},
	{"write in EVAL_RO", false, [][]interface{}{{"EVAL_RO", "return redis.call('SET', KEYS[1], 'x')", 1, "ro"}}},
	{"Lua number 0.1 passed to SET", true, [][]interface{}{{"EVAL", "redis.call('SET', KEYS[1], 0.1) return redis.call('GET', KEYS[1])", 1, "f"}}},
	{"tostring of an INCR result (a fencing token)", true, [][]interface{}{{"SET", "n", "999999999999999"}, {"EVAL", "return tostring(redis.call('INCR', KEYS[1]))", 1, "n"}}},
	{"tostring(1/0)", false, [][]interface{}{{"EVAL", "return tostring(1/0)", 0}}},
	{"cjson.encode of an empty table", true, [][]interface{}{{"EVAL", "return cjson.encode({})", 0}}},
	{"cmsgpack in scripts", false, [][]interface{}{{"EVAL", "return cmsgpack.pack({1,2})", 0}}},
	{"bit library in scripts", false, [][]interface{}{{"EVAL", "return bit.band(7, 3)", 0}}},
	{"struct library in scripts", false, [][]interface{}{{"EVAL", "return struct.pack('>I2', 258)", 0}}},
	{"script flags (#!lua shebang)", false, [][]interface{}{{"EVAL", "#!lua flags=no-writes\nreturn 1", 0}}},
	{"assigning a global in a script", false, [][]interface{}{{"EVAL", "x = 1 return x", 0}}},
	{"WATCH inside MULTI", true, [][]interface{}{{"MULTI"}, {"WATCH", "k"}, {"EXEC"}}},
	{"CLIENT TRACKING (rueidis' client-side cache and rueidislock)", true, [][]interface{}{{"CLIENT", "TRACKING", "ON", "BCAST"}}},
	{"OBJECT ENCODING", false, [][]interface{}{{"SET", "i", "12"}, {"OBJECT", "ENCODING", "i"}}},
	{"CONFIG GET", false, [][]interface{}{{"CONFIG", "GET", "maxmemory-policy"}}},
	{"FUNCTION LIST", false, [][]interface{}{{"FUNCTION", "LIST"}}},
	{"LCS", false, [][]interface{}{{"SET", "k", "v"}, {"LCS", "k", "k"}}},
	{"INFO of an unknown section", false, [][]interface{}{{"INFO", "nosuchsection"}}},
}

func TestMiniredisDifferences(t *testing.T) {
	ref := redisServer(t)
	// Compared with redis-server 7.0.15: Tumbler as that release.
	ts := tumbler.RunT(t, tumbler.WithPersonality("redis-7.0"))
	ms := miniredis.RunT(t)
	tc := redis.NewClient(&redis.Options{Addr: ts.Addr(), Protocol: 2})
	mc := redis.NewClient(&redis.Options{Addr: ms.Addr(), Protocol: 2})
	defer tc.Close()
	defer mc.Close()
	run := func(c *redis.Client, cmds [][]interface{}) string {
		if err := c.FlushAll(ctx).Err(); err != nil {
			t.Fatalf("FLUSHALL: %v", err)
		}
		var out []string
		for _, cmd := range cmds {
			v, err := c.Do(ctx, cmd...).Result()
			out = append(out, reply(v, err))
		}
		return strings.Join(out, " | ")
	}
	var table strings.Builder
	for _, dc := range diffCases {
		want := run(ref, dc.cmds)
		got := run(tc, dc.cmds)
		mini := run(mc, dc.cmds)
		if got != want {
			t.Errorf("%s: tumbler differs from redis-server\n  redis:   %s\n  tumbler: %s", dc.name, want, got)
		}
		if mini == want {
			t.Errorf("%s: miniredis now answers as redis-server (%s): update the case list and docs/go-vs-miniredis.md", dc.name, want)
		}
		fmt.Fprintf(&table, "| %s | %v | `%s` | `%s` |\n", dc.name, dc.lock, short(want), short(mini))
	}
	t.Logf("%d cases where miniredis differs from redis-server 7.0 and Tumbler matches it:\n| case | lock code | redis-server and Tumbler | miniredis |\n|---|---|---|---|\n%s", len(diffCases), table.String())
}

func short(s string) string {
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 110 {
		s = s[:107] + "..."
	}
	return s
}
