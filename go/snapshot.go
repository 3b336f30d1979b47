package tumbler

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ---------------------------------------------------------------- snapshots

// ArtifactsEnv names the directory of failure artifacts for every server started without
// WithArtifacts; setting it turns them on.
const ArtifactsEnv = "TUMBLER_ARTIFACTS"

// snapshotName is the server's name of snapshot name of database db: name itself for
// database 0, name@db<N> for the others (a server snapshot holds one database, and its
// names are the node's, not the database's).
func snapshotName(name string, db int) string {
	if db == 0 {
		return name
	}
	return name + "@db" + strconv.Itoa(db)
}

var otherDB = regexp.MustCompile(`@db[1-9][0-9]*$`)

// everyDatabase sends TUMBLER.SNAPSHOT sub name in every database of every node that is
// up (each database under its own name), on a connection of its own per node (the control
// connections stay in database 0), and returns the replies node by node. A cluster replica
// that refuses (READONLY) is skipped: it follows its primary.
func (s *Server) everyDatabase(sub, name string) ([][]interface{}, error) {
	return s.onDatabases(sub, name, -1)
}

// onDatabases is everyDatabase, or database only alone (under name as it is) if only >= 0.
func (s *Server) onDatabases(sub, name string, only int) ([][]interface{}, error) {
	if only > 0 && s.cfg.cluster {
		return nil, errors.New("a cluster has database 0 only")
	}
	var out [][]interface{}
	for i := range s.ports {
		s.mu.Lock()
		down, closed := s.down[i], s.closed
		s.mu.Unlock()
		if closed {
			return nil, errors.New("the server is closed")
		}
		if down {
			continue
		}
		dbs, err := s.databases(i)
		if err != nil {
			return nil, err
		}
		var cmds [][]string
		from, to := 0, dbs
		if only >= 0 {
			from, to = only, only+1
		}
		for db := from; db < to; db++ {
			if !s.cfg.cluster {
				cmds = append(cmds, []string{"SELECT", strconv.Itoa(db)})
			}
			if only >= 0 {
				cmds = append(cmds, []string{"TUMBLER.SNAPSHOT", sub, name})
			} else {
				cmds = append(cmds, []string{"TUMBLER.SNAPSHOT", sub, snapshotName(name, db)})
			}
		}
		replies, err := s.pipelineNode(i, cmds)
		if err != nil {
			return nil, err
		}
		var own []interface{}
		for k, r := range replies {
			if e, ok := r.(RedisError); ok && s.cfg.cluster && strings.HasPrefix(string(e), "READONLY") {
				own = nil
				break
			}
			if e, ok := r.(RedisError); ok {
				return nil, fmt.Errorf("node %d: %s: %w", i, strings.Join(cmds[k], " "), e)
			}
			if s.cfg.cluster || k%2 == 1 {
				own = append(own, r)
			}
		}
		if own != nil {
			out = append(out, own)
		}
	}
	return out, nil
}

// databases is how many databases a snapshot covers: all of them (the server fixes the
// count at start, the same for every node), or database 0 only in cluster mode, where
// SELECT is refused.
func (s *Server) databases(i int) (int, error) {
	if s.cfg.cluster {
		return 1, nil
	}
	s.mu.Lock()
	n := s.dbs
	s.mu.Unlock()
	if n > 0 {
		return n, nil
	}
	v, err := s.DoNode(i, "CONFIG", "GET", "databases")
	kv, ok := v.([]interface{})
	if err != nil || !ok || len(kv) != 2 {
		return 0, fmt.Errorf("node %d: CONFIG GET databases: %v %v", i, v, err)
	}
	if n, err = strconv.Atoi(str(kv[1])); err != nil || n < 1 {
		return 0, fmt.Errorf("node %d: CONFIG GET databases: %q", i, str(kv[1]))
	}
	s.mu.Lock()
	s.dbs = n
	s.mu.Unlock()
	return n, nil
}

// pipelineNode runs cmds on a new connection to node i.
func (s *Server) pipelineNode(i int, cmds [][]string) ([]interface{}, error) {
	c, err := dialConn(s.NodeAddr(i), s.TLSConfig(), s.ctrlUser, s.ctrlPass, cmdTimeout)
	if err != nil {
		return nil, fmt.Errorf("node %d: %v", i, err)
	}
	defer c.close()
	replies, err := c.pipeline(30*time.Second, cmds)
	if err != nil {
		return nil, fmt.Errorf("node %d: %v", i, err)
	}
	return replies, nil
}

