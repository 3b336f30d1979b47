"""A user's test file as pytest-redis' README shows it: the plugin's own `redisdb` and
`redis_proc` fixtures, the server chosen with --redis-exec or the redis_exec ini option.
test_pytest_redis.py runs it in a pytest of its own, once per server and per option."""


def test_round_trip(redisdb):
    redisdb.set("woof", "woof")
    assert redisdb.get("woof") == b"woof"
    lock = redisdb.lock("user:lock", timeout=5, blocking_timeout=1)
    assert lock.acquire()
    lock.release()
    assert redisdb.exists("user:lock") == 0


def test_process_fixture(redis_proc, redisdb):
    assert redis_proc.running()
    assert redisdb.info("server")["tcp_port"] == redis_proc.port
