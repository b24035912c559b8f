"""Selection by gradients of the clipped least-squares loss: private Frank-Wolfe and peeling.

Each method lives in its own module next to its privacy statement; :mod:`.rows` computes
the loss's gradient as a sum over the rows (in memory or over a Dask DataFrame's partitions).
"""
