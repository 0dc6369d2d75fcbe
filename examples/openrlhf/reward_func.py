"""An OpenRLHF reward file of your own: another label entry, or a fixed route.

    --remote_rm_url /abs/path/examples/openrlhf/reward_func.py
"""

from pathlib import Path

from rewardrouter.integrations.openrlhf import RewardFunc

reward_func = RewardFunc(Path(__file__).with_name("router.yaml"), label_field="answer")
