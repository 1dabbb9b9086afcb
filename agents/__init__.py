"""Learning agents for the ``HetCluster`` ids (``HetCluster-v1`` by default): imitation of the expert
policies and RL fine-tuning."""
