"""The S3 endpoint under bad or heavy input: 10,000 connections opened and
held (libmicrohttpd polls, so descriptors past 1024 work), slowloris
(clients trickling headers; silent ones closed after --idle-timeout),
huge headers, unknown operations, ranges past the end, max-keys=0 (a page
that is not truncated, so paginators stop). Through all of it the service
keeps answering, and it exits cleanly on SIGTERM.

Plain sockets and urllib: no client library needed."""
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # tests/: dltest
import dltest  # noqa: E402
from test_s3 import start_server, stop_server  # noqa: E402

HELD = 10000


def raise_nofile(want):
    """Raise this process's descriptor limit (root may raise the hard one);
    the server started afterwards inherits it. The limit reached."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for lim in ((want, max(want, hard)), (min(want, hard), hard)):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, lim)
            return lim[0]
        except (ValueError, OSError):
            continue
    return soft


class Base(unittest.TestCase):
    IDLE = 60

    @classmethod
    def setUpClass(cls):
        cls.nofile = raise_nofile(2 * HELD + 2000)
        cls.tmp = tempfile.mkdtemp(prefix="dliofs-s3r-")
        os.makedirs(os.path.join(cls.tmp, "back"))
        with open(os.path.join(cls.tmp, "back", "f.bin"), "wb") as f:
            f.write(b"0123456789")
        cfg = dltest.write_config(cls.tmp, "seed: 2\ndatasets:\n"
                                  "  - {name: dset, format: npy, files: 30, sample_size: 500}\n"
                                  "backing:\n  - {path: %s, at: back}\n"
                                  % os.path.join(cls.tmp, "back"))
        cls.proc, cls.port = start_server(cfg, ["--idle-timeout", str(cls.IDLE)])
        cls.base = "http://127.0.0.1:%d" % cls.port

    @classmethod
    def tearDownClass(cls):
        rc, err = stop_server(cls.proc)
        subprocess.run(["rm", "-rf", cls.tmp])
        assert rc == 0 and "runtime error" not in err and "Sanitizer" not in err, \
            "dliofs s3 serve exited %d on SIGTERM: %s" % (rc, err)

    def get(self, path, headers=None, timeout=20):
        req = urllib.request.Request(self.base + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def assert_serving(self):
        st, body = self.get("/dset?list-type=2&max-keys=2")
        self.assertEqual(st, 200)
        self.assertIn(b"<KeyCount>2</KeyCount>", body)
        self.assertIsNone(self.proc.poll())

    def raw(self, data, timeout=10):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        try:
            s.sendall(data)
        except OSError:
            pass  # the server may close before it has read everything
        out = b""
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                out += b
        except (ConnectionResetError, socket.timeout):
            pass
        s.close()
        return out


class S3RobustTest(Base):
    def test_ten_thousand_connections(self):
        dltest.require(self.nofile >= HELD + 1000,
                       "RLIMIT_NOFILE %d: %d connections need more" % (self.nofile, HELD))
        socks = []
        try:
            for i in range(HELD):
                s = socket.socket()
                s.settimeout(30)
                s.connect(("127.0.0.1", self.port))
                if i % 2:
                    s.sendall(b"GET /dset HTTP/1.1\r\nHost: x\r\n")  # half a request
                socks.append(s)
            # Every one of them is open (none refused, none closed)...
            time.sleep(0.5)
            self.assertEqual(len(socks), HELD)
            # ...and the service answers beside them, with descriptors past 1024.
            t0 = time.time()
            for _ in range(5):
                self.assert_serving()
            self.assertLess(time.time() - t0, 20)
            # Held connections, early and late ones, finish their requests
            # and are answered: none was dropped for being past a limit.
            for i in list(range(1, HELD, 1000)) + [HELD - 1]:
                socks[i].sendall(b"\r\n")
                got = socks[i].recv(100)
                self.assertTrue(got.startswith(b"HTTP/1.1 200"), (i, got))
        finally:
            for s in socks:
                s.close()
        self.assert_serving()

    def test_huge_headers(self):
        cases = [b"GET /dset HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n",
                 b"GET /dset HTTP/1.1\r\nHost: x\r\n" +
                 b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 100) for i in range(2000)) + b"\r\n",
                 b"GET /" + b"k" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"]
        for data in cases:
            out = self.raw(data)
            # An error status, or the connection closed: never a crash.
            self.assertTrue(out == b"" or out.split(b" ")[1] in (b"400", b"413", b"414", b"431"),
                            out[:200])
            self.assert_serving()

    def test_unknown_operations_and_ranges(self):
        for path in ("/dset?tagging", "/dset?acl", "/dset/train/img_00_of_30.npy?torrent",
                     "/back?versions", "/dset?uploads"):
            st, body = self.get(path)
            self.assertEqual(st, 501, path)
            self.assertIn(b"<Code>NotImplemented</Code>", body)
        for method in (b"OPTIONS", b"PATCH", b"BREW"):
            out = self.raw(method + b" /dset HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            self.assertTrue(out.startswith(b"HTTP/1.1 501") or out.startswith(b"HTTP/1.1 400"),
                            out[:100])
        key = "/dset/train/img_00_of_30.npy"
        st, body = self.get(key)
        self.assertEqual(st, 200)
        size = len(body)
        for path, rng in ((key, "bytes=%d-" % size), (key, "bytes=%d-%d" % (size + 5, size + 9)),
                          ("/back/f.bin", "bytes=10-"), ("/back/f.bin", "bytes=99-100")):
            st, body = self.get(path, {"Range": rng})
            self.assertEqual(st, 416, (path, rng))
            self.assertIn(b"<Code>InvalidRange</Code>", body)
        st, body = self.get("/back/f.bin", {"Range": "bytes=8-20"})
        self.assertEqual((st, body), (206, b"89"))
        self.assert_serving()

    def test_max_keys_zero(self):
        # A page of no keys is not truncated: a paginator asking again with
        # its token would otherwise loop forever.
        for path in ("/dset?list-type=2&max-keys=0", "/dset?max-keys=0",
                     "/back?list-type=2&max-keys=0", "/back?max-keys=0"):
            st, body = self.get(path)
            self.assertEqual(st, 200, path)
            self.assertIn(b"<IsTruncated>false</IsTruncated>", body, path)
            self.assertNotIn(b"<Contents>", body)
            self.assertNotIn(b"NextContinuationToken", body)


class S3SlowlorisTest(Base):
    IDLE = 3

    def test_slowloris(self):
        stop = threading.Event()
        socks = []

        def trickle(s):
            # One header byte every half second, never finishing.
            line = b"GET /dset HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000
            for ch in line:
                if stop.is_set():
                    return
                try:
                    s.send(bytes([ch]))
                except OSError:
                    return
                time.sleep(0.5)
        threads = []
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            socks.append(s)
            t = threading.Thread(target=trickle, args=(s,), daemon=True)
            t.start()
            threads.append(t)
        try:
            t0 = time.time()
            while time.time() - t0 < 4:
                self.assert_serving()
                time.sleep(0.2)
            # A connection gone silent mid-request is closed (--idle-timeout 3).
            silent = socket.create_connection(("127.0.0.1", self.port), timeout=15)
            silent.sendall(b"GET /dset HTTP/1.1\r\nHost: x\r\n")
            t0 = time.time()
            try:
                got = silent.recv(100)
            except ConnectionResetError:
                got = b""
            self.assertEqual(got, b"")
            self.assertLess(time.time() - t0, 10)
            silent.close()
        finally:
            stop.set()
            for s in socks:
                s.close()
            for t in threads:
                t.join(timeout=5)
        self.assert_serving()


if __name__ == "__main__":
    unittest.main()
