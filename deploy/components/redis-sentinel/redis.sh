#!/bin/sh
# Start as the replica of the master the sentinels name. Only when no sentinel names one (a first install)
# does redis-0 start as the master and the others as its replicas: a pod that was the master and comes back
# after a failover must not start as a second master.
set -eu
SELF="$(hostname).redis"
MASTER="$(redis-cli -h redis-sentinel -p 26379 --raw sentinel get-master-addr-by-name clawbus 2>/dev/null | head -n 1 || true)"
set -- --dir /data --appendonly yes --appendfsync everysec --maxmemory 1536mb --maxmemory-policy noeviction \
  --replica-announce-ip "$SELF"
if [ -z "$MASTER" ]; then
  [ "$(hostname)" = "redis-0" ] || set -- "$@" --replicaof redis-0.redis 6379
elif [ "$MASTER" != "$SELF" ]; then
  set -- "$@" --replicaof "$MASTER" 6379
fi
exec redis-server "$@"
