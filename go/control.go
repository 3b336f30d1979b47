package tumbler

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ---------------------------------------------------------------- time control

// FastForward moves the server clock of every node forward by d (whole milliseconds):
// keys, lock leases and blocking timeouts that fall due expire before it returns, as if d
// had passed. Unlike miniredis' FastForward, TIME moves too. A node that is down catches
// up when NodeUp brings it back. Fails the test on error (d < 0 is an error: time only
// moves forward).
func (s *Server) FastForward(d time.Duration) {
	if s.tb != nil {
		s.tb.Helper()
	}
	if err := s.fastForward(d); err != nil {
		s.fail(err)
	}
}

func (s *Server) fastForward(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("FastForward(%v): time only moves forward", d)
	}
	ms := d.Milliseconds()
	for i := range s.ports {
		s.mu.Lock()
		down := s.down[i]
		if down {
			s.pending[i] += ms
		}
		s.mu.Unlock()
		if down {
			continue
		}
		if _, err := s.DoNode(i, "TUMBLER.TIME", "ADVANCE", strconv.FormatInt(ms, 10)); err != nil {
			return timeErr(err)
		}
	}
	return nil
}

func timeErr(err error) error {
	if strings.Contains(err.Error(), "unknown command") {
		return fmt.Errorf("time control is off (WithoutTimeControl, or a server without TUMBLER.TIME): %v", err)
	}
	return err
}

// Freeze stops the clock of every node: TTLs and timeouts stop counting down until Resume.
func (s *Server) Freeze() {
	if s.tb != nil {
		s.tb.Helper()
	}
	if err := s.everyUpNode(func() { s.frozen = true }, "TUMBLER.TIME", "FREEZE"); err != nil {
		s.fail(timeErr(err))
	}
}

// Resume lets frozen clocks run again from where they stopped (no jump).
func (s *Server) Resume() {
	if s.tb != nil {
		s.tb.Helper()
	}
	if err := s.everyUpNode(func() { s.frozen = false }, "TUMBLER.TIME", "RESUME"); err != nil {
		s.fail(timeErr(err))
	}
}

// isDown reports whether node i is down (NodeDown, until NodeUp).
func (s *Server) isDown(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down[i]
}

func (s *Server) everyUpNode(note func(), args ...string) error {
	s.mu.Lock()
	note()
	s.mu.Unlock()
	for i := range s.ports {
		if s.isDown(i) {
			continue
		}
		if _, err := s.DoNode(i, args...); err != nil {
			return err
		}
	}
	return nil
}

// Now is node 0's clock (what TIME returns there), to the millisecond.
func (s *Server) Now() time.Time {
	if s.tb != nil {
		s.tb.Helper()
	}
	ms, err := s.now(s.upNode())
	if err != nil {
		s.fail(timeErr(err))
	}
	return time.UnixMilli(ms)
}

func (s *Server) now(i int) (int64, error) {
	v, err := s.DoNode(i, "TUMBLER.TIME", "NOW")
	if err != nil {
		return 0, err
	}
	ms, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("TUMBLER.TIME NOW replied %v", v)
	}
	return ms, nil
}

// SetTime moves the server clock forward to t (every node by the same amount). The
// server's clock only moves forward, so a t before Now() fails the test; miniredis'
// SetTime, which sets what TIME returns and moves no TTL, has no exact equivalent here.
func (s *Server) SetTime(t time.Time) {
	if s.tb != nil {
		s.tb.Helper()
	}
	now, err := s.now(s.upNode())
	if err != nil {
		s.fail(timeErr(err))
		return
	}
	d := t.UnixMilli() - now
	if d < 0 {
		s.fail(fmt.Errorf("SetTime(%v): the server is at %v already and time only moves forward",
			t, time.UnixMilli(now)))
		return
	}
	if err := s.fastForward(time.Duration(d) * time.Millisecond); err != nil {
		s.fail(err)
	}
}

// ---------------------------------------------------------------- faults

// NodeDown closes node i's port and drops its clients (TUMBLER.NODE DOWN): connections are
// refused until NodeUp. Fails the test on error.
func (s *Server) NodeDown(i int) {
	if s.tb != nil {
		s.tb.Helper()
	}
	if err := s.control("TUMBLER.NODE", "DOWN", strconv.Itoa(i)); err != nil {
		s.fail(err)
		return
	}
	// The port is closed by the time the server answers DOWN: the next dial is refused.
	s.mu.Lock()
	s.down[i] = true
	if c := s.conns[i]; c != nil {
		c.close()
		delete(s.conns, i)
	}
	s.mu.Unlock()
}

// NodeUp brings node i back on the same port with its data, and moves its clock by the
// FastForward it missed while down. Fails the test on error.
func (s *Server) NodeUp(i int) { s.nodeUp(i, false) }

// NodeUpEmpty brings node i back without its data (TUMBLER.NODE UP i FLUSH): a restart.
func (s *Server) NodeUpEmpty(i int) { s.nodeUp(i, true) }

func (s *Server) nodeUp(i int, flush bool) {
	if s.tb != nil {
		s.tb.Helper()
	}
	args := []string{"TUMBLER.NODE", "UP", strconv.Itoa(i)}
	if flush {
		args = append(args, "FLUSH")
	}
	if err := s.control(args...); err != nil {
		s.fail(err)
		return
	}
	// The port listens again by the time the server answers UP.
	s.mu.Lock()
	delete(s.down, i)
	missed, frozen := s.pending[i], s.frozen
	delete(s.pending, i)
	s.mu.Unlock()
	if missed > 0 {
		if _, err := s.DoNode(i, "TUMBLER.TIME", "ADVANCE", strconv.FormatInt(missed, 10)); err != nil {
			s.fail(err)
			return
		}
	}
	if frozen {
		if _, err := s.DoNode(i, "TUMBLER.TIME", "FREEZE"); err != nil {
			s.fail(err)
		}
	}
}

