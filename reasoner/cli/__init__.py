"""The `reasoner` command: `run`, `replay`, `workload`, `explain` and the subcommands other
packages register (`serve`).

Layer: the top of the engine; it imports the facade and whatever it reports. Used by nobody
inside the engine.
"""
