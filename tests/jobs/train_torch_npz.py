#!/usr/bin/env python3
"""A small PyTorch training job over an NPZ dataset (DLIO's layout: each file
holds `x` of shape (d, d, samples) and `y`). Nothing in it knows about
dlio-stall: it is the kind of script the tool must measure unmodified.

usage: train_torch_npz.py DATA_DIR [--batch B] [--workers N] [--epochs E]
                          [--steps S] [--compute-ms MS] [--busy] [--hidden H]
                          [--device cpu|cuda]
"""
import argparse
import glob
import os
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class NpzDataset(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(os.path.join(root, "**", "*.npz"), recursive=True))
        if not self.files:
            raise SystemExit("no .npz files under %s" % root)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with np.load(self.files[i]) as z:
            x = z["x"]
        # First sample of the file, as float.
        return torch.from_numpy(np.ascontiguousarray(x[..., 0], dtype=np.float32)), i % 10


class Net(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(16)
        self.mlp = nn.Sequential(nn.Flatten(), nn.Linear(256, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    def forward(self, x):
        return self.mlp(self.pool(x.unsqueeze(1)))


def accelerator(ms, busy):
    """Stands in for the device's time per step (DLIO's computation_time)."""
    if ms <= 0:
        return
    if busy:
        end = time.perf_counter() + ms / 1e3
        while time.perf_counter() < end:
            pass
    else:
        time.sleep(ms / 1e3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: no limit)")
    ap.add_argument("--compute-ms", type=float, default=0)
    ap.add_argument("--busy", action="store_true", help="spin instead of sleeping")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--device", default="cpu", help="where the model trains (cpu, cuda)")
    a = ap.parse_args()

    torch.manual_seed(0)
    loader = DataLoader(NpzDataset(a.data), batch_size=a.batch, shuffle=True,
                        num_workers=a.workers, drop_last=True)
    dev = torch.device(a.device)
    model = Net(a.hidden).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    step = 0
    t0 = time.time()
    for epoch in range(a.epochs):
        for x, y in loader:
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            opt.zero_grad()
            loss = loss_fn(model(x / 255.0), y)
            loss.backward()
            opt.step()
            accelerator(a.compute_ms, a.busy)
            step += 1
            if a.steps and step >= a.steps:
                break
        if a.steps and step >= a.steps:
            break
    print("trained %d steps in %.2f s, loss %.4f" % (step, time.time() - t0, loss.item()))


if __name__ == "__main__":
    main()
