"""dlio-stall's injected hook: times every wait for the next batch of an
unmodified PyTorch or TensorFlow job.

dlio-stall puts the directory holding this file first on PYTHONPATH, so
Python's `site` imports it at startup as `sitecustomize`. It then:

- chains to the sitecustomize that would have run without us (Debian's, a
  virtualenv's, the user's), so the job sees its usual startup;
- registers a meta-path finder that patches, the moment they are imported,
  torch.utils.data.dataloader (_BaseDataLoaderIter.__next__, DataLoader.__iter__)
  and tf.data (OwnedIterator.__next__, DatasetV2.__iter__); nothing is imported
  eagerly, so a job that uses neither pays nothing;
- records per step: start of the wait, its length, the gap since the previous
  wait ended (the job's compute) and the batch size; at exit (atexit) it appends
  them as text lines to $DLIO_STALL_OUT with one O_APPEND write per chunk, so
  processes sharing the file do not interleave inside a line.

Replay mode (DLIO_STALL_MODE=replay): the first DLIO_STALL_REPLAY batches the
real iterators yield are kept in memory; after that every iterator serves them
in a loop, for as many steps as the real one would have (len(loader),
dataset.cardinality(), or DLIO_STALL_EPOCH_STEPS learned from an earlier run),
without touching the real pipeline: DS-Analyzer's compute-only run, no script
change. As the last batch is cached, a PyTorch iterator's worker processes are
ended, so that their prefetching does not compete with the compute measured.

Record lines (times are CLOCK_MONOTONIC nanoseconds, as time.monotonic_ns):
  P pid ppid mode overhead_ns replay_k frameworks argv0
  S pid iter idx start_ns wait_ns gap_ns batch flag     (flag: - real, c filling, r replayed)
  E pid iter n start_ns wait_ns                           (iterator exhausted)
"""
import os
import sys

_OUT = os.environ.get("DLIO_STALL_OUT")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _chain():
    """Run the sitecustomize we shadow, as site.py would have."""
    import importlib.machinery
    import importlib.util
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    try:
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is None or spec.loader is None:
            return
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except Exception as e:  # site.py reports and carries on; so do we
        sys.stderr.write("dlio-stall: error in the chained sitecustomize: %r\n" % (e,))


