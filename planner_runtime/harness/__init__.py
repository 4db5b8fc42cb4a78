"""The harness: everything around the frozen planner — tools, prompts and the episode loop.

What changes between deployments (the tool list, skills, the user's memory) lives here, outside
the model's weights, so one frozen planner serves many phones and users.
"""
