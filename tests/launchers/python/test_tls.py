"""TLS with certificate material made as users make it, at run time, with the openssl CLI.

Cases (each for the server certificate and for the client certificate):
  v1            `openssl x509 -req -in x.csr -CA ca.crt -CAkey ca.key -CAcreateserial` with no
                extension file: an X.509 v1 certificate, as many tutorials make it
  no-san        a v3 leaf with key usages but no subjectAltName
  chain         leaves signed by an intermediate; the CA file holds intermediate + root
  two-roots     server and client leaves from two unrelated roots; the CA file holds both
  pkcs1         RSA keys in PKCS#1 (`openssl genrsa -traditional`: BEGIN RSA PRIVATE KEY)
  pkcs8         RSA keys in PKCS#8 (`openssl genpkey`: BEGIN PRIVATE KEY)
  ec            `openssl ecparam -genkey -name prime256v1` (EC PARAMETERS + EC PRIVATE KEY)
  gen-test-certs, gen-test-certs-generic
                the output of Redis' own utils/gen-test-certs.sh, run unchanged (from Debian's
                redis source package; REDIS_GEN_TEST_CERTS names it): server.crt/client.crt
                with nsCertType and key usages, and the v1 redis.crt; with its redis.dh
For each case, redis-server and tumbler start from the same config file (`port 0`, tls-port,
tls-cert-file, tls-key-file, tls-ca-cert-file, an ACL user), once with `tls-auth-clients yes`
and once with `optional`; redis-cli --tls, redis-py and ioredis connect as the ACL user with
and without a client certificate, and each outcome must be the same for both servers (and be
what Redis documents: under `yes` no certificate, no connection).

Clients verify the server's chain against the CA file but not its host name: the host check is
the client's, identical for both servers, and certificates without subjectAltName fail it in
any modern client whatever the server.
"""

import json
import os
import shutil
import subprocess

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from conftest import SERVER_NAMES, missing, SERVERS, free_port, start_server, wait_until, port_open

HERE = os.path.dirname(os.path.abspath(__file__))
NODE = shutil.which("node")
NODE_DIR = os.environ.get("LAUNCHER_NODE_DIR", "")
REDIS_CLI = shutil.which("redis-cli")
OPENSSL = shutil.which("openssl")
GEN_TEST_CERTS = os.environ.get("REDIS_GEN_TEST_CERTS", "")
# A directory where scripts/ci/launchers.sh already ran that script, unchanged, in the
# background while the launchers installed (its `openssl dhparam 2048` alone takes from 30 s
# to two minutes on two busy cores).
GEN_TEST_CERTS_OUT = os.environ.get("REDIS_GEN_TEST_CERTS_OUT", "")


def need(ok, what):
    if not ok:
        missing(what)


def ossl(cwd, *args, stdin=None):
    out = subprocess.run([OPENSSL, *args], cwd=cwd, capture_output=True, text=True, input=stdin, timeout=120)
    assert out.returncode == 0, f"openssl {' '.join(args)}: {out.stderr}"
    return out.stdout


POOL = {}
POOL_DIR = []
GEN_DIR = []


