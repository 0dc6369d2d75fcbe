"""The ``process`` executor: worker processes forked from a warm template, with real deadlines."""
