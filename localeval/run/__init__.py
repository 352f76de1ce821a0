"""The Run layer: planned (case, metric) tasks measured by an executor, journaled, reported.

``runner`` (``evaluate``), ``execution`` (the executor seam, threads), ``ray_executor``
(Ray actors), ``schedule`` (prefix order, groups), ``panel`` (which metric asks which
judge), ``journal``, ``folders`` (a run's folder: created, found), ``events``, ``inflight`` (calls in flight and Ctrl-C).
"""
