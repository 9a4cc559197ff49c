"""Session transcripts: one Redis stream per session, one JSON message per entry."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from redis import Redis

from shared.models import Message
from shared.store.keys import RedisKeys


class TranscriptStore:
    def __init__(self, client: Redis, keys: RedisKeys) -> None:
        self._redis = client
        self._keys = keys

    def last(
        self, session_key: str, count: int, keep_role: Callable[[str], bool] | None = None, page: int = 200
    ) -> list[Message]:
        """The last ``count`` messages (of the kept roles), oldest first; pages backwards as needed."""
        stream = self._keys.transcript(session_key)
        kept: list[Message] = []
        upper = "+"
        while len(kept) < count:
            wanted = page if keep_role else count - len(kept)
            entries = self._redis.xrevrange(stream, max=upper, count=wanted)
            for _id, fields in entries:
                message = Message.model_validate_json(fields["m"])
                if keep_role is None or keep_role(message.role):
                    kept.append(message)
                    if len(kept) == count:
                        break
            if len(entries) < wanted:
                break
            upper = f"({entries[-1][0]}"
        kept.reverse()
        return kept

    def tails(self, session_keys: Sequence[str], count: int) -> list[list[Message]]:
        pipe = self._redis.pipeline(transaction=False)
        for session_key in session_keys:
            pipe.xrevrange(self._keys.transcript(session_key), count=count)
        return [
            [Message.model_validate_json(fields["m"]) for _id, fields in reversed(entries)]
            for entries in pipe.execute()
        ]

    def all(self, session_key: str) -> list[Message]:
        return [
            Message.model_validate_json(fields["m"])
            for _id, fields in self._redis.xrange(self._keys.transcript(session_key))
        ]

    def length(self, session_key: str) -> int:
        return int(self._redis.xlen(self._keys.transcript(session_key)))
