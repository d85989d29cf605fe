#!/usr/bin/env python3
"""Train a small model on npz samples read through s3torchconnector from an
S3 endpoint (bucket `npzset`, prefix train/): an unmodified training script
of the kind dlio-stall and dlio-whatif measure (tests/tools/s3/).

usage: train_s3_npz.py ENDPOINT OUT   (OUT: each key's sample sum, then steps)
"""
import io, sys
import numpy as np
import torch
from s3torchconnector import S3MapDataset, S3ClientConfig

endpoint, out = sys.argv[1], sys.argv[2]

def decode(obj):
    z = np.load(io.BytesIO(obj.read()))
    n = len(z["y"])  # DLIO's npz: samples on the last axis of x
    x = np.moveaxis(z["x"], -1, 0).reshape(n, -1).astype(np.float32)
    return obj.key, torch.from_numpy(x), torch.from_numpy(z["y"].astype(np.int64).reshape(-1))

ds = S3MapDataset.from_prefix("s3://npzset/train/", region="us-east-1", endpoint=endpoint,
                              transform=decode, s3client_config=S3ClientConfig(force_path_style=True))
loader = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True, num_workers=2,
                                     collate_fn=lambda b: b)
torch.manual_seed(0)
model, seen, losses = None, {}, []
for epoch in range(2):
    for batch in loader:
        x = torch.cat([b[1] for b in batch])
        y = torch.cat([b[2] for b in batch]) % 2
        x = (x - x.mean()) / (x.std() + 1e-6)
        if model is None:
            model = torch.nn.Linear(x.shape[1], 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        for key, xs, _ in batch:
            seen[key] = float(xs.sum())
with open(out, "w") as f:
    for key in sorted(seen):
        f.write("%s %.6g\n" % (key, seen[key]))
    f.write("steps %d\n" % len(losses))
