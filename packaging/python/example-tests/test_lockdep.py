"""The lock-order checker from Python: redis-py locks taken in opposite orders by two
clients are reported, though they never deadlocked, and one call fails the test."""

import subprocess
import sys
import textwrap

import pytest
import redis

import tumbler


def nest(r: redis.Redis, first: str, second: str) -> None:
    with r.lock(first, timeout=30):
        with r.lock(second, timeout=30):
            pass


def test_inversion_between_two_clients_fails_the_assertion():
    with tumbler.Server(lockdep="yes") as srv:
        a, b = srv.client(), srv.client()
        nest(a, "order:1", "stock:1")
        srv.assert_no_lock_inversions()  # one order so far: fine
        nest(b, "stock:2", "order:2")
        with pytest.raises(tumbler.LockOrderError) as e:
            srv.assert_no_lock_inversions()
        assert "order:* -> stock:*" in str(e.value) or "stock:* -> order:*" in str(e.value)
        assert len(e.value.report["inversions"]) == 1
        srv.lockdep_reset()
        srv.assert_no_lock_inversions()


def test_strict_mode_refuses_the_inverting_acquisition():
    with tumbler.Server(lockdep="strict") as srv:
        a, b = srv.client(), srv.client()
        nest(a, "x:1", "y:1")
        with b.lock("y:2", timeout=30):
            with pytest.raises(redis.ResponseError, match="LOCKDEP lock order inversion"):
                b.lock("x:2", timeout=30).acquire(blocking=False)


def test_the_plugin_option_fails_a_run_that_inverted(tmp_path):
    (tmp_path / "test_app.py").write_text(textwrap.dedent('''
        def test_one(tumbler):
            r = tumbler.client()
            with r.lock("a:1", timeout=30):
                with r.lock("b:1", timeout=30):
                    pass

        def test_two(tumbler):
            r = tumbler.client()
            with r.lock("b:2", timeout=30):
                with r.lock("a:2", timeout=30):
                    pass
    '''))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tumbler-lockdep", "yes"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode != 0, run.stdout
    assert "LockOrderError" in run.stdout and "a:* -> b:*" in run.stdout.replace("b:* -> a:*", "a:* -> b:*"), run.stdout
    assert "2 passed, 1 error" in run.stdout, run.stdout
