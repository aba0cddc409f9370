"""From a query or a document to a stored plan, and on to its execution; batch runs over query files."""
