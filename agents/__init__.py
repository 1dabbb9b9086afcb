"""Learning agents for ``HetCluster-v0``: imitation of the expert policies and RL fine-tuning."""
