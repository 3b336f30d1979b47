"""redis-py over TLS (ssl=True) and over a Unix socket, against tumbler.

    python transports.py tls <tls-port> <ca.crt> <client.crt> <client.key>
    python transports.py unix <socket-path>

Prints "ok <scenario>" on success; any failure raises (non-zero exit).
"""

import sys
import threading

import redis


def exercise(r, other):
    assert r.ping()
    assert r.set("py:k", "v")
    assert other.get("py:k") == "v"
    pipe = r.pipeline(transaction=True)
    pipe.incr("py:n").incr("py:n")
    assert pipe.execute() == [1, 2]
    # Pub/sub.
    p = r.pubsub()
    p.subscribe("py:ch")
    assert p.get_message(timeout=5)["type"] == "subscribe"
    assert other.publish("py:ch", "hello") == 1
    m = p.get_message(timeout=5)
    assert m["data"] == "hello", m
    p.close()
    # A blocking pop woken by the other connection.
    got = {}
    t = threading.Thread(target=lambda: got.update(v=r.blpop("py:q", timeout=10)))
    t.start()
    for _ in range(500):
        if any(c.get("cmd") == "blpop" for c in other.client_list()):
            break
        threading.Event().wait(0.01)
    other.lpush("py:q", "job")
    t.join(15)
    assert got.get("v") == ("py:q", "job"), got
    # redis-py's Lock (EVALSHA release).
    lock = r.lock("py:lock", timeout=30)
    assert lock.acquire(blocking=False)
    assert not other.lock("py:lock", timeout=30).acquire(blocking=False)
    lock.release()


def tls(port, ca, cert, key):
    kw = dict(
        host="localhost",
        port=port,
        ssl=True,
        ssl_ca_certs=ca,
        ssl_certfile=cert,
        ssl_keyfile=key,
        decode_responses=True,
        socket_timeout=10,
    )
    exercise(redis.Redis(**kw), redis.Redis(**kw))
    # The same over a rediss:// URL (what most applications configure).
    u = redis.Redis.from_url(
        f"rediss://localhost:{port}/0",
        ssl_ca_certs=ca,
        ssl_certfile=cert,
        ssl_keyfile=key,
        decode_responses=True,
    )
    assert u.get("py:k") == "v"
    # Without a client certificate the server refuses: an error, not a hang.
    bare = redis.Redis(host="localhost", port=port, ssl=True, ssl_ca_certs=ca, socket_timeout=10)
    try:
        bare.ping()
        raise AssertionError("a client without a certificate was served")
    except (redis.exceptions.ConnectionError, OSError) as e:
        assert "imed out" not in str(e), e


def unix(path):
    kw = dict(unix_socket_path=path, decode_responses=True, socket_timeout=10)
    exercise(redis.Redis(**kw), redis.Redis(**kw))
    u = redis.Redis.from_url(f"unix://{path}?db=0", decode_responses=True)
    assert u.get("py:k") == "v"


if __name__ == "__main__":
    name = sys.argv[1]
    if name == "tls":
        tls(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
    elif name == "unix":
        unix(sys.argv[2])
    else:
        raise SystemExit(f"unknown scenario {name}")
    print(f"ok {name}")
