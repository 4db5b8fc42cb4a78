"""The local planner: a transformers model on this machine, decoded under the tool-call grammar, one chat at a time or many batched."""
