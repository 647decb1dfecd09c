"""When a write that lost a race to another writer tries again, insists, or gives up."""

from __future__ import annotations

import asyncio
import random
import time

#: The pauses between attempts to write a file other writers keep changing:
#: the first is short (most races are lost once), then they double up to the longest.
_FIRST_PAUSE = 0.002
_LONGEST_PAUSE = 0.1
#: After this long, a change still losing races holds the other writers back.
_HOLD_BACK_AFTER = 0.25


class Patience:
    """When a write that lost a race tries again, when it insists, and when it gives up.

    Two server processes writing one notebook lose races to each other all
    the time. Each retry waits a little longer than the last, for a random
    part of the pause, so that two losers do not collide again. A loser
    re-reads what the winner wrote, which for a big notebook takes longer
    than the winner's next write: past ``_HOLD_BACK_AFTER`` it holds the
    others back rather than lose for as long as they keep writing. Bounded
    by time, not by count: how many races fit in a second depends on the
    notebook's size and the machine, a caller's patience does not.
    """

    def __init__(self, seconds: float) -> None:
        self.started = time.monotonic()
        self.deadline = self.started + seconds
        self.pause = _FIRST_PAUSE

    def is_wearing_thin(self) -> bool:
        """Whether the change has been trying long enough to hold the other writers back."""
        return time.monotonic() - self.started >= _HOLD_BACK_AFTER

    async def wait_before_retrying(self) -> bool:
        """Pause before the next attempt; False once the deadline has passed."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            return False
        await asyncio.sleep(min(left, random.uniform(0, self.pause)))
        self.pause = min(self.pause * 2, _LONGEST_PAUSE)
        return True
