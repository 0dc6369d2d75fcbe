"""The ``verifiers`` kind: a verifiers (Prime Intellect) taskset's rewards and judges as a term.

``settings`` (what a term's kwargs say) → ``rollout`` (a sample as the task and trace verifiers
scores) → ``kind`` (the taskset resolved when the router compiles, each sample scored with
``task.score``). verifiers itself is imported only when a config names the kind.
"""
