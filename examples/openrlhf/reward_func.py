"""An OpenRLHF reward file of your own: it names the router config itself (no environment variable).

    --reward.remote_url /abs/path/examples/openrlhf/reward_func.py
    --data.input_key prompt --data.label_key label

Each row's label column holds a JSON object, ``{"label": "42", "dataset": "openai/gsm8k"}`` (see
README.md): ``label_field`` names its entry that holds the reference answer, and the other entries
become the sample's metadata (``dataset`` picks the route). Change ``label_field`` if your label
objects keep the answer under another entry; ``route="gsm8k"`` would send every row to that route.
"""

from pathlib import Path

from rewardrouter.integrations.openrlhf import RewardFunc

reward_func = RewardFunc(Path(__file__).with_name("router.yaml"), label_field="label")
