"""The ``nemo_gym`` kind: a NeMo Gym resources server's ``/verify`` as a term.

``settings`` (what a term's kwargs say) → ``wire`` (a sample as NeMo Gym's verify request, and
back: ``rewardrouter serve --protocol nemo-gym``) → ``server`` (a resources server the router
starts in NeMo Gym's own interpreter; ``launch`` is the script that interpreter runs) →
``kind`` (the request posted through the router's HTTP client).
"""