func str(v interface{}) string {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// Snapshot saves every database of every node that is up as the in-memory snapshot name
// (TUMBLER.SNAPSHOT SAVE in each database, as name for database 0 and name@db<N> for the
// others): keys, values, TTLs. Saving a name again
// replaces it. Seed the data once, Snapshot it, and let each test RestoreAfter it. Fails
// the test on error.
func (s *Server) Snapshot(name string) {
	if s.tb != nil {
		s.tb.Helper()
	}
	if _, err := s.everyDatabase("SAVE", name); err != nil {
		s.fail(err)
	}
}

// Restore puts every database of every node that is up back to what it was at
// Snapshot(name); it costs in proportion to the keys changed since. Fails the test on error
// (an unknown name: "no such snapshot").
func (s *Server) Restore(name string) {
	if s.tb != nil {
		s.tb.Helper()
	}
	if err := s.restore(name); err != nil {
		s.fail(err)
	}
}

func (s *Server) restore(name string) error {
	_, err := s.everyDatabase("RESTORE", name)
	return err
}

// RestoreAfter restores the snapshot name when tb ends (tb.Cleanup), so the next test
// starts from the snapshot whatever tb changed; when tb failed and artifacts are on, its
// state is saved first. Call it at the start of each test or subtest sharing a server
// (tests that run one after the other: not with t.Parallel). Errors fail tb.
func (s *Server) RestoreAfter(tb testing.TB, name string) {
	tb.Helper()
	tb.Cleanup(func() {
		if dir := s.artifactsDir(); dir != "" {
			s.saveIfFailed(tb, dir)
		}
		if err := s.restore(name); err != nil {
			tb.Errorf("tumbler: restoring snapshot %q after %s: %v", name, tb.Name(), err)
		}
	})
}

// SnapshotDB saves database db alone, of every node that is up, as snapshot name (the
// server's name as it is): for parallel tests that each use their own database of a
// shared server. Fails the test on error.
func (s *Server) SnapshotDB(db int, name string) {
	if s.tb != nil {
		s.tb.Helper()
	}
	if _, err := s.onDatabases("SAVE", name, db); err != nil {
		s.fail(err)
	}
}

// RestoreDB restores database db alone, of every node that is up, from SnapshotDB(db,
// name); the other databases stay as they are. It returns the error rather than failing
// a test, so that a parallel test can call it from its own t.Cleanup.
func (s *Server) RestoreDB(db int, name string) error {
	_, err := s.onDatabases("RESTORE", name, db)
	return err
}

// DropSnapshot forgets the snapshot name; false if no database of any node had it. Fails
// the test on error.
func (s *Server) DropSnapshot(name string) bool {
	if s.tb != nil {
		s.tb.Helper()
	}
	replies, err := s.everyDatabase("DROP", name)
	if err != nil {
		s.fail(err)
		return false
	}
	for _, node := range replies {
		for _, r := range node {
			if n, ok := r.(int64); ok && n == 1 {
				return true
			}
		}
	}
	return false
}

// Snapshots lists node 0's snapshots (TUMBLER.SNAPSHOT LIST), sorted, without the
// name@db<N> ones Snapshot adds for the databases after 0. Fails the test on error.
func (s *Server) Snapshots() []string {
	if s.tb != nil {
		s.tb.Helper()
	}
	v, err := s.DoNode(s.upNode(), "TUMBLER.SNAPSHOT", "LIST")
	if err != nil {
		s.fail(err)
		return nil
	}
	list, _ := v.([]interface{})
	names := make([]string, 0, len(list))
	for _, n := range list {
		if !otherDB.MatchString(str(n)) {
			names = append(names, str(n))
		}
	}
	sort.Strings(names)
	return names
}

// ---------------------------------------------------------------- state and RDB

// State is node 0's state as readable text (TUMBLER.STATE): every database's keys, types,
// TTLs and values, native-lock holders and waiters, the lock-order checker's report.
func (s *Server) State() (string, error) { return s.StateNode(s.upNode()) }

// StateNode is State of node i.
func (s *Server) StateNode(i int) (string, error) {
	v, err := s.DoNode(i, "TUMBLER.STATE")
	if err != nil {
		return "", err
	}
	return str(v), nil
}

// RDB is an RDB file of every database of node 0 (TUMBLER.RDB SAVE; the server writes
// nothing to disk), for redis-server, redis-check-rdb or RDB tools.
func (s *Server) RDB() ([]byte, error) { return s.RDBNode(s.upNode()) }

// RDBNode is RDB of node i.
func (s *Server) RDBNode(i int) ([]byte, error) {
	replies, err := s.pipelineNode(i, [][]string{{"TUMBLER.RDB", "SAVE"}})
	if err != nil {
		return nil, err
	}
	switch v := replies[0].(type) {
	case []byte:
		return v, nil
	case RedisError:
		return nil, fmt.Errorf("node %d: TUMBLER.RDB SAVE: %w", i, v)
	}
	return nil, fmt.Errorf("node %d: TUMBLER.RDB SAVE replied %v", i, replies[0])
}

// WriteArtifacts writes the server's state to dir (created if missing) for a post-mortem:
// name.txt (State, after the note lines as "# " comments) and name.rdb (RDB) for node 0,
// name.node<i>.txt and name.node<i>.rdb for the other nodes that are up. It returns the
// files written.
func (s *Server) WriteArtifacts(dir, name string, note ...string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for i := range s.ports {
		if s.isDown(i) {
			continue
		}
		base := name
		if i > 0 {
			base += ".node" + strconv.Itoa(i)
		}
		state, err := s.StateNode(i)
		if err != nil {
			return files, err
		}
		var txt strings.Builder
		for _, n := range note {
			txt.WriteString("# " + strings.ReplaceAll(n, "\n", "\n# ") + "\n")
		}
		txt.WriteString("# " + s.NodeAddr(i))
		if len(s.ports) > 1 {
			txt.WriteString(" (node " + strconv.Itoa(i) + ")")
		}
		txt.WriteString("\n" + state)
		p := filepath.Join(dir, base+".txt")
		if err := os.WriteFile(p, []byte(txt.String()), 0o644); err != nil {
			return files, err
		}
		files = append(files, p)
		rdb, err := s.RDBNode(i)
		if err != nil {
			return files, err
		}
		p = filepath.Join(dir, base+".rdb")
		if err := os.WriteFile(p, rdb, 0o644); err != nil {
			return files, err
		}
		files = append(files, p)
	}
	return files, nil
}

// SaveOnFailure saves the server's state when tb ends failed (tb.Cleanup), to the directory
// of WithArtifacts, else $TUMBLER_ARTIFACTS, else tumbler-artifacts in the system's
// temporary directory: <test>.rdb and <test>.txt, the subtest path's "/" written as ".".
// Run does this by itself when WithArtifacts or TUMBLER_ARTIFACTS is set, and so does
// RestoreAfter (before it restores); SaveOnFailure is for tests that share a server
// without restoring it.
func (s *Server) SaveOnFailure(tb testing.TB) {
	tb.Helper()
	tb.Cleanup(func() {
		dir := s.artifactsDir()
		if dir == "" {
			dir = filepath.Join(os.TempDir(), "tumbler-artifacts")
		}
		s.saveIfFailed(tb, dir)
	})
}

// artifactsDir is where failure artifacts go, or "" when they are off.
func (s *Server) artifactsDir() string {
	if s.cfg.artifacts != "" {
		return s.cfg.artifacts
	}
	return os.Getenv(ArtifactsEnv)
}

// ArtifactName is the base name of a test's artifact files: its name, with the subtest
// separator "/" as "." and characters unsafe in file names as "_".
func ArtifactName(testName string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '/':
			return '.'
		case r < 0x20 || strings.ContainsRune(`\:*?"<>|`, r):
			return '_'
		}
		return r
	}, testName)
}

// saveIfFailed writes tb's artifacts once, if tb failed and the server still runs.
func (s *Server) saveIfFailed(tb testing.TB, dir string) {
	if !tb.Failed() {
		return
	}
	s.mu.Lock()
	if s.saved == nil {
		s.saved = map[string]bool{}
	}
	done := s.saved[tb.Name()] || s.closed
	s.saved[tb.Name()] = true
	s.mu.Unlock()
	if done {
		return
	}
	files, err := s.WriteArtifacts(dir, ArtifactName(tb.Name()), "tumbler state when "+tb.Name()+" failed")
	if err != nil {
		tb.Logf("tumbler: could not save the server's state after the failure: %v", err)
		return
	}
	tb.Logf("tumbler: the server's state as %s failed: %s", tb.Name(), strings.Join(files, ", "))
}
