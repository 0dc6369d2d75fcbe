"""The child processes rewardrouter starts, and how it watches over them (see :mod:`.supervisor`)."""
