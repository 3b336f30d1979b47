"""The pytest plugin's fixtures and the Server API, as a user's test suite uses them."""

import os
import stat
import time

import pytest
import redis

import tumbler


def test_fixture_gives_a_running_server(tumbler):
    assert tumbler.url == f"redis://127.0.0.1:{tumbler.port}/0"
    r = redis.Redis.from_url(tumbler.url)
    assert r.ping()
    r.set("left-behind", "x")


def test_each_test_starts_with_an_empty_keyspace(tumbler):
    # The previous test left a key behind; the `tumbler` fixture flushed it.
    assert tumbler.client().dbsize() == 0


def test_session_server_is_shared(tumbler, tumbler_server):
    assert tumbler is tumbler_server


def test_advance_expires_keys_without_sleeping(tumbler):
    r = tumbler.client(decode_responses=True)
    r.set("session", "abc", ex=3600)
    tumbler.advance(3_599_000)
    assert r.get("session") == "abc"
    tumbler.advance(1_000)
    assert r.get("session") is None


def test_freeze_stops_ttls_and_resume_restarts_them(tumbler):
    r = tumbler.client()
    r.set("k", "v", px=60_000)
    tumbler.freeze()
    before = r.pttl("k")
    time.sleep(0.05)
    assert r.pttl("k") == before
    tumbler.resume()
    deadline = time.monotonic() + 5
    while r.pttl("k") == before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert r.pttl("k") < before


def test_server_context_manager_and_extra_args():
    with tumbler.Server(args=["--requirepass", "s3cret"]) as srv:
        with pytest.raises(redis.AuthenticationError):
            srv.client().ping()
        assert srv.client(password="s3cret").ping()
        with pytest.raises(tumbler.TumblerError, match="time_control=True"):
            srv.advance(1)
    assert not srv.running


def test_missing_binary_says_what_to_do(tmp_path):
    with pytest.raises(tumbler.TumblerError) as e:
        tumbler.Server(binary=str(tmp_path / "nope")).start()
    assert "not found" in str(e.value)
    assert "TUMBLER_BINARY" in str(e.value)


def test_broken_binary_says_what_to_do(tmp_path):
    bad = tmp_path / "tumbler"
    bad.write_bytes(b"\x7fELF this is not a program")
    bad.chmod(bad.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(tumbler.TumblerError) as e:
        tumbler.Server(binary=str(bad)).start()
    assert "TUMBLER_BINARY" in str(e.value)
    assert str(bad) in str(e.value)


def test_bundled_binary_comes_from_the_installed_wheel():
    # No repository checkout on the path: the binary is the wheel's own.
    path = tumbler.binary_path()
    assert os.path.join("tumbler", "bin", "tumbler") in path
    assert "site-packages" in path