def generate_key(path, kind):
    d = os.path.dirname(path)
    if kind == "pkcs1":
        ossl(d, "genrsa", "-traditional", "-out", path, "2048")
        assert "BEGIN RSA PRIVATE KEY" in open(path).read()
    elif kind == "pkcs8":
        ossl(d, "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path)
        assert "BEGIN PRIVATE KEY" in open(path).read()
    elif kind == "ec":
        ossl(d, "ecparam", "-genkey", "-name", "prime256v1", "-out", path)
        text = open(path).read()
        assert "BEGIN EC PARAMETERS" in text and "BEGIN EC PRIVATE KEY" in text
    else:
        raise ValueError(kind)
    return path


class Pki:
    def __init__(self, d):
        self.d = str(d)
        self.used = {}

    def p(self, name):
        return os.path.join(self.d, name)

    def key(self, name, kind):
        """A private key in the given format. Keys are generated once per session and reused
        across cases (RSA generation dominates the run time otherwise); within one case every
        role (root, intermediate, server, client) gets a different key."""
        self.used[kind] = self.used.get(kind, 0) + 1
        pooled = POOL.setdefault(kind, [])
        while len(pooled) < self.used[kind]:
            pooled.append(generate_key(os.path.join(POOL_DIR[0], f"{kind}-{len(pooled)}.key"), kind))
        path = self.p(f"{name}.key")
        shutil.copyfile(pooled[self.used[kind] - 1], path)
        return path

    def root(self, name):
        key = self.key(name, "pkcs8")
        ossl(self.d, "req", "-x509", "-new", "-nodes", "-sha256", "-key", key, "-days", "30",
             "-subj", f"/O=Tumbler Test/CN={name}", "-out", self.p(f"{name}.crt"))
        return name

    def sign(self, name, ca, key_kind="pkcs8", ext=None, cn=None):
        """A leaf (or intermediate) for `name`, signed by `ca` with `openssl x509 -req`;
        without `ext` it is a v1 certificate, as that command makes it."""
        key = self.key(name, key_kind)
        ossl(self.d, "req", "-new", "-sha256", "-key", key, "-subj",
             f"/O=Tumbler Test/CN={cn or name}", "-out", self.p(f"{name}.csr"))
        args = ["x509", "-req", "-in", self.p(f"{name}.csr"), "-CA", self.p(f"{ca}.crt"),
                "-CAkey", self.p(f"{ca}.key"), "-CAcreateserial", "-days", "30", "-sha256",
                "-out", self.p(f"{name}.crt")]
        if ext:
            with open(self.p(f"{name}.ext"), "w") as f:
                f.write(ext)
            args += ["-extfile", self.p(f"{name}.ext")]
        ossl(self.d, *args)
        return self.p(f"{name}.crt"), key

    def bundle(self, name, *certs):
        with open(self.p(name), "w") as out:
            for c in certs:
                out.write(open(self.p(f"{c}.crt")).read())
        return self.p(name)


SERVER_EXT = "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
CLIENT_EXT = "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"
SAN = "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
INTERMEDIATE_EXT = "basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n"


def make_case(case, d):
    """Returns the files of one case: server cert/key, the CA file both sides verify with,
    the client cert/key, and optional extra server directives."""
    pki = Pki(d)
    if case.startswith("gen-test-certs"):
        need(GEN_TEST_CERTS and os.path.isfile(GEN_TEST_CERTS), "Redis' utils/gen-test-certs.sh (REDIS_GEN_TEST_CERTS)")
        # One run serves both gen-test-certs cases (its `openssl dhparam 2048` alone takes
        # tens of seconds on two cores).
        if not GEN_DIR and GEN_TEST_CERTS_OUT:
            assert os.path.isfile(os.path.join(GEN_TEST_CERTS_OUT, "tests", "tls", "redis.dh")), \
                f"gen-test-certs.sh did not complete in {GEN_TEST_CERTS_OUT}"
            GEN_DIR.append(GEN_TEST_CERTS_OUT)
        if not GEN_DIR:
            out = subprocess.run(["bash", GEN_TEST_CERTS], cwd=d, capture_output=True, text=True, timeout=300)
            assert out.returncode == 0, out.stderr
            GEN_DIR.append(str(d))
        t = os.path.join(GEN_DIR[0], "tests", "tls")
        name = "server" if case == "gen-test-certs" else "redis"
        client = "client" if case == "gen-test-certs" else "redis"
        return dict(cert=f"{t}/{name}.crt", key=f"{t}/{name}.key", ca=f"{t}/ca.crt",
                    client_cert=f"{t}/{client}.crt", client_key=f"{t}/{client}.key",
                    extra=[f"tls-dh-params-file {t}/redis.dh"])
    if case == "two-roots":
        pki.root("rootA")
        pki.root("rootB")
        cert, key = pki.sign("srv", "rootA", ext=SERVER_EXT + SAN)
        ccert, ckey = pki.sign("cli", "rootB", ext=CLIENT_EXT)
        ca = pki.bundle("cas.crt", "rootA", "rootB")
        return dict(cert=cert, key=key, ca=ca, client_cert=ccert, client_key=ckey, extra=[])
    pki.root("ca")
    signer = "ca"
    ca = pki.p("ca.crt")
    if case == "chain":
        pki.sign("inter", "ca", ext=INTERMEDIATE_EXT)
        signer = "inter"
        ca = pki.bundle("chain.crt", "inter", "ca")
    if case == "v1":
        cert, key = pki.sign("srv", signer, cn="localhost")
        ccert, ckey = pki.sign("cli", signer)
        assert "Version: 1 (0x0)" in ossl(d, "x509", "-noout", "-text", "-in", cert)
    elif case == "no-san":
        cert, key = pki.sign("srv", signer, ext=SERVER_EXT, cn="localhost")
        ccert, ckey = pki.sign("cli", signer, ext=CLIENT_EXT)
        text = ossl(d, "x509", "-noout", "-text", "-in", cert)
        assert "Version: 3" in text and "Subject Alternative Name" not in text
    else:
        kind = {"pkcs1": "pkcs1", "pkcs8": "pkcs8", "ec": "ec", "chain": "pkcs8"}[case]
        cert, key = pki.sign("srv", signer, key_kind=kind, ext=SERVER_EXT + SAN)
        ccert, ckey = pki.sign("cli", signer, key_kind=kind, ext=CLIENT_EXT)
    return dict(cert=cert, key=key, ca=ca, client_cert=ccert, client_key=ckey, extra=[])


CASES = ["v1", "no-san", "chain", "two-roots", "pkcs1", "pkcs8", "ec", "gen-test-certs", "gen-test-certs-generic"]


@pytest.fixture(scope="module")
def material(tmp_path_factory):
    need(OPENSSL, "openssl")
    made = {}
    POOL_DIR.append(str(tmp_path_factory.mktemp("tls-keys")))

    def get(case):
        if case not in made:
            made[case] = make_case(case, tmp_path_factory.mktemp(f"tls-{case}"))
        return made[case]
    return get


def redis_cli_attempt(port, files, with_cert):
    args = [REDIS_CLI, "--tls", "--cacert", files["ca"], "-h", "127.0.0.1", "-p", str(port),
            "--user", "app", "--pass", "apppass", "--no-auth-warning"]
    if with_cert:
        args += ["--cert", files["client_cert"], "--key", files["client_key"]]
    set_ = subprocess.run(args + ["SET", "app:k", "tls-v"], capture_output=True, text=True, timeout=20)
    get = subprocess.run(args + ["GET", "app:k"], capture_output=True, text=True, timeout=20)
    who = subprocess.run(args + ["ACL", "WHOAMI"], capture_output=True, text=True, timeout=20)
    if (set_.stdout, get.stdout, who.stdout) == ("OK\n", "tls-v\n", "app\n"):
        return "ok"
    return f"fail {set_.returncode} {set_.stdout.strip()} {set_.stderr.strip()}"


def redis_py_attempt(port, files, with_cert):
    kw = dict(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=files["ca"], ssl_check_hostname=False,
              username="app", password="apppass", socket_timeout=2, socket_connect_timeout=2,
              retry=Retry(NoBackoff(), 0))  # a refused handshake is an outcome, not a blip
    if with_cert:
        kw.update(ssl_certfile=files["client_cert"], ssl_keyfile=files["client_key"])
    r = redis.Redis(**kw)
    try:
        assert r.set("app:k", "tls-v") is True
        assert r.get("app:k") == b"tls-v"
        assert r.acl_whoami() == "app"
        return "ok"
    except (redis.exceptions.ConnectionError, redis.exceptions.ResponseError, OSError) as e:
        return f"fail {type(e).__name__}: {e}"
    finally:
        r.close()


def ioredis_attempts(attempts, files):
    """All (server, port, with_cert) attempts in one Node process."""
    batch = []
    for _, port, with_cert in attempts:
        o = {"port": port, "ca": files["ca"], "user": "app", "pass": "apppass"}
        if with_cert:
            o.update(cert=files["client_cert"], key=files["client_key"])
        batch.append(o)
    out = subprocess.run([NODE, os.path.join(HERE, "..", "node", "tls.mjs"), json.dumps(batch)],
                         env=dict(os.environ, LAUNCHER_NODE_DIR=NODE_DIR),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == len(attempts), out.stdout
    return ["ok" if line == "ok app tls-v" else line for line in lines]


def listening_tcp_ports(pid):
    """TCP ports the process listens on (its sockets' inodes matched in /proc/net/tcp*)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for row in f.readlines()[1:]:
                cols = row.split()
                if cols[3] == "0A" and cols[9] in inodes:
                    ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


def start_tls_server(server, case, mode, files, tmp_path, started):
    port = free_port()
    conf = tmp_path / f"{server}-{case}-{mode}.conf"
    conf.write_text("\n".join([
        "port 0",
        "bind 127.0.0.1",
        f"tls-port {port}",
        f"tls-cert-file {files['cert']}",
        f"tls-key-file {files['key']}",
        f"tls-ca-cert-file {files['ca']}",
        f"tls-auth-clients {mode}",
        'save ""',
        "user app on >apppass ~app:* +@all",
        *files["extra"],
    ]) + "\n")
    s = start_server(server, str(conf), cwd=str(tmp_path))
    started.append(s)

    def up():
        if s.proc.poll() is not None:
            out, err = s.proc.communicate()
            raise AssertionError(f"{server} exited with {s.proc.returncode} on {case}/{mode}:\n"
                                 f"stdout: {out.decode(errors='replace')}\nstderr: {err.decode(errors='replace')}")
        return port_open(port)
    wait_until(up, what=f"{server} tls-port {port}")
    # `port 0` turns the plain TCP listener off: the TLS port is the only one.
    assert listening_tcp_ports(s.proc.pid) == {port}, f"{server} listens on {listening_tcp_ports(s.proc.pid)}"
    return s, port


@pytest.mark.parametrize("mode", ["yes", "optional"])
@pytest.mark.parametrize("case", CASES)
def test_tls_matrix(case, mode, material, tmp_path, started):
    need(REDIS_CLI, "redis-cli")
    need(NODE and os.path.isdir(os.path.join(NODE_DIR, "node_modules")), "node and ioredis (LAUNCHER_NODE_DIR)")
    files = material(case)
    servers = {name: start_tls_server(name, case, mode, files, tmp_path, started) for name in SERVER_NAMES}
    attempts = [(name, port, with_cert) for name, (_, port) in servers.items() for with_cert in (True, False)]
    outcomes = {}
    for (name, port, with_cert), node in zip(attempts, ioredis_attempts(attempts, files)):
        cert = "with" if with_cert else "without"
        outcomes[(name, f"redis-cli {cert} client cert")] = redis_cli_attempt(port, files, with_cert)
        outcomes[(name, f"redis-py {cert} client cert")] = redis_py_attempt(port, files, with_cert)
        outcomes[(name, f"ioredis {cert} client cert")] = node
    for name, (s, _) in servers.items():
        assert s.stop() == 0, f"{name} exit code"
    # What Redis documents, and so the same for both servers: under `yes` no client
    # certificate, no connection; otherwise the round trip as the ACL user.
    for name in servers:
        got = {k: v for (n, k), v in outcomes.items() if n == name}
        expected = {k: ("fail" if mode == "yes" and "without" in k else "ok") for k in got}
        simple = {k: ("ok" if v == "ok" else "fail") for k, v in got.items()}
        assert simple == expected, f"{name} on {case}/{mode}: {json.dumps(got, indent=1)}"
