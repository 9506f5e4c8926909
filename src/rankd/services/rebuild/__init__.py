"""Redis rebuilt from the durable copy in PostgreSQL, in one place:

* ``rebuilder.py``: a rebuild (a whole Redis, a board, a window, a period, or only the
  periods whose keys are gone) under the apply lock, and the order of the loads;
* ``selection.py``: what it puts back: the periods Redis serves, their bans and holds;
* ``small.py``: many small periods, a batch per query and round trip;
* ``one_period.py``: one large period, its shards staged and swapped in turn;
* ``parallel.py``: one large period by several streams at once (RANKD_REBUILD_STREAMS);
* ``restart.py``: a restarted Redis or service brought back to the log's position;
* ``repairs.py``: a period whose rebuild died midway, rebuilt again without a person.

PostgreSQL's side (the pages read) is stores/rebuild/, Redis's (the bulk transfer, the
staging keys and the swap) stores/redis/bulk.py and staging.py.
"""

from rankd.services.rebuild.rebuilder import Rebuilder as Rebuilder
from rankd.services.rebuild.rebuilder import RebuildReport as RebuildReport
