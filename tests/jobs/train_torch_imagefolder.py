#!/usr/bin/env python3
"""A small PyTorch image-classification job: torchvision ImageFolder over JPEG
files (PIL decode), the usual resize/crop/flip/normalize transforms, a tiny
CNN. Unmodified as far as dlio-stall is concerned.

usage: train_torch_imagefolder.py DATA_DIR [--batch B] [--workers N]
              [--epochs E] [--steps S] [--size PX] [--compute-ms MS] [--busy]
"""
import argparse
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def accelerator(ms, busy):
    """Stands in for the device's time per step."""
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
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--size", type=int, default=64, help="training crop size")
    ap.add_argument("--compute-ms", type=float, default=0)
    ap.add_argument("--busy", action="store_true")
    a = ap.parse_args()

    torch.manual_seed(0)
    tf = transforms.Compose([
        transforms.RandomResizedCrop(a.size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    ds = datasets.ImageFolder(a.data, transform=tf)
    loader = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers, drop_last=True)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, len(ds.classes)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    step = 0
    t0 = time.time()
    for epoch in range(a.epochs):
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
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
