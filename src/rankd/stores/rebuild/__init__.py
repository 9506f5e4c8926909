"""PostgreSQL's side of a rebuild: the durable copy read back as Redis wants it.

* ``pages.py``: the periods to rebuild, their entries in composite order as ZADD
  arguments, the exact-times groups, counted runs;
* ``small.py``: many small periods in two queries;
* ``players.py``: players' names and profile segments, and who changed since a time;
* ``slices.py``: a large period cut into composite ranges for the parallel rebuild.
"""
