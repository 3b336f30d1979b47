package tumbler

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as the helper "test binary" of TestNoOrphanWhenTestBinaryIsKilled: run
// with TUMBLER_ORPHAN_HELPER=1, it starts a server, prints the server's PID and waits to
// be killed.
func TestMain(m *testing.M) {
	if os.Getenv("TUMBLER_ORPHAN_HELPER") == "1" {
		s, err := Start(WithNodes(2))
		if err != nil {
			fmt.Printf("ERROR %v\n", err)
			os.Exit(1)
		}
		// Let the server finish its start-up log lines: a write to the stderr pipe after this
		// process died could end it for another reason than --watch-stdin.
		time.Sleep(300 * time.Millisecond)
		unsupported := strings.Contains(s.Log(), "unsupported directive 'watch-stdin'")
		fmt.Printf("PID %d %v\n", s.PID(), unsupported)
		time.Sleep(60 * time.Second) // killed long before this
		_ = s.Close()
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// alive is true while pid runs (a zombie, waiting for its reaper, is not running).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func TestNoOrphanWhenTestBinaryIsKilled(t *testing.T) {
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), "TUMBLER_ORPHAN_HELPER=1")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	helper.Stderr = os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = helper.Process.Kill(); _ = helper.Wait() }()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "PID ") || strings.HasPrefix(sc.Text(), "ERROR ") {
				lines <- sc.Text()
				break
			}
		}
		close(lines)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(20 * time.Second):
		t.Fatal("the helper did not start a server within 20 s")
	}
	var pid int
	var unsupported bool
	if _, err := fmt.Sscanf(line, "PID %d %t", &pid, &unsupported); err != nil {
		t.Fatalf("helper said %q", line)
	}
	if !alive(pid) {
		t.Fatalf("server %d is not running before the kill", pid)
	}
	// kill -9: no Cleanup, no deferred Close runs in the helper.
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	start := time.Now()
	for alive(pid) && time.Since(start) < 5*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(pid) {
		// We started it (through the helper): stop it, then fail.
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if unsupported && os.Getenv("TUMBLER_SKIP_MISSING") == "1" {
			t.Skip("this server binary predates --watch-stdin (it ignored the directive); " +
				"the orphan was killed by the test. Without TUMBLER_SKIP_MISSING=1 this fails.")
		}
		t.Fatalf("server %d outlived the killed test binary by 5 s (--watch-stdin unsupported: %v)", pid, unsupported)
	}
	t.Logf("server %d exited %v after the test binary was killed", pid, time.Since(start).Round(time.Millisecond))
}
