"""pottery's Redis-backed containers against one server: one container per invocation.

    python containers.py <scenario>|all <port> [<protocol: 2 or 3>]

tests/tests/clients_python_containers.rs runs them all (one process, to pay the imports
once) against tumbler and, with the same assertions, against redis-server. Each one creates a container, updates it, reads it
back through a second container object on the same key (so the state is the server's, not
the object's), and exercises the container's own operations. Prints "ok <scenario>"; any
failure raises.
"""

import sys
import warnings


PROTOCOL = 2


def client(port):
    import redis

    r = redis.Redis(port=port, socket_timeout=10, protocol=PROTOCOL)
    r.flushdb()
    return r


def counter(port):
    from collections import Counter

    from pottery import RedisCounter

    r = client(port)
    c = RedisCounter(redis=r, key="votes")
    c.update(["red", "blue", "red", "green", "red"])
    c["blue"] += 2
    c.subtract({"green": 1})
    again = RedisCounter(redis=r, key="votes")
    assert again.to_counter() == Counter({"red": 3, "blue": 3, "green": 0}), again.to_counter()
    assert again["red"] == 3 and again["missing"] == 0
    assert len(again) == 3 and "green" in again and "missing" not in again
    assert again.most_common(1)[0][1] == 3
    assert sorted(again.elements()) == ["blue"] * 3 + ["red"] * 3
    # Counter arithmetic returns plain Counters; the in-place forms write back.
    assert again + Counter({"red": 1}) == Counter({"red": 4, "blue": 3})
    assert again - Counter({"red": 1}) == Counter({"red": 2, "blue": 3})
    again += Counter({"green": 5})
    assert RedisCounter(redis=r, key="votes")["green"] == 5
    del again["blue"]
    assert set(RedisCounter(redis=r, key="votes")) == {"red", "green"}
    # The counter is a hash of JSON-encoded keys and integer values.
    assert r.type("votes") == b"hash" and r.hlen("votes") == 2
    again.clear()
    assert r.exists("votes") == 0 and len(again) == 0


def set_(port):
    from pottery import RedisSet

    r = client(port)
    a = RedisSet({"apple", "pear", 1, 2}, redis=r, key="fruit")
    a.add("kiwi")
    a.discard("pear")
    a.discard("never there")
    b = RedisSet({"kiwi", 2, "plum"}, redis=r, key="other")
    again = RedisSet(redis=r, key="fruit")
    assert again.to_set() == {"apple", 1, 2, "kiwi"}
    assert len(again) == 4
    assert "kiwi" in again and "pear" not in again and 1 in again and "1" not in again
    assert list(again.contains_many("apple", "plum", 2)) == [True, False, True]
    # Set algebra against another RedisSet on the same server (SINTER/SUNION/SDIFF) and
    # against a plain Python set.
    assert again.intersection(b) == {"kiwi", 2}
    assert again.union(b) == {"apple", 1, 2, "kiwi", "plum"}
    assert again.difference(b) == {"apple", 1}
    assert again.intersection(b, {"kiwi"}) == {"kiwi"}
    assert again.union({"x"}) == {"apple", 1, 2, "kiwi", "x"}
    assert again.issuperset({"apple", 1}) and not again.issubset(b)
    assert RedisSet({"kiwi"}, redis=r, key="small").issubset(again)
    assert not again.isdisjoint(b) and again.isdisjoint({"nothing"})
    again.update(b, ["cherry"])
    assert again.to_set() == {"apple", 1, 2, "kiwi", "plum", "cherry"}
    again.difference_update(b)
    assert again.to_set() == {"apple", 1, "cherry"}
    again.remove("cherry")
    try:
        again.remove("cherry")
        raise AssertionError("remove of a missing member did not raise")
    except KeyError:
        pass
    popped = again.pop()
    assert popped in {"apple", 1} and len(again) == 1
    assert r.type("fruit") == b"set"


def deque(port):
    from collections import deque as pydeque

    from pottery import RedisDeque

    r = client(port)
    d = RedisDeque([1, 2, 3], redis=r, key="dq")
    d.append(4)
    d.appendleft(0)
    d.extend([5, 6])
    d.extendleft(["b", "a"])
    again = RedisDeque(redis=r, key="dq")
    assert list(again) == ["a", "b", 0, 1, 2, 3, 4, 5, 6]
    assert again.pop() == 6 and again.popleft() == "a"
    assert again[0] == "b" and again[-1] == 5 and len(again) == 7
    again.rotate(2)
    assert list(again) == [4, 5, "b", 0, 1, 2, 3]
    again.rotate(-3)
    assert list(again) == [0, 1, 2, 3, 4, 5, "b"]
    again.insert(1, "i")
    assert again[1] == "i" and again == pydeque([0, "i", 1, 2, 3, 4, 5, "b"])
    again.clear()
    assert not again and r.exists("dq") == 0
    try:
        again.pop()
        raise AssertionError("pop of an empty deque did not raise")
    except IndexError:
        pass

    # A bounded deque drops from the opposite end, as collections.deque does.
    bounded = RedisDeque([1, 2, 3, 4, 5], maxlen=3, redis=r, key="bounded")
    assert list(bounded) == [3, 4, 5] and bounded.maxlen == 3
    bounded.append(6)
    assert list(bounded) == [4, 5, 6]
    bounded.appendleft(3)
    assert list(bounded) == [3, 4, 5]
    bounded.extend([7, 8])
    assert list(RedisDeque(redis=r, key="bounded", maxlen=3)) == [5, 7, 8]
    assert r.llen("bounded") == 3 and r.type("bounded") == b"list"


