"""Connectors between the service's label requests and the tools people label in.

``activestream annotate label-studio`` (:mod:`consumer.annotate.label_studio`) turns each label
request into a Label Studio task and each annotation into a label record.
"""
