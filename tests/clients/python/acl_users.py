"""redis-py with ACL users against tumbler: one scenario per invocation.

    python acl_users.py <scenario> <port>

Prints "ok <scenario>" on success; any failure raises (non-zero exit status).
"""

import sys


def acl_users(port, protocol):
    import redis
    from redis.exceptions import AuthenticationError, NoPermissionError

    admin = redis.Redis(port=port, protocol=protocol, decode_responses=True)
    admin.acl_setuser(
        "locker",
        enabled=True,
        passwords=["+s3cret"],
        keys=["lock:*"],
        channels=["locks:*"],
        commands=["+@all", "-@dangerous"],
    )
    info = admin.acl_getuser("locker")
    assert "on" in info["flags"], info
    assert info["keys"] in ("~lock:*", ["~lock:*"]), info
    assert "locker" in admin.acl_users()

    # The client logs in with a username, as redis-py sends AUTH user pass (or HELLO 3 AUTH).
    r = redis.Redis(
        port=port,
        username="locker",
        password="s3cret",
        protocol=protocol,
        decode_responses=True,
    )
    assert r.acl_whoami() == "locker"
    # redis-py's Lock (SET NX PX, then EVALSHA to release) works on allowed keys.
    lock = r.lock("lock:job:1", timeout=10)
    assert lock.acquire(blocking=False)
    assert lock.owned()
    lock.release()
    assert not r.exists("lock:job:1")

    # Keys, commands and channels outside the user's rules are refused with NOPERM.
    for denied in (
        lambda: r.set("other:key", "v"),
        lambda: r.flushall(),
        lambda: r.publish("news", "hi"),
        lambda: r.eval("return redis.call('set', 'other:key', 1)", 0),
    ):
        try:
            denied()
            raise AssertionError("a denied command ran")
        except NoPermissionError:
            pass
        except redis.exceptions.ResponseError as e:
            # A denied redis.call surfaces as the script's error.
            assert "can't access" in str(e) or "can't run" in str(e), e
    assert r.publish("locks:released", "x") == 0

    # The refusals are in the ACL log, newest first.
    log = admin.acl_log()
    assert log and log[0]["username"] == "locker", log
    reasons = {e["reason"] for e in log}
    assert {"key", "command", "channel"} <= reasons, reasons

    # A wrong password is an AuthenticationError and is logged too.
    bad = redis.Redis(
        port=port, username="locker", password="nope", protocol=protocol
    )
    try:
        bad.ping()
        raise AssertionError("wrong password accepted")
    except AuthenticationError:
        pass
    assert admin.acl_log(count=1)[0]["reason"] == "auth"

    # Deleting the user disconnects its clients.
    assert admin.acl_deluser("locker") == 1
    try:
        r.connection_pool.reset()
        r.ping()
        raise AssertionError("deleted user still logged in")
    except AuthenticationError:
        pass
    admin.acl_log_reset()


if __name__ == "__main__":
    name, port = sys.argv[1], int(sys.argv[2])
    {
        "acl_users_resp2": lambda: acl_users(port, 2),
        "acl_users_resp3": lambda: acl_users(port, 3),
    }[name]()
    print("ok", name)
