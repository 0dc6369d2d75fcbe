"""Package discovery only (everything else is in pyproject.toml).

``conf/`` and ``examples/data/`` stay at the top level of the source tree and are mapped into the
wheel as ``rewardrouter.conf`` and ``rewardrouter.example_data``; automatic discovery cannot see
mapped folders, so they are listed here.
"""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["rewardrouter", "rewardrouter.*"]),
        "rewardrouter.conf",
        "rewardrouter.example_data",
    ]
)
