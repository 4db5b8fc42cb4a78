"""Co-evolution of model and harness: failure analysis, proposals, and the rounds that turn
approved proposals into a new harness revision, a new dataset and a new release."""
