"""The command line: the Hydra job and its subcommands."""
