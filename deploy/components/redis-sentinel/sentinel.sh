#!/bin/sh
# A sentinel rewrites its file as it learns the set, so the file is written fresh (to an emptyDir) at each
# start, watching the master the other sentinels name, else redis-0 (a first install). Two of three agree
# the master is down (after 5 s) before one promotes a replica.
set -eu
MASTER="$(redis-cli -h redis-sentinel -p 26379 --raw sentinel get-master-addr-by-name clawbus 2>/dev/null | head -n 1 || true)"
[ -n "$MASTER" ] || MASTER=redis-0.redis
cat > /etc/sentinel/sentinel.conf <<CONF
port 26379
sentinel resolve-hostnames yes
sentinel announce-hostnames yes
sentinel announce-ip $(hostname).redis-sentinel
sentinel monitor clawbus $MASTER 6379 2
sentinel down-after-milliseconds clawbus 5000
sentinel failover-timeout clawbus 60000
sentinel parallel-syncs clawbus 1
CONF
exec redis-server /etc/sentinel/sentinel.conf --sentinel
