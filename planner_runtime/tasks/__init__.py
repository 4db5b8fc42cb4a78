"""Tasks as executable specs: a goal, the state to seed, and checks on the device's end state."""
