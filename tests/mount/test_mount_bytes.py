"""Bytes served by the mount equal dlio-gen's output: whole files, random
ranges, concurrent readers, remounts, `io: direct`; another seed changes the
bytes but not the layout."""
import multiprocessing
import os
import random
import threading
import unittest

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: dltest
import dltest  # noqa: E402

CONFIG = """\
seed: 7
datasets:
  - name: unet
    format: npz
    files: 5
    eval_files: 2
    samples_per_file: 2
    sample_size: {mean: 200000, stdev: 80000, min: 16384, max: 600000}
  - name: arrays
    format: npy
    files: 12
    subfolders: 3
    samples_per_file: 3
    shape: [48, 40]
    dtype: float32
  - name: bert
    format: tfrecord
    files: 4
    eval_files: 1
    samples_per_file: 24
    sample_size: {mean: 24000, stdev: 10000, min: 1000}
  - name: ctr
    format: dlrm
    files: 2
    samples_per_file: 20000
    cardinality: 1000
  - name: blob
    format: raw
    files: 2
    samples_per_file: 3
    sample_size: 3145728
  - name: ibin
    format: indexed_binary
    files: 3
    samples_per_file: 10
    sample_size: 20000
"""

# Datasets whose file sizes do not depend on a size distribution.
FIXED_SIZE = ("arrays/", "ctr/", "blob/", "ibin/")

MiB = 1 << 20


def random_ranges(rng, size, count):
    """(offset, length) pairs of mixed shapes: 1-byte, small, medium, multi-MiB,
    crossing the end of file, at and past the end."""
    out = []
    for _ in range(count):
        kind = rng.randrange(8)
        if kind == 0:
            n = 1
        elif kind in (1, 2):
            n = rng.randint(1, 4096)
        elif kind in (3, 4):
            n = rng.randint(4097, 300000)
        elif kind == 5:
            n = rng.randint(MiB, 8 * MiB)
        else:
            n = rng.randint(1, 200000)
        if kind == 6:          # crosses the end of file
            off = max(0, size - rng.randint(1, min(n, size) if size else 1))
        elif kind == 7:        # at or past the end
            off = size + rng.choice((0, 0, 1, 4096, 10 ** 9))
        else:
            off = rng.randrange(size) if size else 0
        out.append((off, n))
    return out


def drop_cache(fd):
    """Drop the kernel's cached pages of this file so reads reach the daemon."""
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def check_ranges(mnt, ref, rel, ranges, drop=False):
    """Return a list of mismatch descriptions for preads of REL on the mount."""
    bad = []
    fd = os.open(os.path.join(mnt, rel), os.O_RDONLY)
    rfd = os.open(os.path.join(ref, rel), os.O_RDONLY)
    try:
        for off, n in ranges:
            if drop:
                drop_cache(fd)
            got = os.pread(fd, n, off)
            want = os.pread(rfd, n, off)
            if got != want:
                bad.append("%s: pread(%d, %d) gave %d bytes, differs from reference (%d bytes)"
                           % (rel, off, n, len(got), len(want)))
    finally:
        os.close(fd)
        os.close(rfd)
    return bad


def check_whole(mnt, ref, rel, chunk, order):
    """Read REL in CHUNK-sized pieces in ORDER ('fwd', 'rev', 'shuffle');
    compare with the reference; return mismatch descriptions."""
    want = dltest.read_file(os.path.join(ref, rel))
    offs = list(range(0, len(want), chunk))
    if order == "rev":
        offs.reverse()
    elif order == "shuffle":
        random.Random(len(want) ^ chunk).shuffle(offs)
    fd = os.open(os.path.join(mnt, rel), os.O_RDONLY)
    try:
        for off in offs:
            got = os.pread(fd, chunk, off)
            if got != want[off:off + chunk]:
                return ["%s: chunk %d at %d (%s) differs" % (rel, chunk, off, order)]
    finally:
        os.close(fd)
    return []


def worker_job(seed, mnt, ref, rels, sizes):
    """One concurrent reader: a seeded mix of whole-file reads in several
    orders and chunk sizes and random preads, over files in its own order."""
    rng = random.Random(seed)
    order = list(rels)
    rng.shuffle(order)
    bad = []
    for rel in order:
        if rng.random() < 0.5:
            chunk = rng.choice((4096, 3333, 65536, 131072, MiB, 777777))
            bad += check_whole(mnt, ref, rel, chunk, rng.choice(("fwd", "rev", "shuffle")))
        else:
            bad += check_ranges(mnt, ref, rel, random_ranges(rng, sizes[rel], 12),
                                drop=rng.random() < 0.3)
    return bad


def process_main(args):
    return worker_job(*args)


