"""Embedded Redis, PostgreSQL and NATS (JetStream) servers for ``rankd serve`` and the tests.

Each server is a real child process, listening on 127.0.0.1 only, with its state under one
data directory::

    <data_dir>/redis      Redis AOF files + redis.log
    <data_dir>/postgres   PostgreSQL data directory (PGDATA) + postgres.log
    <data_dir>/nats       nats.conf, JetStream store (js/) + nats.log

Data survives ``stop()``/``start()`` with the same data dir. The servers are configured for
durability rather than raw speed, because rankd acknowledges writes to its clients (details
in each server's module): Redis appends every write to its AOF and fsyncs it every second,
PostgreSQL commits synchronously, and JetStream fsyncs each message before acking it.

The package is split by concern: :mod:`.process_tree` finds and kills a server's process
tree; :mod:`.process` holds what all three servers share (the child process, pidfiles,
orphan reclaim, the atexit stop); :mod:`.redis_server`, :mod:`.postgres_server` and
:mod:`.nats_server` one server each (and their nodes in a cluster); :mod:`.lifecycle` starts
and stops them together, :mod:`.topology` as a Redis Cluster or Sentinel group with a
three-node JetStream; :mod:`.supervisor` restarts one that dies; and :mod:`.startup` decides,
for a ``rankd`` command, where its services are and starts them if it must.

Typical use::

    with start_embedded(Path(".rankd")) as servers:
        print(servers.redis_url, servers.postgres_url, servers.nats_url)
"""

from __future__ import annotations

from rankd.embedded.lifecycle import EmbeddedServers, start_all, start_embedded, stop_all
from rankd.embedded.nats_server import NatsServer, find_nats_server
from rankd.embedded.ports import free_port
from rankd.embedded.postgres_server import PostgresServer, find_postgres_bin_dir
from rankd.embedded.process import EmbeddedServerError, ServerProcess
from rankd.embedded.redis_server import RedisServer, find_redis_server

__all__ = [
    "EmbeddedServerError",
    "EmbeddedServers",
    "NatsServer",
    "PostgresServer",
    "RedisServer",
    "ServerProcess",
    "find_nats_server",
    "find_postgres_bin_dir",
    "find_redis_server",
    "free_port",
    "start_all",
    "start_embedded",
    "stop_all",
]
