"""Every Redis key and channel name clawbus uses, and nothing else spells one.

All names share one configurable prefix (``redis.prefix``, default ``clawbus:``) so several deployments can
share a Redis and an operator can find everything with one ``SCAN MATCH``.

A family whose members come to light only as they are used (run ids a script reads off a lane, channels
heard, keys a SCAN finds) also has ``<family>_prefix()``: its names without the member.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RedisKeys:
    prefix: str = "clawbus:"

    # sessions
    def session(self, session_key: str) -> str:
        """HASH: the session entry."""
        return f"{self.prefix}session:{session_key}"

    def sessions_index(self) -> str:
        """ZSET: every listed session, scored by updatedAt (ms)."""
        return f"{self.prefix}idx:sessions"

    def agent_index(self, agent_id: str) -> str:
        """ZSET: one agent's sessions by updatedAt."""
        return f"{self.prefix}idx:agent:{agent_id}"

    def kind_index(self, kind: str) -> str:
        """ZSET: sessions of one kind (main, group, cron, hook, node, other) by updatedAt."""
        return f"{self.prefix}idx:kind:{kind}"

    def archived_index(self) -> str:
        """ZSET: archived sessions (out of the other indexes), by when they were archived."""
        return f"{self.prefix}idx:archived"

    def session_indexes(self, agent_id: str, kind: str) -> list[str]:
        """The three indexes a session is listed in (all, its agent's, its kind's), in the order the scripts
        that write them take their keys."""
        return [self.sessions_index(), self.agent_index(agent_id), self.kind_index(kind)]

    def children(self, parent_key: str) -> str:
        """SET: the sessions a session spawned (the ``tree`` visibility, without a scan)."""
        return f"{self.prefix}children:{parent_key}"

    def departed(self, parent_key: str) -> str:
        """HASH: the sub-agents a session spawned that their cleanup deleted, child key -> JSON ``{until,
        entry, runs}`` (the entry and run ids it had then), kept until ``until`` (ms) for ``subagents list``;
        the key lapses with the last of them."""
        return f"{self.prefix}departed:{parent_key}"

    def reported(self, parent_key: str) -> str:
        """HASH: the children's reports a session has received (by flow id: what was done with each), so a
        report repeated after a lost worker is applied once."""
        return f"{self.prefix}reported:{parent_key}"

    def yield_reports(self, session_key: str) -> str:
        """LIST: the reports that arrived since the session yielded (``sessions_yield``), in order: the input
        of the run that wakes it."""
        return f"{self.prefix}yield-reports:{session_key}"

    def state_log(self, session_key: str) -> str:
        """STREAM: the session's state changes (docs/contract.md §10, "Change tracking"), one entry per
        ``stateVersion`` (its id ``<version>-0``), about the last 1000 kept, gone 30 days after the last; the
        version itself is the session hash's ``stateVersion``, which outlives the entries."""
        return f"{self.prefix}state-log:{session_key}"

    def session_prefix(self) -> str:
        return f"{self.prefix}session:"

    def watchers(self, target_key: str) -> str:
        """HASH: the sessions watching one session (docs/contract.md §10, "Watches and notices"), watcher
        key -> its cursor ``<lastSeen>,<notified>,<material>`` (versions of the target's ``stateVersion``),
        gone 30 days after its last change, and with the target."""
        return f"{self.prefix}watchers:{target_key}"

    def watchers_prefix(self) -> str:
        return f"{self.prefix}watchers:"

    def notices(self, watcher_key: str) -> str:
        """HASH: a session's pending stale-state notices, one per watched session (target key -> the
        version the notice says to reconcile from), until the run that took them in commits."""
        return f"{self.prefix}notices:{watcher_key}"

    def notices_prefix(self) -> str:
        return f"{self.prefix}notices:"

    def session_id(self, session_id: str) -> str:
        """STRING: sessionId -> session key."""
        return f"{self.prefix}sid:{session_id}"

    def labels(self, agent_id: str) -> str:
        """HASH: label -> session key, per agent (labels are unique within an agent)."""
        return f"{self.prefix}labels:{agent_id}"

    def archive_due(self) -> str:
        """ZSET: ended sub-agent sessions, scored by when they are to be archived."""
        return f"{self.prefix}archive:due"

    def archive_taken(self, sweep_id: str) -> str:
        """STRING: the sessions one archive sweep took off ``archive:due`` (JSON), for a few minutes: the
        same call sent again after its reply was lost answers with them, not with none."""
        return f"{self.prefix}archive:taken:{sweep_id}"

    # A2A (docs/contract.md §12)
    def a2a_tasks(self, agent_id: str, owner: str) -> str:
        """ZSET: the A2A tasks (run ids) one token's principal gave one agent, by creation (ms): ListTasks,
        and whose a task is."""
        return f"{self.prefix}a2a-tasks:{agent_id}:{owner}"

    def a2a_push(self, run_id: str) -> str:
        """HASH: a task's push-notification configs, config id -> the config (JSON)."""
        return f"{self.prefix}a2a-push:{run_id}"

    def a2a_push_state(self, run_id: str) -> str:
        """HASH: what became of each config's notification, config id -> {status, attempts, error} (JSON)."""
        return f"{self.prefix}a2a-push-state:{run_id}"

    def a2a_push_lease(self, run_id: str) -> str:
        """STRING: the attempt sending a task's notifications now (its owner), for a minute at most."""
        return f"{self.prefix}a2a-push-lease:{run_id}"

    def a2a_push_due(self) -> str:
        """ZSET: tasks with a notification still to send, by when to look at them next (ms)."""
        return f"{self.prefix}a2a-push-due"

    def thread_binding(self, channel: str, thread_id: str) -> str:
        """HASH: a chat thread bound to a sub-agent's session; forgotten a while after its last message."""
        return f"{self.prefix}thread:{channel}:{thread_id}"

    def transcript(self, session_key: str) -> str:
        """STREAM: the session's messages, one JSON document per entry."""
        return f"{self.prefix}transcript:{session_key}"

    def cold(self, session_key: str) -> str:
        """HASH: the session's cold transcript: ``count`` (its messages moved out of Redis, the file's
        first lines), ``agentId`` and ``sessionId`` (its file), ``moving`` (a move's intent, JSON, until
        the move is recorded)."""
        return f"{self.prefix}cold:{session_key}"

    def cold_lease(self, session_key: str) -> str:
        """STRING: the move of the session's older messages running now (its owner), renewed while it runs."""
        return f"{self.prefix}cold-lease:{session_key}"

    def cold_retry(self, session_key: str) -> str:
        """HASH (PX, an hour): the session's moves failing on the cold store: ``failures`` in a row and
        ``retryAt`` (ms), before which none is tried; gone once a move succeeds."""
        return f"{self.prefix}cold-retry:{session_key}"

    def cold_idle_cursor(self) -> str:
        """STRING: the updatedAt (ms) up to which idle sessions were moved out whole."""
        return f"{self.prefix}cold:idle-cursor"

    # runs and lanes
    def run(self, run_id: str) -> str:
        """HASH: one run; expires ``runs.retentionHours`` after it ends."""
        return self.run_prefix() + run_id

    def run_prefix(self) -> str:
        return f"{self.prefix}run:"

    def cancel_channel(self) -> str:
        """Pub/sub channel: the id of a running run that was cancelled, for the worker holding its lease."""
        return f"{self.prefix}cancel"

    def session_runs(self, session_key: str) -> str:
        """STREAM: the session's runs as they are accepted (``runId``), for a client following the session."""
        return f"{self.prefix}session-runs:{session_key}"

    def run_events(self, run_id: str) -> str:
        """STREAM: the run's progress events (queued, started, ended)."""
        return self.run_events_prefix() + run_id

    def run_events_prefix(self) -> str:
        return f"{self.prefix}run-events:"

    def folded(self, run_id: str) -> str:
        """STRING: the collect run a message's run was folded into instead of being queued (a few minutes:
        a repeat of its accept answers the same)."""
        return f"{self.prefix}folded:{run_id}"

    def absorbed(self, run_id: str) -> str:
        """LIST: the steer runs a running run took in (their messages reached its next model step)."""
        return f"{self.prefix}absorbed:{run_id}"

    def waiters(self, run_id: str) -> str:
        """SET: runs suspended until this run ends (an agent's sessions_send with a wait)."""
        return f"{self.prefix}waiters:{run_id}"

    def run_done_channel(self, run_id: str) -> str:
        """Pub/sub channel published in the same atomic step as the run's terminal state."""
        return self.run_done_channel_prefix() + run_id

    def run_done_channel_prefix(self) -> str:
        return f"{self.prefix}run-done:"

    def waiter_channel(self, instance_id: str) -> str:
        """Pub/sub channel an API process stays subscribed to, so its connection never leaves pub/sub mode."""
        return f"{self.prefix}waits:{instance_id}"

    def lane(self, session_key: str) -> str:
        """LIST: run ids of one session in acceptance order; the head is the one that may execute."""
        return self.lane_prefix() + session_key

    def lane_prefix(self) -> str:
        return f"{self.prefix}lane:"

    def lease(self, session_key: str) -> str:
        """HASH: who executes the lane's head now (runId, owner, attempt, token, expiresAt)."""
        return self.lease_prefix() + session_key

    def lease_prefix(self) -> str:
        return f"{self.prefix}lease:"

    def lanes_due(self) -> str:
        """ZSET: session keys with pending runs, scored by when the reaper should look at them."""
        return f"{self.prefix}lanes:due"

    def subagent_gate(self) -> str:
        """ZSET: the sub-agent runs running now across the fleet (``maxConcurrent``), by lease expiry."""
        return f"{self.prefix}gate:subagents:running"

    def subagent_gate_queue(self) -> str:
        """ZSET: the sub-agent runs waiting for a place at the gate, in arrival order."""
        return f"{self.prefix}gate:subagents:waiting"

    def fence_counter(self) -> str:
        """STRING: source of fencing tokens; every claim takes a new one."""
        return f"{self.prefix}seq:fence"

    # flows and deliveries
    def flow(self, flow_id: str) -> str:
        """HASH: a sessions_send exchange (its id is the primary run's id)."""
        return f"{self.prefix}flow:{flow_id}"

    def flows_due(self) -> str:
        """ZSET: flows that must be advanced by a time (a step's deadline, or now after a run ended)."""
        return f"{self.prefix}flows:due"

    def delivery(self, delivery_id: str) -> str:
        """HASH: one outbound message and its delivery state."""
        return f"{self.prefix}delivery:{delivery_id}"

    def outbox(self, channel: str, to: str) -> str:
        """STREAM: messages a local adapter delivered (webchat: per recipient; log: per session)."""
        return f"{self.prefix}outbox:{channel}:{to}"

    # fleet
    def metrics_runs_created(self) -> str:
        """HASH: runs accepted, by kind (for /metrics: counts of the whole fleet, not of one process)."""
        return f"{self.prefix}metrics:runs:created"

    def metrics_runs_finished(self) -> str:
        """HASH: runs ended, by ``<kind>:<status>``."""
        return f"{self.prefix}metrics:runs:finished"

    def metrics_deliveries(self) -> str:
        """HASH: announce deliveries that reached a final state, by state."""
        return f"{self.prefix}metrics:deliveries"

    def metrics_messages_dropped(self) -> str:
        """HASH: chat messages a full session queue dropped, by ``messages.queue.drop`` policy."""
        return f"{self.prefix}metrics:messages:dropped"

    def metrics_flows_ended(self) -> str:
        """HASH: flows that ended, by reason (``completed``, or what cut them short)."""
        return f"{self.prefix}metrics:flows:ended"

    def metrics_cold_moves_failed(self) -> str:
        """STRING: moves to the cold transcript store that failed, fleet-wide, since the deployment began."""
        return f"{self.prefix}metrics:cold-moves:failed"

    def cold_move_failure(self) -> str:
        """HASH: the cold store failing now: the last failure's ``error`` and ``at`` (ms), ``since`` (ms, the
        first failure since a move last succeeded); gone once one succeeds."""
        return f"{self.prefix}cold-moves:failing"

    def runs_progress(self) -> str:
        """ZSET: runs under a claim, scored by when each last made progress (ms: claimed, an event, a
        memoized step; a lease renewal adds a run it lacks): the stall watchdog's candidates, oldest first."""
        return f"{self.prefix}runs:progress"

    def runs_stalled(self) -> str:
        """HASH: runs the reaper found stalled (their lease renewed, no progress for ``runs.stallSeconds``):
        runId -> JSON ``{sessionKey, since, owner, attempt}``; a run leaves it at its progress or its end."""
        return f"{self.prefix}runs:stalled"

    def metrics_run_stalls(self) -> str:
        """STRING: runs found stalled, fleet-wide, since the deployment began (each stall counted once)."""
        return f"{self.prefix}metrics:runs:stalls"

    def reaper_ran(self) -> str:
        """STRING: when the reaper last ran (ms): beat and a worker are both doing their part."""
        return f"{self.prefix}reaper:ran"

    def maintenance_turn(self, task: str) -> str:
        """STRING with a time to live: a maintenance pass (the reaper's, the archive sweep's) is under way or
        just ran; passes that queued up behind busy workers meanwhile skip."""
        return f"{self.prefix}maintenance:{task}:turn"

    def redis_server(self) -> str:
        """STRING: the run id of the Redis server (``INFO server``) the reaper last saw: another one means
        Redis restarted or failed over, and queue messages may be lost."""
        return f"{self.prefix}reaper:redis-server"

    def reaped_lanes(self, pass_id: str) -> str:
        """STRING: the lane heads one reaper pass found stalled and marked dispatched again (JSON), for a
        few minutes: the same call sent again after its reply was lost answers with them, not with none."""
        return f"{self.prefix}reaper:lanes:{pass_id}"

    def reaped_flows(self, pass_id: str) -> str:
        """STRING: the flows one reaper pass found due (JSON), for a few minutes: the same call sent again
        after its reply was lost answers with them, not with none."""
        return f"{self.prefix}reaper:flows:{pass_id}"

    # model traffic: one set of keys per model (``<provider>/<model>``), written by scripts only
    def traffic(self, model_ref: str) -> list[str]:
        """The keys of one model's admission, in the order its scripts take them: ZSET calls started in
        the last minute (ticket -> ms); HASH their tokens (ticket -> reserved, then used); ZSET calls in
        flight (ticket -> when their hold lapses); STRING the cooldown (its TTL); ZSET calls waiting
        (waiter -> class and fair-share order); ZSET when each waiter lapses unless it asks again; HASH
        when each began waiting; HASH each flow's place in its fair share; HASH the model's counters,
        learned limits and ticket sequence."""
        base = f"{self.prefix}traffic:{model_ref}:"
        parts = ("window", "tokens", "inflight", "cooldown", "queue", "queue-expiry", "queue-since", "fair")
        return [base + part for part in parts] + [base + "state"]

    def traffic_models(self) -> str:
        """SET: the models that have had traffic, for the fleet view."""
        return f"{self.prefix}traffic:models"

    # idempotency
    def idempotency(self, principal: str, key_digest: str) -> str:
        """STRING (EX gateway.idempotency.ttlHours): what an ``Idempotency-Key`` of one token was first used
        for (``<request fingerprint>|<ms>``); the runs that request made have ids derived from it."""
        return f"{self.prefix}idem:{principal}:{key_digest}"

    def idempotency_answer(self, principal: str, key_digest: str) -> str:
        """STRING (EX as its key): the answer the key's request first gave (JSON), given again to repeats."""
        return f"{self.prefix}idem-answer:{principal}:{key_digest}"

    # budgets
    def budget_spent(self, agent_id: str, day: str) -> str:
        """HASH: an agent's model spend on one UTC day (``usdMicros``, ``tokens``), reservations included."""
        return f"{self.prefix}budget:spent:{agent_id}:{day}"

    def budget_override(self, agent_id: str) -> str:
        """HASH: an agent's budget as an owner set it at runtime (``dailyUsd``, ``dailyTokens``; ``none``:
        unlimited), over the configuration's."""
        return f"{self.prefix}budget:override:{agent_id}"

    def tree_spent(self, root_key: str) -> str:
        """HASH: what a root session's sub-agent tree spent (``usdMicros``, ``tokens``)."""
        return f"{self.prefix}budget:tree:{root_key}"

    def chain_sends(self, chain_id: str) -> str:
        """STRING: the sends and spawns a chain made in its window (``maxChainSends``); expires with it."""
        return f"{self.prefix}chain:sends:{chain_id}"

    def chain_spent(self, chain_id: str) -> str:
        """HASH: what a chain of agent work spent, every run of it (``usdMicros``, ``tokens``)."""
        return f"{self.prefix}budget:chain:{chain_id}"

    def budget_holds(self) -> str:
        """ZSET: the reservations of calls in flight, by when each lapses (its worker died) unless settled."""
        return f"{self.prefix}budget:holds"

    def budget_hold_amounts(self) -> str:
        """HASH: each reservation's ``usdMicros|tokens|<day key>|<tree key>``, to settle or give back."""
        return f"{self.prefix}budget:hold-amounts"

    def trees_active(self) -> str:
        """ZSET: root sessions whose tree spent, by when it last did (ms)."""
        return f"{self.prefix}budget:trees"

    def worker_heartbeat(self, hostname: str) -> str:
        """STRING with TTL: a worker is alive and consuming."""
        return self.worker_heartbeat_prefix() + hostname

    def worker_heartbeat_prefix(self) -> str:
        return f"{self.prefix}worker:"

    def worker_heartbeat_pattern(self) -> str:
        return self.worker_heartbeat_prefix() + "*"

    def pattern(self) -> str:
        """Matches every key of this deployment."""
        return f"{self.prefix}*"
