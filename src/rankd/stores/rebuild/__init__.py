"""PostgreSQL's side of a rebuild: the durable copy read back as Redis wants it.

* ``pages.py``: the periods to rebuild, their entries in composite order as ZADD
  arguments, the exact-times groups, counted runs, names and profile segments;
* ``slices.py``: a large period cut into composite ranges for the parallel rebuild.
"""