// NodeDelay makes every reply of node i wait d (0 turns it off).
func (s *Server) NodeDelay(i int, d time.Duration) {
	if s.tb != nil {
		s.tb.Helper()
	}
	if err := s.control("TUMBLER.NODE", "DELAY", strconv.Itoa(i), strconv.FormatInt(d.Milliseconds(), 10)); err != nil {
		s.fail(err)
	}
}

// Failover makes replica node i its shard's primary, and the old primary its replica
// (TUMBLER.CLUSTER FAILOVER), under WithCluster. Fails the test on error.
func (s *Server) Failover(i int) {
	if s.tb != nil {
		s.tb.Helper()
	}
	if err := s.control("TUMBLER.CLUSTER", "FAILOVER", strconv.Itoa(i)); err != nil {
		s.fail(err)
	}
}

// control sends a node-wide command to a node that is up.
func (s *Server) control(args ...string) error {
	_, err := s.DoNode(s.upNode(), args...)
	if err != nil && strings.Contains(err.Error(), "unknown command") {
		return fmt.Errorf("test control is off (WithoutTestControl): %v", err)
	}
	return err
}

// FlushAll empties every database of every node that is up.
func (s *Server) FlushAll() {
	if s.tb != nil {
		s.tb.Helper()
	}
	if err := s.everyUpNode(func() {}, "FLUSHALL"); err != nil {
		s.fail(err)
	}
}

// ---------------------------------------------------------------- lock-order checker

// LockdepEdge is one step of a finding: Owner held Held (Holds, for a deadlock) and took
// or waited for Lock, at Time (server clock, Unix ms), in Command.
type LockdepEdge struct {
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	Owner   string `json:"owner"`
	Held    string `json:"held,omitempty"`
	Holds   string `json:"holds,omitempty"`
	Lock    string `json:"lock"`
	Time    int64  `json:"time"`
	Command string `json:"command"`
}

// LockdepFinding is one lock order inversion (Cycle lists lock classes) or deadlock (lock
// names).
type LockdepFinding struct {
	Cycle []string      `json:"cycle"`
	Edges []LockdepEdge `json:"edges"`
	Node  int           `json:"-"`
}

// LockdepReport is TUMBLER.LOCKDEP REPORT (docs/lockdep.md), gathered from every node
// that is up.
type LockdepReport struct {
	Mode       string           `json:"mode"`
	Inversions []LockdepFinding `json:"inversions"`
	Deadlocks  []LockdepFinding `json:"deadlocks"`
}

// LockdepReport reads the lock-order checker's findings from every node that is up.
func (s *Server) LockdepReport() (*LockdepReport, error) {
	out := &LockdepReport{}
	for i := range s.ports {
		if s.isDown(i) {
			continue
		}
		v, err := s.DoNode(i, "TUMBLER.LOCKDEP", "REPORT")
		if err != nil {
			return nil, err
		}
		raw, ok := v.([]byte)
		if !ok {
			if str, isStr := v.(string); isStr {
				raw = []byte(str)
			} else {
				return nil, fmt.Errorf("TUMBLER.LOCKDEP REPORT replied %T", v)
			}
		}
		var r LockdepReport
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("TUMBLER.LOCKDEP REPORT: %v", err)
		}
		if out.Mode == "" {
			out.Mode = r.Mode
		}
		for _, f := range r.Inversions {
			f.Node = i
			out.Inversions = append(out.Inversions, f)
		}
		for _, f := range r.Deadlocks {
			f.Node = i
			out.Deadlocks = append(out.Deadlocks, f)
		}
	}
	return out, nil
}

// LockdepReset forgets the checker's order graph and findings on every node that is up.
func (s *Server) LockdepReset() error {
	return s.everyUpNode(func() {}, "TUMBLER.LOCKDEP", "RESET")
}

// String names each finding, one cycle a line with its edges below.
func (r *LockdepReport) String() string {
	var b strings.Builder
	for _, k := range []struct {
		name string
		fs   []LockdepFinding
	}{{"inversion", r.Inversions}, {"deadlock", r.Deadlocks}} {
		for _, f := range k.fs {
			fmt.Fprintf(&b, "%s (node %d): %s\n", k.name, f.Node, strings.Join(append(append([]string{}, f.Cycle...), f.Cycle[:min(1, len(f.Cycle))]...), " -> "))
			for _, e := range f.Edges {
				held := e.Held
				if held == "" {
					held = e.Holds
				}
				fmt.Fprintf(&b, "    %s held %s and took %s at %d (%s)\n", e.Owner, held, e.Lock, e.Time, e.Command)
			}
		}
	}
	return b.String()
}

// AssertNoLockInversions fails t, naming every cycle, if the lock-order checker found a
// lock order inversion or a deadlock. The server must run WithLockdep("yes") or "strict".
func (s *Server) AssertNoLockInversions(t testing.TB) {
	t.Helper()
	r, err := s.LockdepReport()
	if err != nil {
		t.Fatalf("tumbler: %v", err)
		return
	}
	if r.Mode == "no" {
		t.Fatalf("tumbler: lockdep is off: start the server WithLockdep(\"yes\")")
		return
	}
	if len(r.Inversions) > 0 || len(r.Deadlocks) > 0 {
		t.Errorf("tumbler: the lock-order checker found:\n%s", r)
	}
}
