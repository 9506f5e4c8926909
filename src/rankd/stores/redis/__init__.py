"""Redis: every command and script Rankd sends, one module per concern.

The services speak in board periods (``PeriodRef``) and planned targets; these stores turn
them into keys (keys.py), Lua calls (scripts.py) and pipelines, all sent through one
connection (connection.py: the pool, the batcher, the NOSCRIPT retry; url.py reads the
URL). Every read is one round trip; every submit is one pipeline for all its windows.
Connection failures leave here as ``Unavailable`` (503: retry), so nothing above this
package knows the driver. ``stores.RedisStores`` holds one object per concern; each service
takes the ones it uses.
"""
