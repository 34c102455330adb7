"""The steps of the service loop, each an object with one job; the roles (:mod:`consumer.roles`)
assemble them. See ``docs/development.md#architecture`` for the path of a record, a label and a
checkpoint through them."""
