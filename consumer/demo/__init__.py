"""The embedded demo: a local Kafka-protocol broker, a data feed and a simulated annotator.

Nothing in the production service imports this package.
"""