class _Rec:
    """Per-process step recorder. One stream per process: the gap is measured
    from the end of the previous wait of any wrapped iterator."""
    FLUSH_AT = 1 << 16

    def __init__(self, out):
        self.out = out
        self.reset()
        self.mode = os.environ.get("DLIO_STALL_MODE", "")
        self.replay_k = 0
        if self.mode == "replay":
            try:
                self.replay_k = max(1, int(os.environ.get("DLIO_STALL_REPLAY", "4")))
            except ValueError:
                self.replay_k = 4
        hints = os.environ.get("DLIO_STALL_EPOCH_STEPS", "")
        try:
            self.hints = [None if h in ("", "-") else int(h) for h in hints.split(",")] if hints else []
        except ValueError:
            self.hints = []
        self.cache = []
        self.ri = 0
        self.frameworks = []

    def reset(self):
        self.pid = os.getpid()
        self.buf = []
        self.ends = []
        self.depth = 0
        self.last_end = 0
        self.pend = 0
        self.nsteps = 0
        self.iters = 0
        self.last_batch = None
        self.header_done = False

    def new_iter(self):
        self.iters += 1
        return self.iters

    def limit_for(self, seq, fallback):
        """Steps the seq-th iterator yields (None: unknown)."""
        if 0 < seq <= len(self.hints):
            return self.hints[seq - 1] if self.hints[seq - 1] is not None else -1
        return fallback

    def flush(self, final=False):
        if os.getpid() != self.pid or self.out is None:
            return
        if not self.buf and not self.ends and (self.header_done or not final or not self.nsteps):
            return
        lines = []
        if not self.header_done:
            ovh = _calibrate(self) if final else -1
            argv0 = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "-"
            lines.append("P %d %d %s %d %d %s %s\n" % (
                self.pid, os.getppid(), self.mode or "normal", ovh, self.replay_k,
                ",".join(self.frameworks) or "-", argv0.replace(" ", "_") or "-"))
            self.header_done = final
        pid = self.pid
        lines.extend("S %d %d %d %d %d %d %d %s\n" % ((pid,) + r) for r in self.buf)
        lines.extend("E %d %d %d %d %d\n" % ((pid,) + r) for r in self.ends)
        self.buf = []
        self.ends = []
        data = "".join(lines).encode()
        try:
            fd = os.open(self.out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                while data:
                    n = os.write(fd, data[:1 << 20])
                    data = data[n:]
            finally:
                os.close(fd)
        except OSError as e:
            sys.stderr.write("dlio-stall: cannot write %s: %s\n" % (self.out, e))


def _bsz(b):
    """Leading dimension of the batch's first tensor, or -1."""
    for _ in range(4):
        if isinstance(b, (tuple, list)):
            if not b:
                return -1
            b = b[0]
        elif isinstance(b, dict):
            if not b:
                return -1
            b = next(iter(b.values()))
        else:
            break
    sh = getattr(b, "shape", None)
    try:
        return int(sh[0]) if sh is not None and len(sh) > 0 else -1
    except (TypeError, ValueError, IndexError):
        return -1


def _make_next(orig, rec, eager=None):
    """Wrap an iterator's __next__: time the wait and record it."""
    import time
    clock = time.monotonic_ns

    def __next__(self):
        if rec.depth or (eager is not None and not eager()):
            return orig(self)
        seq = getattr(self, "_dlio_seq", 0)
        if not seq:
            seq = rec.new_iter()
            try:
                self._dlio_seq = seq
            except AttributeError:
                pass
        flag = "-"
        rec.depth = 1
        t0 = clock()
        try:
            if rec.replay_k:
                b, flag = _replay_next(self, orig, rec, seq)
            else:
                b = orig(self)
        except StopIteration:
            t1 = clock()
            rec.depth = 0
            _end(rec, self, seq, t0, t1)
            raise
        finally:
            rec.depth = 0
        t1 = clock()
        _step(rec, seq, self, t0, t1, b, flag)
        return b
    __next__.__wrapped__ = orig
    return __next__


def _step(rec, seq, it, t0, t1, b, flag):
    if rec.pend:
        t0, rec.pend = rec.pend, 0
    gap = t0 - rec.last_end if rec.last_end else -1
    rec.last_end = t1
    idx = getattr(it, "_dlio_n", 0)
    try:
        it._dlio_n = idx + 1
    except AttributeError:
        pass
    rec.last_batch = b
    rec.buf.append((seq, idx, t0, t1 - t0, gap, _bsz(b), flag))
    rec.nsteps += 1
    if len(rec.buf) >= rec.FLUSH_AT:
        rec.flush()


def _end(rec, it, seq, t0, t1):
    if rec.pend:
        t0, rec.pend = rec.pend, 0
    rec.ends.append((seq, getattr(it, "_dlio_n", 0), t0, t1 - t0))
    rec.last_end = t1


def _stop_pipeline(it):
    """The replay never asks the real iterator again: end its DataLoader
    worker processes now, so that they stop prefetching (their decode would
    take the cores from the job's compute, which the compute-only run
    measures). Done as the last cached batch arrives: the wait for a worker
    to finish the batch in hand lands in a step the warm-up leaves out.
    Ending them, not SIGSTOP/SIGCONT: nothing has to resume, and no stopped
    process outlives a job that dies mid-replay. tf.data has no such handle:
    its bounded prefetch buffer fills and then waits."""
    shut = getattr(it, "_shutdown_workers", None)
    if shut is None or getattr(it, "_dlio_stopped", False):
        return
    try:
        it._dlio_stopped = True
        shut()
    except Exception as e:
        sys.stderr.write("dlio-stall: could not end the DataLoader workers: %r\n" % (e,))


def _replay_lim(it, rec, seq):
    """Steps the iterator yields in the replay, None: unknown (no replay)."""
    lim = getattr(it, "_dlio_lim", None)
    if lim is None:
        lim = rec.limit_for(seq, None)
        if lim is None:
            try:
                lim = len(it)
            except Exception:
                lim = None
        try:
            it._dlio_lim = lim if lim is not None else -2
        except AttributeError:
            pass
    return None if lim is None or lim == -2 else lim


def _replay_next(it, orig, rec, seq):
    """Fill the cache from the real iterator, then serve it in a loop."""
    if len(rec.cache) < rec.replay_k:
        b = orig(it)
        rec.cache.append(b)
        if len(rec.cache) == rec.replay_k and _replay_lim(it, rec, seq) is not None:
            _stop_pipeline(it)
        return b, "c"
    lim = _replay_lim(it, rec, seq)
    if lim is None:
        return orig(it), "-"  # length unknown: replaying could loop for ever
    if 0 <= lim <= getattr(it, "_dlio_n", 0):
        raise StopIteration
    b = rec.cache[rec.ri % len(rec.cache)]
    rec.ri += 1
    return b, "r"


class _ReplayIter:
    """Stands in for a real iterator once the replay cache is full: the real
    pipeline (worker processes, tf.data threads) is never started."""

    def __init__(self, lim, seq):
        self._dlio_lim = lim
        self._dlio_seq = seq
        self._dlio_n = 0

    def __iter__(self):
        return self

    def __len__(self):
        return self._dlio_lim if self._dlio_lim >= 0 else 0

    def next(self):
        return self.__next__()


def _replay_next_plain(self):
    rec = _REC
    if 0 <= self._dlio_lim <= self._dlio_n:
        raise StopIteration
    b = rec.cache[rec.ri % len(rec.cache)]
    rec.ri += 1
    return b


def _make_iter(orig, rec, length, eager=None):
    """Wrap __iter__ (DataLoader, tf.data.Dataset): the time it takes (worker
    start-up, pipeline construction) belongs to the next step's wait."""
    import time
    clock = time.monotonic_ns

    def __iter__(self):
        if rec.depth or (eager is not None and not eager()):
            return orig(self)
        t0 = clock()
        rec.depth = 1
        try:
            seq = rec.iters + 1
            lim = None
            if rec.replay_k:
                lim = rec.limit_for(seq, None)
                if lim is None:
                    try:
                        lim = length(self)
                    except Exception:
                        lim = None
            if lim is not None and len(rec.cache) >= rec.replay_k:
                rec.new_iter()
                it = _ReplayIter(lim, seq)
                if not rec.pend:
                    rec.pend = t0
                return it
            it = orig(self)
            # A new pass even when the loader hands back its persistent iterator.
            try:
                it._dlio_seq = rec.new_iter()
                it._dlio_n = 0
                it._dlio_lim = lim
            except AttributeError:
                pass
        finally:
            rec.depth = 0
        if not rec.pend:
            rec.pend = t0
        return it
    __iter__.__wrapped__ = orig
    return __iter__


def _calibrate(rec, n=20000):
    """Per-step cost of the wrapper: a wrapped no-op iterator (returning the
    job's last real batch, so batch-size detection is included) against the
    same iterator unwrapped. Best of 5 to shrug off scheduler noise."""
    if os.environ.get("DLIO_STALL_CALIBRATE", "1") == "0":
        return -1
    import time
    batch = rec.last_batch

    class Plain:
        def __next__(self):
            return batch

    scratch = _Rec(None)
    scratch.replay_k = 0
    scratch.FLUSH_AT = n + 1

    class Wrapped:
        pass
    Wrapped.__next__ = _make_next(Plain.__next__, scratch)
    best = None
    for _ in range(5):
        p, w = Plain(), Wrapped()
        t0 = time.perf_counter_ns()
        for _ in range(n):
            p.__next__()
        t1 = time.perf_counter_ns()
        for _ in range(n):
            w.__next__()
        t2 = time.perf_counter_ns()
        scratch.buf = []
        d = ((t2 - t1) - (t1 - t0)) / n
        best = d if best is None else min(best, d)
    return max(0, int(best))


# ---- patching on import ----

def _patch_torch(mod):
    rec = _REC
    it_cls = getattr(mod, "_BaseDataLoaderIter", None)
    dl_cls = getattr(mod, "DataLoader", None)
    if it_cls is None or getattr(it_cls.__next__, "__wrapped__", None):
        return
    it_cls.__next__ = _make_next(it_cls.__next__, rec)
    if dl_cls is not None:
        dl_cls.__iter__ = _make_iter(dl_cls.__iter__, rec, len)
    rec.frameworks.append("torch")


def _tf_eager():
    from tensorflow.python.eager import context
    return context.executing_eagerly


def _patch_tf_iterator(mod):
    rec = _REC
    cls = getattr(mod, "OwnedIterator", None)
    if cls is None or getattr(cls.__next__, "__wrapped__", None):
        return
    cls.__next__ = _make_next(cls.__next__, rec, _tf_eager())
    if "tensorflow" not in rec.frameworks:
        rec.frameworks.append("tensorflow")


def _tf_len(ds):
    n = int(ds.cardinality())
    return n if n >= 0 else None


def _patch_tf_dataset(mod):
    rec = _REC
    cls = getattr(mod, "DatasetV2", None)
    if cls is None or getattr(cls.__iter__, "__wrapped__", None):
        return
    cls.__iter__ = _make_iter(cls.__iter__, rec, _tf_len, _tf_eager())


_TARGETS = {
    "torch.utils.data.dataloader": _patch_torch,
    "tensorflow.python.data.ops.iterator_ops": _patch_tf_iterator,
    "tensorflow.python.data.ops.dataset_ops": _patch_tf_dataset,
}


class _Loader:
    """Runs the real loader, then patches the fresh module."""

    def __init__(self, inner, patch):
        self._inner = inner
        self._patch = patch

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        try:
            self._patch(module)
        except Exception as e:
            sys.stderr.write("dlio-stall: could not patch %s: %r\n" % (module.__name__, e))

    def __getattr__(self, name):
        return getattr(self._inner, name)


class _Finder:
    def find_spec(self, name, path=None, target=None):
        patch = _TARGETS.get(name)
        if patch is None:
            return None
        for f in sys.meta_path:
            if f is self or not hasattr(f, "find_spec"):
                continue
            spec = f.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, patch)
        return spec

    def invalidate_caches(self):
        pass


_REC = None


def _install():
    global _REC
    _REC = _Rec(_OUT)
    _ReplayIter.__next__ = _make_next(_replay_next_plain, _REC)
    sys.meta_path.insert(0, _Finder())
    import atexit
    atexit.register(_REC.flush, True)
    os.register_at_fork(after_in_child=_REC.reset)


if _OUT:
    _install()
_chain()
if _OUT:
    for _name, _patch in _TARGETS.items():
        if _name in sys.modules:
            _patch(sys.modules[_name])
