"""The review app: the review queue in a browser (queue, item pages with the episode, decision
controls and keyboard shortcuts), served locally by ``planner-agent review serve``."""