def dict_(port):
    from pottery import RedisDict

    r = client(port)
    d = RedisDict({"name": "ada", "langs": ["en", "fr"]}, redis=r, key="user:1")
    d["age"] = 36
    d.update({"city": "london"}, age=37)
    d["nested"] = {"a": [1, 2, {"b": None}]}
    again = RedisDict(redis=r, key="user:1")
    assert again["age"] == 37 and again["langs"] == ["en", "fr"]
    assert again["nested"] == {"a": [1, 2, {"b": None}]}
    assert len(again) == 5 and "city" in again and "zip" not in again
    assert sorted(again) == ["age", "city", "langs", "name", "nested"]
    assert dict(again.items())["name"] == "ada"
    assert again.to_dict() == {
        "name": "ada",
        "langs": ["en", "fr"],
        "age": 37,
        "city": "london",
        "nested": {"a": [1, 2, {"b": None}]},
    }
    assert again.get("zip", "none") == "none"
    try:
        again["zip"]
        raise AssertionError("missing key did not raise")
    except KeyError:
        pass
    del again["city"]
    assert again.pop("age") == 37 and len(again) == 3
    assert again.setdefault("zip", "N1") == "N1" and again["zip"] == "N1"
    assert again == {"name": "ada", "langs": ["en", "fr"], "nested": {"a": [1, 2, {"b": None}]}, "zip": "N1"}
    # Many keys: iteration walks the hash with HSCAN.
    many = RedisDict({f"k{i}": i for i in range(600)}, redis=r, key="many")
    assert sorted(int(k[1:]) for k in many) == list(range(600))
    assert sum(many.values()) == sum(range(600))
    assert r.type("user:1") == b"hash"


def hyperloglog(port):
    from pottery import HyperLogLog

    r = client(port)
    a = HyperLogLog({"rock", "jazz", "pop"}, redis=r, key="genres:a")
    a.add("blues")
    a.update(["rock", "folk"])
    b = HyperLogLog({f"band{i}" for i in range(1000)} | {"rock"}, redis=r, key="genres:b")
    assert len(HyperLogLog(redis=r, key="genres:a")) == 5
    # HyperLogLog counts approximately: within 3% for 1000 elements (Redis' own error).
    assert 970 <= len(b) <= 1030, len(b)
    assert "jazz" in a and "metal" not in a
    assert list(a.contains_many("pop", "metal", "folk")) == [True, False, True]
    # union() PFMERGEs both into a new key; update() with another HLL merges in place.
    u = a.union(b, redis=r, key="genres:u")
    assert 975 <= len(u) <= 1035, len(u)
    assert len(a) == 5, "union changed its operand"
    a.update(b)
    assert len(a) == len(u)
    assert r.type("genres:u") == b"string" and r.get("genres:u").startswith(b"HYLL")
    u.clear()
    assert len(u) == 0 and r.exists("genres:u") == 0


def bloom(port):
    from pottery import BloomFilter

    r = client(port)
    f = BloomFilter({"alice", "bob"}, num_elements=200, false_positives=0.01, redis=r, key="seen")
    f.add("carol")
    f.update(["dave", "erin"], {"frank"})
    again = BloomFilter(num_elements=200, false_positives=0.01, redis=r, key="seen")
    # Sized by the classic formulas: m = -n ln p / (ln 2)^2 bits, k = m/n ln 2 hashes.
    assert again.size() == 1918 and again.num_hashes() == 7
    for name in ["alice", "bob", "carol", "dave", "erin", "frank"]:
        assert name in again, name
    assert list(again.contains_many("alice", "zed", "frank")) == [True, False, True]
    # len() estimates the count from the bits set (BITCOUNT).
    assert len(again) == 6, len(again)
    others = [f"stranger{i}" for i in range(200)]
    false_positives = sum(1 for x in others if x in again)
    assert false_positives <= 4, false_positives
    assert r.type("seen") == b"string" and r.bitcount("seen") <= 6 * 7
    again.clear()
    assert "alice" not in again and len(again) == 0


SCENARIOS = {
    "counter": counter,
    "set": set_,
    "deque": deque,
    "dict": dict_,
    "hyperloglog": hyperloglog,
    "bloom": bloom,
}

if __name__ == "__main__":
    scenario, port = sys.argv[1], int(sys.argv[2])
    PROTOCOL = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    # pottery warns about its own multi-round-trip operations; they are what is under test.
    warnings.simplefilter("ignore")
    for name in SCENARIOS if scenario == "all" else [scenario]:
        SCENARIOS[name](port)
        print(f"ok {name}", flush=True)
    if scenario == "all":
        print("ok all")
