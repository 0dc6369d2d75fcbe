"""``python -m rewardrouter``: the ``rewardrouter`` command, the same arguments and exit statuses."""

from rewardrouter.cli.main import main

if __name__ == "__main__":
    main()
