"""Run with ``--tumbler-personality valkey-9.1`` (packaging/python/ci.sh): the session's
server is then Valkey 9.1 to the client. ``Server(personality=...)`` starts another."""

import pytest
import redis

import tumbler as tumbler_pkg


def test_the_session_server_announces_the_chosen_release(tumbler):
    info = tumbler.client(decode_responses=True).info("server")
    assert info["server_name"] == "valkey"
    assert info["valkey_version"] == "9.1.2"
    assert info["redis_version"] == "7.2.4"


def test_a_server_of_another_release_has_that_release_s_commands(tumbler):
    # ZRANK ... WITHSCORE is Redis 7.2's (and so Valkey's); Redis 7.0 did not have it.
    tumbler.client().zadd("z", {"a": 1})
    assert tumbler.client().execute_command("ZRANK", "z", "a", "WITHSCORE") == [0, 1.0]
    with tumbler_pkg.Server(personality="redis-7.0", binary=tumbler.binary) as old:
        r = old.client()
        assert r.info("server")["redis_version"] == "7.0.15"
        r.zadd("z", {"a": 1})
        with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
            r.execute_command("ZRANK", "z", "a", "WITHSCORE")
