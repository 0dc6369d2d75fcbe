"""A verifiers taskset of the tests' own: one reward, 1.0 for a final reply equal to the answer
(imported only where verifiers is installed)."""

from __future__ import annotations

import verifiers.v1 as vf


class ExactData(vf.TaskData):
    answer: str


class ExactTask(vf.Task[ExactData]):
    @vf.reward(weight=1.0)
    async def exact(self, trace: vf.Trace) -> float:
        return 1.0 if trace.last_reply == self.data.answer else 0.0


class ExactTaskset(vf.Taskset[ExactTask, vf.TasksetConfig]):
    def load(self) -> list[ExactTask]:
        return []
