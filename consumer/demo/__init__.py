"""The embedded demo: a local Kafka-protocol broker, a data feed and a simulated annotator.

Nothing in the production service imports this package.
"""

# The share of records the demo asks labels for unless told otherwise (``--query-rate-target``): the
# operator sets the budget, so the demo shows one held from its first record rather than a fresh
# model asking about nearly every record at first (docs: Label budget, "The demo").
QUERY_RATE_TARGET = 0.1
