"""A TensorFlow tf.function (matmul + tanh) loop for SECONDS (default 3): the
framework workload of test_dwarf_frameworks.sh and tests/bench/frameworks_dwarf.sh."""
import sys, time
import tensorflow as tf

a = tf.random.normal((256, 256)); b = tf.random.normal((256, 256))


@tf.function
def step(x, y):
    return tf.tanh(tf.matmul(x, y))


step(a, b)
end = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 3)
while time.monotonic() < end:
    a = step(a, b)
