"""A sink keeps what a reader must parse (fs/sink_keep.c): the first 4 KiB
of a file, write requests under 64 KiB, the first 512 bytes of a larger
request that does not continue a full-size one; the bulk reads back
regenerated. Checked with the real readers, as MLPerf Storage v3's kv_cache
workload and a torch checkpoint use them: np.save + fsync, then
posix_fadvise(DONTNEED), the mount's cache dropped, np.load; torch.save
(to a path, C++'s ofstream, and to a Python file object), torch.load.
Before, a sink regenerated every byte and both loads failed."""
import json
import os
import time
import subprocess
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

try:
    import numpy as np
except ImportError:  # pragma: no cover - required below
    np = None
try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def stats(mnt):
    with open(os.path.join(mnt, ".dliofs", "stats.json")) as f:
        return json.load(f)["backing"]["ckpt"]


class SinkKeep(dltest.MountedTestCase):
    GEN = False
    CONFIG = ("seed: 5\n"
              "datasets: []\n"
              "backing:\n"
              "  - {at: ckpt, sink: true}\n")

    def m(self, *p):
        return os.path.join(self.mnt, "ckpt", *p)

    def drop(self, path):
        """Forget the file's pages and the mount's cache: the read-back
        comes from the sink, not from memory."""
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        r = subprocess.run([dltest.DLIOFS, "cache", "drop", self.mnt], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_npy_kv_cache_entries(self):
        dltest.require(np is not None, "numpy not importable")
        os.makedirs(self.m("kv"), exist_ok=True)
        rng = np.random.default_rng(1)
        arrays = {
            "layer0_k.npy": rng.standard_normal((4, 256, 1024)).astype(np.float16),  # 2 MiB
            "layer0_v.npy": rng.standard_normal((3, 333, 517)).astype(np.float32),  # odd tail
            "tiny.npy": np.arange(10, dtype=np.int64),
            "fortran.npy": np.asfortranarray(rng.standard_normal((300, 700))),
        }
        s0 = stats(self.mnt)
        for name, a in arrays.items():
            with open(self.m("kv", name), "wb") as f:  # as kv_cache.py writes an entry
                np.save(f, a, allow_pickle=False)
                f.flush()
                os.fsync(f.fileno())
        for name in arrays:
            self.drop(self.m("kv", name))
        s1 = stats(self.mnt)
        for name, a in arrays.items():
            b = np.load(self.m("kv", name))
            self.assertEqual(b.shape, a.shape, name)
            self.assertEqual(b.dtype, a.dtype, name)
            self.assertEqual(b.flags.f_contiguous and not b.flags.c_contiguous,
                             a.flags.f_contiguous and not a.flags.c_contiguous, name)
            if a.nbytes > (1 << 20):
                # The bulk is the generator's: a sink keeps no data.
                self.assertNotEqual(a.tobytes(), b.tobytes(), name)
        tiny = np.load(self.m("kv", "tiny.npy"))  # one small write: kept whole
        self.assertTrue(np.array_equal(tiny, arrays["tiny.npy"]))
        # Kept: headers and small pieces, a few KiB a file, not the 7 MB written.
        kept = s1["kept_bytes"] - s0["kept_bytes"]
        self.assertGreater(kept, 4 * 128)
        self.assertLess(kept, 4 * (4096 + (64 << 10)), kept)
        self.assertEqual(s1["unkept_bytes"], s0["unkept_bytes"])

    def _state(self):
        g = torch.Generator().manual_seed(2)
        return {
            "model": {
                "embed.weight": torch.randn(1024, 1024, generator=g),  # 4 MiB: full pieces
                "layer.0.w": torch.randn(300, 517, generator=g, dtype=torch.float64),
                "layer.0.b": torch.zeros(517, dtype=torch.bfloat16),
                "steps": torch.tensor([7, 8, 9], dtype=torch.int64),
            },
            "optimizer": {"state": {i: {"exp_avg": torch.ones(64, 64) * i} for i in range(20)},
                          "lr": 3e-4},
            "epoch": 3,
            "name": "unet3d",
        }

    def _check(self, a, b, where):
        if isinstance(a, dict):
            self.assertEqual(sorted(map(str, a)), sorted(map(str, b)), where)
            for k in a:
                self._check(a[k], b[k], "%s.%s" % (where, k))
        elif torch.is_tensor(a):
            self.assertEqual(tuple(b.shape), tuple(a.shape), where)
            self.assertEqual(b.dtype, a.dtype, where)
        else:
            self.assertEqual(a, b, where)

    def test_torch_save_load(self):
        dltest.require(torch is not None, "torch not importable")
        os.makedirs(self.m("step_3"), exist_ok=True)
        sd = self._state()
        path_ck = self.m("step_3", "by_path.pt")
        file_ck = self.m("step_3", "by_file.pt")
        torch.save(sd, path_ck)  # C++ ofstream: headers glued before tensor bytes
        with open(file_ck, "wb") as f:  # Python's buffered writer: headers alone
            torch.save(sd, f)
            f.flush()
            os.fsync(f.fileno())
        for p in (path_ck, file_ck):
            self.drop(p)
            got = torch.load(p, map_location="cpu", weights_only=False)
            self._check(sd, got, os.path.basename(p))
            self.assertFalse(torch.equal(got["model"]["embed.weight"],
                                         sd["model"]["embed.weight"]),
                             "a sink keeps no bulk")
        st = stats(self.mnt)
        self.assertLess(st["kept_bytes"], 2 * (1 << 20), st)

    def test_zip_record_after_a_full_piece(self):
        """A zip record glued before its data (C++'s ofstream in
        torch.save) that starts right where a full-size request of the
        write before ended: the kernel's next piece of a large write looks
        the same, so its header was not kept when the tensor before it
        came from a page-aligned buffer (its last piece full-size): one CI
        run in many lost `data/1`'s local header that way."""
        import mmap
        p = self.m("aligned.pt")
        rec0 = b"PK\x03\x04" + b"\x00" * 26 + b"hdr0" + b"x" * 96
        bulk = mmap.mmap(-1, 1 << 20)  # page-aligned: one full-size request
        bulk.write(os.urandom(1 << 20))
        rec1 = b"PK\x03\x04" + b"\x01" * 26 + b"data/1" + b"y" * 90
        glued = rec1 + os.urandom(128 << 10)  # larger than a small request
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            self.assertEqual(os.write(fd, rec0), len(rec0))
            # Pad to a page so that the bulk starts page-aligned in the file too.
            pad = 4096 - len(rec0)
            self.assertEqual(os.write(fd, b"z" * pad), pad)
            self.assertEqual(os.write(fd, bulk), 1 << 20)
            self.assertEqual(os.write(fd, glued), len(glued))
        finally:
            os.close(fd)
        self.drop(p)
        with open(p, "rb") as f:
            f.seek(4096 + (1 << 20))
            got = f.read(len(rec1))
        self.assertEqual(got, rec1, "the record's header came back regenerated")

    def test_caps_and_truncate(self):
        """A file keeps at most 1 MiB: small writes past it read back as
        generated bytes and are counted; truncating and unlinking give the
        memory back."""
        path = self.m("many_small.bin")
        s0 = stats(self.mnt)
        piece = bytes(range(256)) * 64  # 16 KiB, a small write each
        with open(path, "wb", buffering=0) as f:
            for _ in range(80):  # 1.25 MiB
                f.write(piece)
        s1 = stats(self.mnt)
        self.assertEqual(s1["kept_bytes"] - s0["kept_bytes"], 1 << 20)
        self.assertEqual(s1["unkept_bytes"] - s0["unkept_bytes"], 16 * len(piece))
        self.drop(path)
        with open(path, "rb") as f:
            kept = f.read(1 << 20)
            rest = f.read()
        self.assertEqual(kept, piece * 64)
        self.assertEqual(len(rest), 16 * len(piece))
        self.assertNotEqual(rest, piece * 16)
        os.truncate(path, 100 << 10)
        s2 = stats(self.mnt)
        self.assertEqual(s2["kept_bytes"] - s0["kept_bytes"], 100 << 10)
        with open(path, "r+b", buffering=0) as f:  # a larger write over kept bytes
            f.seek(8192)
            f.write(b"\xee" * (512 << 10))
        with open(path, "rb") as f:
            head = f.read(8192 + 512)
            f.seek(8192 + 4096)
            mid = f.read(4096)
        self.assertEqual(head[:8192], (piece * 1)[:8192])
        self.assertEqual(head[8192:], b"\xee" * 512)  # the glue: its first bytes
        self.assertNotEqual(mid, b"\xee" * 4096)  # and not its bulk, nor the old bytes
        self.assertNotEqual(mid, (piece * 2)[12288:16384])
        os.unlink(path)
        # The kernel sends a file's RELEASE after close() returns, so the last
        # handle may still hold the unlinked file's kept bytes for a moment:
        # they must be freed once it goes, not necessarily at unlink's return.
        deadline = time.monotonic() + 5
        while True:
            s3 = stats(self.mnt)
            if s3["kept_bytes"] == s0["kept_bytes"] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(s3["kept_bytes"], s0["kept_bytes"])


if __name__ == "__main__":
    dltest.main()
