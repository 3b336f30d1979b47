"""Seed data for the shared-server suite, run with `pytest -n 2`: both workers write the same
key names, each in its own database of one tumbler server.

Each worker also records which server it used (INFO's run_id and process_id) in
$TUMBLER_XDIST_RECORDS/<worker>.json, which ci.sh checks after the run, and waits for the
other worker's record before seeding, so the two really run at the same time.
"""

import json
import os
import time
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def worker_record(tumbler_server, tmp_path_factory):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    assert worker and count == 2, "run this suite with pytest -n 2"
    records = Path(os.environ.get("TUMBLER_XDIST_RECORDS")
                   or tmp_path_factory.getbasetemp().parent / "records")
    records.mkdir(parents=True, exist_ok=True)
    info = tumbler_server.client().info("server")
    record = {"worker": worker, "db": tumbler_server.db, "run_id": info["run_id"],
              "process_id": info["process_id"], "port": tumbler_server.port}
    (records / f"{worker}.json").write_text(json.dumps(record))
    deadline = time.monotonic() + 60
    while len(list(records.glob("gw*.json"))) < count:
        assert time.monotonic() < deadline, "the other worker never reached the server"
        time.sleep(0.02)
    others = [json.loads(p.read_text()) for p in records.glob("gw*.json")]
    assert {o["run_id"] for o in others} == {info["run_id"]}, others
    return record


@pytest.fixture(scope="session")
def tumbler_seed(tumbler_server, worker_record):
    r = tumbler_server.client()
    r.set("owner", worker_record["worker"])
    r.set("stock:apple", 10)
    r.hset("user:1", mapping={"name": "ada", "plan": "free"})
    r.rpush("queue", "a", "b")
    r.set("session:1", "token", ex=3600)
