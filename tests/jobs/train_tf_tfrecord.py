#!/usr/bin/env python3
"""A small TensorFlow job: a tf.data pipeline over TFRecord files (DLIO's
layout: tf.train.Example with `image` bytes and `size` int64), a Keras model
trained with a custom loop. Unmodified as far as dlio-stall is concerned.

usage: train_tf_tfrecord.py DATA_DIR [--batch B] [--readers N] [--parallel N]
              [--prefetch N] [--epochs E] [--steps S] [--compute-ms MS] [--busy]
"""
import argparse
import glob
import os
import time

import tensorflow as tf

FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "size": tf.io.FixedLenFeature([], tf.int64),
}
WIDTH = 256


def parse(record):
    ex = tf.io.parse_single_example(record, FEATURES)
    raw = tf.io.decode_raw(ex["image"], tf.uint8)
    x = tf.cast(tf.reshape(raw[:WIDTH], [WIDTH]), tf.float32) / 255.0
    y = ex["size"] % 10
    return x, y


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
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--readers", type=int, default=1, help="TFRecordDataset num_parallel_reads")
    ap.add_argument("--parallel", type=int, default=1, help="map num_parallel_calls")
    ap.add_argument("--prefetch", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--compute-ms", type=float, default=0)
    ap.add_argument("--busy", action="store_true")
    a = ap.parse_args()

    files = sorted(glob.glob(os.path.join(a.data, "**", "*.tfrecord"), recursive=True))
    if not files:
        raise SystemExit("no .tfrecord files under %s" % a.data)
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=a.readers if a.readers > 1 else None)
    ds = ds.map(parse, num_parallel_calls=a.parallel).batch(a.batch, drop_remainder=True)
    if a.prefetch > 0:
        ds = ds.prefetch(a.prefetch)

    tf.random.set_seed(0)
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(WIDTH,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    opt = tf.keras.optimizers.SGD(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                model.trainable_variables))
        return loss

    step = 0
    t0 = time.time()
    loss = None
    for epoch in range(a.epochs):
        for x, y in ds:
            loss = train_step(x, y)
            accelerator(a.compute_ms, a.busy)
            step += 1
            if a.steps and step >= a.steps:
                break
        if a.steps and step >= a.steps:
            break
    print("trained %d steps in %.2f s, loss %.4f" % (step, time.time() - t0,
                                                    float(loss) if loss is not None else 0.0))


if __name__ == "__main__":
    main()
