"""The trajectory kinds: a conversation's tool use and its length.

``calls`` (``tool_call_format``: each call's arguments against its tool's JSON Schema, BFCL's
checker's strictness on request; ``tool_success``: the share of calls a tool answered without
failing) and ``turns`` (a penalty on turns or tool calls beyond a budget). Each reads the whole
conversation that :mod:`rewardrouter.trajectory` validated.
"""
