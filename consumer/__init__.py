"""activestream's service: the Kafka loop around :mod:`learners`, and the command line."""
