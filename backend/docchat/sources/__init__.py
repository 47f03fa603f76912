"""Sources that feed collections (sync connectors): the port, and the server-folder source."""
