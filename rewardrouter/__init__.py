"""rewardrouter: declarative, compiled reward routing for RL post-training."""