class MountBytes(dltest.MountedTestCase):
    CONFIG = CONFIG

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ref_files, cls.ref_dirs = dltest.tree(cls.ref)

    def test_reference_is_sane(self):
        # Guard against comparing two empty trees.
        self.assertEqual(len(self.ref_files), 7 + 12 + 5 + 2 + 2 + 3 * 3)
        for name in ("unet", "arrays", "bert", "ctr", "blob", "ibin"):
            self.assertTrue(any(p.startswith(name + "/") for p in self.ref_files), name)

    def test_listing_and_sizes(self):
        files, dirs = dltest.tree(self.mnt)
        self.assertEqual(sorted(dirs), sorted(self.ref_dirs))
        self.assertEqual(sorted(files), sorted(self.ref_files))
        for rel, size in files.items():
            self.assertEqual(size, self.ref_files[rel], rel)

    def test_whole_files(self):
        for rel in sorted(self.ref_files):
            with open(os.path.join(self.mnt, rel), "rb") as f:
                got = f.read()
            want = dltest.read_file(os.path.join(self.ref, rel))
            self.assertEqual(len(got), len(want), rel)
            self.assertTrue(got == want, "%s differs from dlio-gen's copy" % rel)

    def test_random_preads(self):
        rng = random.Random(20240611)
        bad = []
        nreads = 0
        for rel in sorted(self.ref_files):
            size = self.ref_files[rel]
            ranges = random_ranges(rng, size, 24)
            ranges += [(0, 1), (max(0, size - 1), 1), (max(0, size - 1), 2), (size, 1)]
            nreads += len(ranges)
            bad += check_ranges(self.mnt, self.ref, rel, ranges, drop=rng.random() < 0.5)
        self.assertEqual(bad, [])
        self.assertGreater(nreads, 1000)

    def test_concurrent_threads(self):
        rels = sorted(self.ref_files)
        results = [None] * 8
        errors = []

        def run(k):
            try:
                # Threads 0-3 read all files; 4-7 share one half, so both
                # "different files" and "the same file at once" happen.
                mine = rels if k < 4 else rels[: len(rels) // 2]
                results[k] = worker_job(1000 + k, self.mnt, self.ref, mine, self.ref_files)
            except Exception as e:  # reported below, not lost in the thread
                errors.append("thread %d: %r" % (k, e))

        threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
            self.assertFalse(t.is_alive(), "reader thread hung")
        self.assertEqual(errors, [])
        self.assertEqual([b for r in results for b in r], [])

        # Eight threads on one shared descriptor, interleaved preads of one file.
        rel = max(rels, key=lambda r: self.ref_files[r])
        fd = os.open(os.path.join(self.mnt, rel), os.O_RDONLY)
        want = dltest.read_file(os.path.join(self.ref, rel))
        shared_bad = []

        def shared(k):
            rng = random.Random(k)
            for off, n in random_ranges(rng, len(want), 30):
                if os.pread(fd, n, off) != want[off:off + n]:
                    shared_bad.append((k, off, n))

        threads = [threading.Thread(target=shared, args=(k,)) for k in range(8)]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
        finally:
            os.close(fd)
        self.assertEqual(shared_bad, [])

    def test_concurrent_processes(self):
        rels = sorted(self.ref_files)
        jobs = [(2000 + k, self.mnt, self.ref, rels if k % 2 == 0 else rels[::3], self.ref_files)
                for k in range(4)]
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(4) as pool:
            results = pool.map_async(process_main, jobs).get(600)
        self.assertEqual([b for r in results for b in r], [])

    def hashes(self, root):
        return {rel: dltest.sha256_file(os.path.join(root, rel)) for rel in sorted(self.ref_files)}

    def test_remount_identical(self):
        ref_h = self.hashes(self.ref)
        with dltest.mounted(self.config) as m1:
            h1 = self.hashes(m1)
        self.assertFalse(dltest.is_mounted(m1))
        with dltest.mounted(self.config) as m2:
            h2 = self.hashes(m2)
        self.assertEqual(h1, h2)
        self.assertEqual(h1, ref_h)

    def test_other_seed(self):
        cfg = dltest.write_config(self.tmp, CONFIG.replace("seed: 7", "seed: 8"), "seed8.yaml")
        with dltest.mounted(cfg) as m:
            files, dirs = dltest.tree(m)
            self.assertEqual(sorted(files), sorted(self.ref_files))
            self.assertEqual(sorted(dirs), sorted(self.ref_dirs))
            same, differ = [], []
            for rel in sorted(files):
                if rel.startswith(FIXED_SIZE):
                    self.assertEqual(files[rel], self.ref_files[rel], rel)
                got = dltest.sha256_file(os.path.join(m, rel))
                want = dltest.sha256_file(os.path.join(self.ref, rel))
                (same if got == want else differ).append(rel)
        # Index companions are arithmetic (offsets, sizes): seed-independent.
        # Every file that carries payload must change with the seed.
        companions = [r for r in files if r.endswith((".off.idx", ".sz.idx"))]
        self.assertEqual(len(companions), 6)
        self.assertEqual(sorted(same), sorted(companions))
        self.assertEqual(len(differ), len(files) - len(companions))

    def test_direct_io(self):
        cfg = dltest.write_config(self.tmp, "io: direct\n" + CONFIG, "direct.yaml")
        with dltest.mounted(cfg) as m:
            files, dirs = dltest.tree(m)
            self.assertEqual(files, self.ref_files)
            self.assertEqual(dirs, self.ref_dirs)
            for rel in sorted(files):
                self.assertEqual(dltest.sha256_file(os.path.join(m, rel), 131072),
                                 dltest.sha256_file(os.path.join(self.ref, rel)), rel)
            rng = random.Random(99)
            bad = []
            for rel in sorted(files):
                bad += check_ranges(m, self.ref, rel, random_ranges(rng, files[rel], 10))
            self.assertEqual(bad, [])
            # Concurrent readers through direct_io too.
            threads, res = [], [None] * 4

            def run(k):
                res[k] = worker_job(3000 + k, m, self.ref, sorted(files), files)

            for k in range(4):
                threads.append(threading.Thread(target=run, args=(k,)))
                threads[-1].start()
            for t in threads:
                t.join(300)
            self.assertEqual([b for r in res if r for b in r], [])
            self.assertTrue(all(r is not None for r in res))


if __name__ == "__main__":
    dltest.main()
