"""The ``ray`` executor: Ray actors across a cluster, with the process executor's deadlines."""
